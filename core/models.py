"""Pydantic models at the boundaries: domain pack files (pack.yaml, metrics.yaml, rule front matter).

Everything read from a user's file is validated here with extra="forbid", so that a typo in a
field name is an error naming the file and field, not a silently ignored key.
"""
from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_.\-]*$"
COLUMN_REF = r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class LoaderSpec(Strict):
    """How the pack's database is built: a Python entry point `module:function(engine, schema, **options)`."""

    entry: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    options: dict[str, Any] = Field(default_factory=dict, description="defaults passed to the loader (size, seed, path)")


class DimensionType(str, Enum):
    temporal = "temporal"
    spatial = "spatial"
    categorical = "categorical"
    numeric = "numeric"


class DimensionSpec(Strict):
    """A column usable as filter/grouping dimension, declared in pack.yaml."""

    column: str = Field(pattern=COLUMN_REF, description="table.column")
    type: DimensionType
    label: str = Field(min_length=2, description="natural-language name used in questions")


class PackSpec(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(min_length=10)
    db_schema: str = Field(alias="schema", pattern=r"^[a-z_][a-z0-9_]*$", description="Postgres schema of the data")
    dialect: Literal["postgres"] = "postgres"
    loader: LoaderSpec | None = Field(None, description="absent: the schema already exists (a team's own warehouse)")
    database_env: str | None = Field(
        None, pattern=r"^[A-Z_][A-Z0-9_]*$",
        description="name of the environment variable holding the SQLAlchemy URL of the pack's own database "
                    "(a secret: read at run time, never stored or printed); absent: DIBENCH_DATABASE_URL")
    metrics: str = "metrics.yaml"
    rules: str = "rules"
    dimensions: list[DimensionSpec] = Field(min_length=1)
    entity_labels: dict[str, str] = Field(default_factory=dict, description="table -> natural name (e.g. tickets: support tickets)")


# The units whose values the question templates write in a form of their own ("40%", "24 hours");
# a metric may name any other unit (EUR, ms, tickets), written after the number.
KNOWN_UNITS = ("percent", "count", "hours", "days", "currency", "ratio", "score")
# Any unit a catalog names: one line of text, at most 40 characters.
Unit = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
                            description=f"any unit (EUR, ms, tickets); {', '.join(KNOWN_UNITS)} have a "
                                        "written form of their own")]


class DerivedSpec(Strict):
    """A metric computed from other metrics (as MetricFlow's derived metrics): `expression` over the
    names of `inputs`, each input a component metric computed under its own policy."""

    expression: str = Field(min_length=1, description="SQL expression over the input names, e.g. 0.5 * sat + 0.1 * aov")
    inputs: dict[str, str] = Field(min_length=1, description="name in the expression -> component metric id")

    @field_validator("inputs")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        for name, mid in v.items():
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                raise ValueError(f"input name {name!r} must be a lower-case identifier")
            if not re.fullmatch(ID_PATTERN, mid):
                raise ValueError(f"input {name!r}: {mid!r} is not a metric id")
        return v


class MetricSpec(Strict):
    id: str = Field(pattern=ID_PATTERN)
    name: str = Field(min_length=3)
    tier: Literal[1, 2, 3] = Field(description="1 base, 2 derived, 3 composite/strategic")
    description: str = Field(min_length=10)
    formula: str = Field(min_length=5, description="the formula in words")
    sql: str | None = Field(None, min_length=10,
                            description="one SELECT returning one column `value`; uses :start_date, :end_date "
                                        "(absent for a derived metric)")
    derived: DerivedSpec | None = Field(None, description="a metric computed from component metrics (no sql)")
    time_column: str | None = Field(None, description="alias.column the time window filters on (not for derived)")
    dimensions: list[str] = Field(default_factory=list, description="table.column dimensions the metric may be sliced by")
    params: dict[str, float | int | str] = Field(default_factory=dict, description="named non-filter parameters and defaults")
    components: list[str] = Field(default_factory=list, description="ids of component metrics (composites)")
    unit: Unit
    rounding: int = Field(2, ge=0, le=6)
    higher_is_better: bool = True
    target: float | None = Field(None, description="business target, used for threshold-crossing tasks")
    as_of: str | None = Field(None, min_length=10, max_length=300,
                              description="for a metric whose value is read on one day of the period (a running "
                                          "total): what a value is, shown with the task's answer format")

    @field_validator("dimensions")
    @classmethod
    def _dims(cls, v: list[str]) -> list[str]:
        for d in v:
            if not re.fullmatch(COLUMN_REF, d):
                raise ValueError(f"dimension {d!r} is not table.column")
        return v

    @model_validator(mode="before")
    @classmethod
    def _derived_components(cls, data: Any) -> Any:
        # A derived metric's components are its inputs (written once, in `derived.inputs`).
        if isinstance(data, dict) and isinstance(data.get("derived"), dict) and not data.get("components"):
            inputs = data["derived"].get("inputs")
            if isinstance(inputs, dict):
                data = {**data, "components": list(dict.fromkeys(inputs.values()))}
        return data

    @model_validator(mode="after")
    def _sql_or_derived(self) -> "MetricSpec":
        if self.derived is None and (self.sql is None or self.time_column is None):
            raise ValueError("a metric needs `sql` and `time_column` (or `derived` with expression and inputs)")
        if self.derived is not None and (self.sql is not None or self.time_column is not None):
            raise ValueError("a derived metric has no `sql` or `time_column`: its components carry them")
        return self

    @property
    def template(self) -> str:
        """The SQL template of a metric that has one (not a derived metric)."""
        if self.sql is None:
            raise ValueError(f"metric {self.id} is derived: it has no SQL template of its own")
        return self.sql

    @property
    def time_ref(self) -> str:
        if self.time_column is None:
            raise ValueError(f"metric {self.id} is derived: it has no time column of its own")
        return self.time_column


