"""Execute a route's contributions, and a contract's gold units, read-only, with real SQL.

A contribution runs its own SQL when the router gave one. Otherwise a reference executor writes
the SQL that stands in for the source's own text-to-SQL agent:
- `OracleSql` (no LLM): the gold unit SQL of the routed database when the route is right (the
  database belongs to the gold branch the route branch was matched to; its n-th contribution gets
  its n-th unit), nothing otherwise. It never reads request texts.
- `TextToSql` (an LLM): the model writes the SQL from the local request and the database's public
  schema.
Bindings follow the route's dependency edges: the upstream database's first contribution's single
result value is bound into the downstream SQL's placeholder. Outcomes are one per contribution.
"""
from __future__ import annotations

import json

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import Field

from dibench.core.errors import ExtractionError
from dibench.routing.errors import UnitSQLError
from dibench.routing.models import Branch, RouteBranch, RouteContribution, RouteEdge, Strict
from dibench.routing.sqlite_exec import SqliteExecutor, SqliteResult
from dibench.routing.sqltree import sql_placeholders
from dibench.routing.view import CatalogView, Locations
from dibench.stores.llm import ask_structured


class SqlWriter(Protocol):
    name: str

    def sql_for(self, contribution: RouteContribution, gold: Branch | None, nth: int) -> str | None:
        """SQL for a contribution without its own; gold is the matched gold branch (oracle use only),
        nth the contribution's place among the branch's contributions to its database."""
        ...


class OracleSql:
    """Gold unit SQL when the routed database is in the matched gold branch; never reads the request."""

    name = "oracle-sql"

    def sql_for(self, contribution: RouteContribution, gold: Branch | None, nth: int) -> str | None:
        if gold is None:
            return None
        own = [u.sql for u in gold.units if u.database == contribution.database]
        return own[nth] if nth < len(own) else None


class GeneratedSql(Strict):
    sql: str = Field(min_length=1)


_SQL_SYSTEM = ("You write one read-only SQLite SELECT that answers the request on the database whose schema is "
               "given. Where the request depends on a value found earlier, use the placeholder :bound_value. "
               'Reply with one JSON object: {"sql": "..."}.')


class TextToSql:
    """An LLM writes the SQL from the local request and the database's public schema."""

    def __init__(self, model: BaseChatModel, view: CatalogView) -> None:
        self.model = model
        self.view = view
        self.name = f"llm:{type(model).__name__}"

    def _schema(self, database: str) -> str:
        db = self.view.databases.get(database)
        if db is None:
            return ""
        return "\n".join(f"{t.name}({', '.join(c['column'] for c in t.columns)})" for t in db.tables.values())

    def sql_for(self, contribution: RouteContribution, gold: Branch | None, nth: int) -> str | None:
        user = f"Schema:\n{self._schema(contribution.database)}\n\nRequest: {contribution.request}"
        try:
            return ask_structured(self.model, _SQL_SYSTEM, user, GeneratedSql, where="routing text-to-SQL").sql
        except ExtractionError:
            return None


@dataclass(frozen=True)
class Outcome:
    result: SqliteResult | None
    error: str | None = None


BranchOutcomes = dict[str, list[Outcome]]  # database -> one outcome per contribution, in the route's order


def _order(dbs: list[str], edges: list[tuple[str, str]]) -> tuple[list[str], set[str]]:
    """Topological order of dbs; the second value holds dbs caught in a cycle."""
    incoming = {d: 0 for d in dbs}
    out: dict[str, list[str]] = defaultdict(list)
    for s, t in edges:
        if s in incoming and t in incoming:
            incoming[t] += 1
            out[s].append(t)
    ready = [d for d in dbs if incoming[d] == 0]
    order: list[str] = []
    while ready:
        d = ready.pop(0)
        order.append(d)
        for n in out[d]:
            incoming[n] -= 1
            if incoming[n] == 0:
                ready.append(n)
    return order, set(dbs) - set(order)


class RouteExecutor:
    def __init__(self, locations: Locations, executor: SqliteExecutor, writer: SqlWriter) -> None:
        self.locations = locations
        self.executor = executor
        self.writer = writer
        # read-only statements give the same rows every time: a shortcut audit runs each gold
        # statement once per router, so results are kept per (database, SQL, parameters)
        self._results: dict[tuple[str, str, str], Any] = {}

    def _run(self, db: str, sql: str, params: dict[str, Any]) -> Any:
        key = (db, sql, json.dumps(params, sort_keys=True, default=repr))
        if key not in self._results:
            self._results[key] = self.executor.run(self.locations.path(db), sql, params)
        return self._results[key]

    def _params(self, sql: str, incoming: list[RouteEdge], outcomes: BranchOutcomes) -> dict[str, Any]:
        needed = sorted(sql_placeholders(sql))
        params: dict[str, Any] = {}
        for e in incoming:
            ups = outcomes.get(e.source, [])
            up = ups[0] if ups else None
            if up is None or up.result is None or len(up.result.rows) != 1:
                raise UnitSQLError("binding", f"upstream {e.source} gave no single row to bind", sql)
            cols = up.result.columns
            idx = cols.index(e.upstream_column) if e.upstream_column in cols else 0
            free = [p for p in needed if p not in params]
            name = e.parameter if e.parameter in needed else (free[0] if free else None)
            if name is not None:
                params[name] = up.result.rows[0][idx]
        missing = [p for p in needed if p not in params]
        if missing:
            raise UnitSQLError("binding", f"unbound parameters {missing}", sql)
        return params

    def _contribution(self, c: RouteContribution, nth: int, branch: RouteBranch, gold: Branch | None,
                      outcomes: BranchOutcomes) -> Outcome:
        sql = c.sql if c.sql is not None else self.writer.sql_for(c, gold, nth)
        if sql is None:
            return Outcome(None, f"{self.writer.name} wrote no SQL for this contribution")
        try:
            params = self._params(sql, [e for e in branch.edges if e.target == c.database], outcomes)
            return Outcome(self._run(c.database, sql, params))
        except UnitSQLError as exc:
            return Outcome(None, str(exc))

    def run_branch(self, branch: RouteBranch, gold: Branch | None = None) -> BranchOutcomes:
        """Execute every contribution of branch; gold is the gold branch it was matched to, if any."""
        contribs: dict[str, list[RouteContribution]] = defaultdict(list)
        for c in branch.contributions:
            contribs[c.database].append(c)
        order, cyclic = _order(sorted(contribs), [(e.source, e.target) for e in branch.edges])
        outcomes: BranchOutcomes = {d: [Outcome(None, "dependency cycle")] * len(contribs[d]) for d in cyclic}
        for db in order:
            outcomes[db] = [self._contribution(c, nth, branch, gold, outcomes) for nth, c in enumerate(contribs[db])]
        return outcomes


def gold_branch_route(branch: Branch) -> RouteBranch:
    """The gold route of one contract branch (what the oracle submits)."""
    return RouteBranch(
        databases=list(branch.databases),
        edges=[RouteEdge(source=e.source, target=e.target, upstream_column=e.binding.upstream_column,
                         parameter=e.binding.parameter) for e in branch.edges],
        contributions=[RouteContribution(database=u.database, request=u.intent, sql=u.sql) for u in branch.units])
