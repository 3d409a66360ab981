"""Execute a route's contributions, and a contract's gold units, read-only.

A contribution runs its own SQL when the router gave one; otherwise a deterministic local
executor stands in for a database's own text-to-SQL agent: it matches the local request
against that database's question bank (every unit intent of that database, BM25) and runs the
best match. Bindings follow the route's dependency edges: the upstream contribution's single
result value is bound into the downstream SQL's placeholder.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from routing.errors import UnitSQLError
from routing.models import Branch, ContractUnit, RouteBranch, RouteContribution, RouteEdge, SourceUnit
from routing.retrieval import Bm25Index
from routing.sqlite_exec import SqliteExecutor, SqliteResult
from routing.sqltree import parse_select, placeholders
from routing.view import Locations


@dataclass(frozen=True)
class BankEntry:
    intent: str
    sql: str


class QuestionBank:
    """Per database, the intents it can answer and their SQL (the local executor's knowledge)."""

    def __init__(self, entries: dict[str, list[BankEntry]]) -> None:
        self._entries = entries
        self._indexes: dict[str, Bm25Index[int]] = {}

    @classmethod
    def from_units(cls, units: list[SourceUnit], extra: list[ContractUnit] = ()) -> "QuestionBank":  # type: ignore[assignment]
        entries: dict[str, list[BankEntry]] = defaultdict(list)
        seen: set[tuple[str, str, str]] = set()
        for db, intent, sql in [(u.database, u.intent, u.sql) for u in units] + [(u.database, u.intent, u.sql)
                                                                                   for u in extra]:
            if (db, intent, sql) not in seen:
                seen.add((db, intent, sql))
                entries[db].append(BankEntry(intent, sql))
        return cls(dict(entries))

    def resolve(self, database: str, request: str) -> BankEntry | None:
        entries = self._entries.get(database)
        if not entries:
            return None
        exact = [e for e in entries if e.intent.strip().lower() == request.strip().lower()]
        if exact:
            return exact[0]
        if database not in self._indexes:
            self._indexes[database] = Bm25Index(list(range(len(entries))), [e.intent for e in entries])
        best, score = self._indexes[database].rank(request, 1)[0]
        return entries[best] if score > 0 else None


@dataclass(frozen=True)
class Outcome:
    result: SqliteResult | None
    error: str | None = None


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
    def __init__(self, locations: Locations, executor: SqliteExecutor, bank: QuestionBank) -> None:
        self.locations = locations
        self.executor = executor
        self.bank = bank

    def _params(self, sql: str, incoming: list[RouteEdge], outcomes: dict[str, Outcome]) -> dict[str, Any]:
        needed = sorted(placeholders(parse_select(sql)))
        params: dict[str, Any] = {}
        for e in incoming:
            up = outcomes.get(e.source)
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

    def run_branch(self, branch: RouteBranch) -> dict[str, Outcome]:
        contribs: dict[str, RouteContribution] = {}
        for c in branch.contributions:
            contribs.setdefault(c.database, c)
        order, cyclic = _order(sorted(contribs), [(e.source, e.target) for e in branch.edges])
        outcomes: dict[str, Outcome] = {d: Outcome(None, "dependency cycle") for d in cyclic}
        for db in order:
            c = contribs[db]
            sql = c.sql
            if sql is None:
                entry = self.bank.resolve(db, c.request)
                if entry is None:
                    outcomes[db] = Outcome(None, "the local executor found no matching request")
                    continue
                sql = entry.sql
            try:
                params = self._params(sql, [e for e in branch.edges if e.target == db], outcomes)
                outcomes[db] = Outcome(self.executor.run(self.locations.path(db), sql, params))
            except UnitSQLError as exc:
                outcomes[db] = Outcome(None, str(exc))
        return outcomes


def gold_branch_route(branch: Branch) -> RouteBranch:
    """The gold route of one contract branch (what the oracle submits)."""
    return RouteBranch(
        databases=list(branch.databases),
        edges=[RouteEdge(source=e.source, target=e.target, upstream_column=e.binding.upstream_column,
                         parameter=e.binding.parameter) for e in branch.edges],
        contributions=[RouteContribution(database=u.database, request=u.intent, sql=u.sql) for u in branch.units])