class MetricCatalog(Strict):
    metrics: list[MetricSpec] = Field(min_length=1)


class RuleType(str, Enum):
    definitional = "definitional"
    exclusionary = "exclusionary"
    temporal = "temporal"
    conditional = "conditional"
    privacy = "privacy"
    override = "override"


class AppliesWhen(Strict):
    """Conditional applicability: the rule applies only where dimension = value."""

    dimension: str = Field(pattern=COLUMN_REF)
    value: str | int | float | bool


class _EffectBase(Strict):
    metric: str = Field(pattern=ID_PATTERN)
    applies_when: AppliesWhen | None = None
    from_date: dt.date | None = Field(None, description="the operation applies to rows on/after this date (temporal)")
    after: str | None = Field(None, pattern=ID_PATTERN,
                              description="id of a rule whose effect on the same metric this one applies after: "
                                          "two effects that do not commute then compose in that order")
    note: str | None = None


class WhereEffect(_EffectBase):
    """Add a WHERE predicate: only rows satisfying it count."""

    op: Literal["where"]
    predicate: str


class ExcludeEffect(_EffectBase):
    """Exclude rows matching the predicate (adds WHERE NOT predicate)."""

    op: Literal["exclude"]
    predicate: str


class HavingEffect(_EffectBase):
    op: Literal["having"]
    predicate: str


class ThresholdEffect(_EffectBase):
    """Change the value of a named metric parameter (e.g. :sla_hours 24 -> 48)."""

    op: Literal["threshold"]
    param: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    value: float | int | str


class WeightEffect(_EffectBase):
    """Weight each row by an expression: COUNT/SUM/AVG become weighted sums."""

    op: Literal["weight"]
    weight: str


class AdjustEffect(_EffectBase):
    """Row-level value adjustment: inside the metric's value expression, every reference to `column`
    (alias.column as the metric SQL writes it) becomes `expression`, row by row where the guards
    (applies_when, from_date) hold. E.g. freight to the USA reported net of a 10% surcharge:
    column o.freight, expression o.freight / 1.1, applies_when {customers.country: USA}."""

    op: Literal["adjust"]
    column: str = Field(pattern=r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$", description="alias.column in the metric SQL")
    expression: str


class OverrideEffect(_EffectBase):
    """Replace the metric's value expression (formula override)."""

    op: Literal["override"]
    expression: str


class SuppressEffect(_EffectBase):
    """Post-aggregation suppression: groups with fewer than min_n rows are not reported."""

    op: Literal["suppress"]
    min_n: int = Field(ge=2)
    count: str = Field("COUNT(*)", description="what is counted, e.g. COUNT(DISTINCT t.customer_id)")


Effect = Annotated[
    WhereEffect | ExcludeEffect | HavingEffect | ThresholdEffect | AdjustEffect | WeightEffect | OverrideEffect
    | SuppressEffect,
    Field(discriminator="op"),
]


class RuleFrontMatter(Strict):
    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=5)
    version: str = Field(min_length=1)
    effective_date: dt.date
    owner: str = Field(min_length=2)
    rule_type: RuleType
    effects: list[Effect] | None = Field(None, description="structured SQL operations; extracted by LLM when absent")
    supersedes: str | None = Field(None, pattern=ID_PATTERN, description="id of the rule this document replaces "
                                   "where both modify the same metric (resolves a policy conflict)")
    tags: list[str] = Field(default_factory=list)

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, (int, float)) else v

    @model_validator(mode="after")
    def _type_consistency(self) -> "RuleFrontMatter":
        if self.effects:
            if self.rule_type is RuleType.conditional and not any(e.applies_when for e in self.effects):
                raise ValueError("a conditional rule needs applies_when on at least one effect")
            if self.rule_type is RuleType.temporal and not any(e.from_date for e in self.effects):
                raise ValueError("a temporal rule needs from_date on at least one effect")
            if self.rule_type is RuleType.privacy and not any(e.op == "suppress" for e in self.effects):
                raise ValueError("a privacy rule needs a suppress effect")
        return self


class LLMEffects(Strict):
    """What an LLM extractor must return for one rule document."""

    effects: list[Effect]
