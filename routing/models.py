"""Boundary models of the routing line: source units, contracts, routes (pydantic, extra=forbid)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Behaviour = Literal["single", "parallel", "sequential", "exploratory", "interactive"]
BEHAVIOURS: tuple[Behaviour, ...] = ("single", "parallel", "sequential", "exploratory", "interactive")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------------------ units
class SourceUnit(Strict):
    """One gold query of the release, executed: the atom every contract is made of."""

    unit_id: str
    catalog: str
    database: str = Field(description="public id of the owner database")
    origin: str = Field(description="where the gold query comes from, e.g. dev:12 or train:345")
    intent: str
    intent_source: Literal["question", "rendered"]
    sql: str = Field(description="read-only gold SQL, sqlite dialect")
    ordered: bool = Field(description="the gold SQL orders its rows: compare as a list")
    fingerprint: str = Field(description="sha256 of the canonical result rows")
    n_rows: int
    columns: list[str]
    tables: list[str]


class UnitFailure(Strict):
    origin: str
    database: str
    kind: str
    error: str


# ------------------------------------------------------------------------------ contracts
class Binding(Strict):
    """The upstream unit's single result value, bound into the downstream SQL as :parameter."""

    parameter: str
    upstream_column: str
    value_type: Literal["text", "integer", "real"]


class DependencyEdge(Strict):
    source: str = Field(description="upstream database public id")
    target: str = Field(description="downstream database public id")
    source_unit: str
    target_unit: str
    binding: Binding


class ContractUnit(Strict):
    unit_id: str
    database: str
    intent: str = Field(description="the local request as worded in the task (bound values removed)")
    sql: str = Field(description="gold SQL; a downstream unit's SQL carries :parameter placeholders")
    ordered: bool
    fingerprint: str = Field(description="expected result after bindings are applied")


class Branch(Strict):
    branch_id: str
    weight: float
    interpretation: str | None = None
    databases: list[str]
    units: list[ContractUnit]
    edges: list[DependencyEdge] = Field(default_factory=list)


class AnswerCondition(Strict):
    kind: Literal["each-unit", "final-unit", "covering-set", "per-branch"]
    description: str
    final_units: list[str]


class Contract(Strict):
    task_id: str
    catalog: str
    behaviour: Behaviour
    branches: list[Branch]
    capabilities: list[str] = Field(default_factory=list, description="exploratory: capabilities named")
    answer: AnswerCondition
    request: str = ""
    renderer: str = ""
    seed: int
    intended: str | None = Field(None, description="interactive: the branch id the user means (private; only "
                                                   "the clarification answer reveals it)")
    benchmark: str | None = Field(None, description="the generated benchmark whose public ids the contract uses")

    def required_databases(self) -> set[str]:
        return {d for b in self.scored_branches() for d in b.databases}

    def scored_branches(self) -> list[Branch]:
        """The branches a route is scored against: an interactive task's intended reading (weight 1), else all."""
        if self.intended is None:
            return self.branches
        return [b.model_copy(update={"weight": 1.0}) for b in self.branches if b.branch_id == self.intended]

    def units(self) -> list[ContractUnit]:
        return [u for b in self.branches for u in b.units]


# ------------------------------------------------------------------------------ routes
class RouteContribution(Strict):
    database: str
    request: str
    sql: str | None = Field(None, description="optional SQL; otherwise the local executor resolves the request")


class RouteEdge(Strict):
    source: str
    target: str
    upstream_column: str | None = None
    parameter: str | None = None


class RouteBranch(Strict):
    databases: list[str]
    edges: list[RouteEdge] = Field(default_factory=list)
    contributions: list[RouteContribution] = Field(default_factory=list)


class Route(Strict):
    behaviour: Behaviour
    branches: list[RouteBranch]
    asked_clarification: bool = False
