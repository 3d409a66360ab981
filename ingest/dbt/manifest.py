"""A typed view of the parts of a dbt `semantic_manifest.json` the importer reads.

Only what the translation needs is kept; a missing required field is one `DbtManifestError`
naming the semantic model or metric and the field."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dibench.core.errors import DibenchError


class DbtManifestError(DibenchError):
    """The semantic manifest cannot be read or lacks a field the importer needs."""

    hint = "give the semantic_manifest.json that `dbt parse` writes to target/"


@dataclass(frozen=True)
class Entity:
    name: str
    type: str  # primary, unique, foreign, natural
    column: str  # the entity's expr (a column of the model's table)


@dataclass(frozen=True)
class Dimension:
    name: str
    type: str  # categorical, time
    expr: str | None
    label: str | None
    description: str | None
    granularity: str | None


@dataclass(frozen=True)
class Measure:
    name: str
    agg: str
    expr: str | None
    description: str | None
    agg_params: dict[str, Any] | None
    non_additive: dict[str, Any] | None
    agg_time_dimension: str | None


@dataclass(frozen=True)
class SemanticModel:
    name: str
    table: str
    schema: str
    description: str | None
    agg_time_dimension: str | None
    entities: tuple[Entity, ...]
    dimensions: tuple[Dimension, ...]
    measures: tuple[Measure, ...]

    def dimension(self, name: str) -> Dimension | None:
        return next((d for d in self.dimensions if d.name == name), None)

    def entity(self, name: str) -> Entity | None:
        return next((e for e in self.entities if e.name == name), None)

    @property
    def primary(self) -> Entity | None:
        return next((e for e in self.entities if e.type in ("primary", "unique", "natural")), None)


@dataclass(frozen=True)
class MetricInput:
    """A measure or metric a metric is computed from, with its own filter, alias and offset."""

    name: str
    filters: tuple[str, ...]
    alias: str | None
    offset: dict[str, Any] | None
    join_to_timespine: bool = False
    fill_nulls_with: Any = None


@dataclass(frozen=True)
class Metric:
    name: str
    type: str
    label: str | None
    description: str | None
    filters: tuple[str, ...]
    measure: MetricInput | None
    numerator: MetricInput | None
    denominator: MetricInput | None
    expr: str | None
    inputs: tuple[MetricInput, ...]
    cumulative: dict[str, Any] | None
    meta: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Manifest:
    models: tuple[SemanticModel, ...]
    metrics: tuple[Metric, ...]

    def measure(self, name: str) -> tuple[SemanticModel, Measure] | None:
        for m in self.models:
            for x in m.measures:
                if x.name == name:
                    return m, x
        return None

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)


def _need(d: dict[str, Any], key: str, where: str) -> Any:
    if not isinstance(d, dict) or d.get(key) in (None, ""):
        raise DbtManifestError(f"{where}: missing field {key!r}")
    return d[key]


def _filters(f: Any) -> tuple[str, ...]:
    if not f:
        return ()
    return tuple(str(w["where_sql_template"]) for w in f.get("where_filters") or [] if w.get("where_sql_template"))


def _input(d: dict[str, Any] | None, where: str) -> MetricInput | None:
    if not d:
        return None
    return MetricInput(name=_need(d, "name", where), filters=_filters(d.get("filter")), alias=d.get("alias"),
                       offset=d.get("offset_window") or d.get("offset_to_grain"),
                       join_to_timespine=bool(d.get("join_to_timespine")), fill_nulls_with=d.get("fill_nulls_with"))


def _model(d: dict[str, Any]) -> SemanticModel:
    name = _need(d, "name", "semantic model")
    where = f"semantic model {name}"
    rel = _need(d, "node_relation", where)
    ents = tuple(Entity(_need(e, "name", where), _need(e, "type", where), e.get("expr") or e["name"])
                 for e in d.get("entities") or [])
    dims = tuple(Dimension(_need(x, "name", where), _need(x, "type", where), x.get("expr"), x.get("label"),
                           x.get("description"), (x.get("type_params") or {}).get("time_granularity"))
                 for x in d.get("dimensions") or [])
    meas = tuple(Measure(_need(x, "name", where), _need(x, "agg", where), x.get("expr"), x.get("description"),
                         x.get("agg_params"), x.get("non_additive_dimension"), x.get("agg_time_dimension"))
                 for x in d.get("measures") or [])
    return SemanticModel(name=name, table=_need(rel, "alias", f"{where}: node_relation"),
                         schema=_need(rel, "schema_name", f"{where}: node_relation"),
                         description=d.get("description"),
                         agg_time_dimension=(d.get("defaults") or {}).get("agg_time_dimension"),
                         entities=ents, dimensions=dims, measures=meas)


def _metric(d: dict[str, Any]) -> Metric:
    name = _need(d, "name", "metric")
    where = f"metric {name}"
    tp = d.get("type_params") or {}
    return Metric(name=name, type=_need(d, "type", where), label=d.get("label"), description=d.get("description"),
                  filters=_filters(d.get("filter")), measure=_input(tp.get("measure"), where),
                  numerator=_input(tp.get("numerator"), where), denominator=_input(tp.get("denominator"), where),
                  expr=tp.get("expr"), inputs=tuple(i for x in tp.get("metrics") or []
                                                     if (i := _input(x, where)) is not None),
                  cumulative=tp.get("cumulative_type_params") or (
                      {"window": tp.get("window"), "grain_to_date": tp.get("grain_to_date")}
                      if d.get("type") == "cumulative" else None),
                  meta=((d.get("config") or {}).get("meta") or {}), raw=d)


def parse_manifest(data: dict[str, Any]) -> Manifest:
    if not isinstance(data, dict) or not isinstance(data.get("semantic_models"), list):
        raise DbtManifestError("not a semantic manifest: no list `semantic_models`")
    return Manifest(models=tuple(_model(m) for m in data["semantic_models"]),
                    metrics=tuple(_metric(m) for m in data.get("metrics") or []))


def read_manifest(path: str | Path) -> Manifest:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DbtManifestError(f"{p}: cannot read: {exc.strerror}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DbtManifestError(f"{p}: not JSON: {exc}") from exc
    return parse_manifest(data)
