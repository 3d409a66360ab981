"""The executor of generated SQL, and the statement types grounding and the grouped plan share."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlglot import exp

from dibench.core.config import get_settings
from dibench.core.models import MetricSpec
from dibench.sqlops.ops import Bound
from dibench.stores.warehouse import QueryResult, Warehouse

Shape = Callable[[exp.Expression], exp.Expression]


CACHE_ENTRIES = 4096
T = TypeVar("T")


@dataclass
class Executor:
    """Runs SQL on the read-only path and accounts the time Postgres spent. Results are cached
    by (SQL, parameters): the policy variants of one analysis re-run the same base and
    top-value statements, and the warehouse does not change under a generation run."""

    wh: Warehouse
    schema: str | None = None  # the domain's: its read-only role runs every statement
    sql_seconds: float = 0.0
    statements: int = 0
    cache: dict[Hashable, Any] = field(default_factory=dict)
    pinned: dict[Hashable, Any] = field(default_factory=dict)
    # Answer analysis statements from one partials scan per rule set (generation/grouped.py);
    # off: one statement per answer (DIBENCH_GROUPED_PLAN=0, generate --legacy-plan).
    grouped: bool = field(default_factory=lambda: get_settings().grouped_plan)
    plan_log: list[str] = field(default_factory=list)  # per answered statement: "grouped" or "legacy: why"

    def run(self, sql: str, params: dict[str, Any], *, cache: bool = True, exact: bool = False) -> QueryResult:
        """`exact`: NUMERIC values stay Decimal (Warehouse.execute_readonly), for partials and answers."""
        if not cache:
            return self._execute(sql, params, exact)
        key = (sql, json.dumps(params, sort_keys=True, default=str), exact)
        return self.remember(key, lambda: self._execute(sql, params, exact))

    def remember(self, key: Hashable, compute: Callable[[], T], *, pin: bool = False) -> T:
        """`compute()` once per key, for the rest of the run: the CACHE_ENTRIES most recently used
        keys, and every `pin`ned one (what a metric's later skeletons read again: its statement
        trees, cube and partials, a few per metric; thousands of answers would otherwise push a
        cube out between two skeletons of its metric, and it would be scanned again)."""
        if key in self.pinned:
            return cast(T, self.pinned[key])
        if key in self.cache:
            value = self.cache.pop(key)
            self.cache[key] = value  # most recently used last
            return cast(T, value)
        value = compute()
        if pin:
            self.pinned[key] = value
            return value
        if len(self.cache) >= CACHE_ENTRIES:
            self.cache.pop(next(iter(self.cache)))
        self.cache[key] = value
        return value

    def known(self, key: Hashable) -> bool:
        return key in self.pinned or key in self.cache

    def _execute(self, sql: str, params: dict[str, Any], exact: bool = False) -> QueryResult:
        started = time.perf_counter()
        try:
            return self.wh.execute_readonly(sql, params, schema=self.schema, exact=exact)
        finally:
            self.sql_seconds += time.perf_counter() - started
            self.statements += 1


@dataclass(frozen=True)
class Statement:
    sql: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Part:
    """One SELECT of a metric under some of its rules: the metric itself, or one input of a derived
    metric (its placeholders, but the window's, renamed `<input>__name`)."""

    name: str
    metric: MetricSpec
    bound: Bound

    @property
    def prefix(self) -> str:
        return f"{self.name}__" if self.name else ""
