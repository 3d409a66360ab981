"""Grounding: concrete windows and filter values drawn from the data; base SQL from the
template, gold SQL with the rules' operations applied on the tree; both run read-only.
"""
from __future__ import annotations

import calendar
import datetime as dt
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from generation.skeletons import Skeleton
from ingest.verify import as_date, metric_window
from service.models import MetricSpec
from service.warehouse import QueryResult, Warehouse
from sqlops.dialect import parse, render
from sqlops.ops import AnyEffect, Bound, apply_effects
from sqlops.shape import distinct_values
from sqlops.tree import aliased_column, column

Shape = Callable[[exp.Expression], exp.Expression]


@dataclass
class Executor:
    """Runs SQL on the read-only path and accounts the time Postgres spent."""

    wh: Warehouse
    schema: str | None = None  # the domain's: its read-only role runs every statement
    sql_seconds: float = 0.0
    statements: int = 0

    def run(self, sql: str, params: dict[str, Any]) -> QueryResult:
        started = time.perf_counter()
        try:
            return self.wh.execute_readonly(sql, params, schema=self.schema)
        finally:
            self.sql_seconds += time.perf_counter() - started
            self.statements += 1


@dataclass(frozen=True)
class Pair:
    gold_rows: list[tuple[Any, ...]]
    base_rows: list[tuple[Any, ...]]
    gold_sql: str
    base_sql: str
    gold_params: dict[str, Any]
    base_params: dict[str, Any]


@dataclass
class Context:
    metric: MetricSpec
    skeleton: Skeleton
    effects: list[tuple[str, AnyEffect]]
    ex: Executor
    rng: random.Random
    data_window: tuple[dt.date, dt.date]
    rule_docs: dict[str, Any] = field(default_factory=dict)
    base: Bound = field(init=False)
    gold: Bound = field(init=False)

    def __post_init__(self) -> None:
        self.base = Bound(parse(self.metric.sql, where=f"metric {self.metric.id}: sql"))
        self.gold = apply_effects(self.base, self.effects, self.metric)

    @property
    def has_rules(self) -> bool:
        return bool(self.effects)

    @property
    def time_col(self) -> exp.Expression:
        return aliased_column(self.metric.time_column)

    @property
    def dim_col(self) -> exp.Expression:
        return column(self.base.tree, self.skeleton.dimension)

    def conditional_value(self) -> str | None:
        for r in self.skeleton.rules:
            if r.applies_dimension == self.skeleton.dimension and r.applies_value is not None:
                return r.applies_value
        return None

    def window_params(self, window: tuple[dt.date, dt.date]) -> dict[str, Any]:
        return {"start_date": window[0], "end_date": window[1], **self.metric.params}

    def pair(self, shape: Shape, window: tuple[dt.date, dt.date], extra: dict[str, Any] | None = None) -> Pair:
        base_tree, gold_tree = shape(self.base.tree), shape(self.gold.tree)
        base_params = {**self.window_params(window), **(extra or {})}
        gold_params = {**base_params, **self.gold.params}
        base_sql, gold_sql = render(base_tree), render(gold_tree)
        gold = self.ex.run(gold_sql, gold_params)
        base = self.ex.run(base_sql, base_params) if self.has_rules else gold
        return Pair(gold.rows, base.rows, gold_sql, base_sql, gold_params, base_params)

    def top_values(self, window: tuple[dt.date, dt.date], limit: int = 12, min_rows: int = 5) -> list[str]:
        """Dimension values present in the window, most frequent first, with at least min_rows rows."""
        tree = distinct_values(self.base.tree, self.dim_col, "value_limit")
        res = self.ex.run(render(tree), {**self.window_params(window), "value_limit": limit})
        return [str(v) for v, n in res.rows if v is not None and n >= min_rows]


def month_add(d: dt.date, months: int) -> dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return dt.date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def choose_window(lo: dt.date, hi: dt.date, rng: random.Random, months: int | None = None) -> tuple[dt.date, dt.date]:
    """A window of whole months inside [lo, hi): a year, half-year or quarter (or `months`)."""
    first = dt.date(lo.year, lo.month, 1) if lo.day == 1 else month_add(dt.date(lo.year, lo.month, 1), 1)
    last = dt.date(hi.year, hi.month, 1)
    span = (last.year - first.year) * 12 + last.month - first.month
    if span <= 0:
        return lo, hi
    length = months or rng.choice([12, 6, 3])
    length = max(1, min(length, span))
    start = month_add(first, rng.randrange(0, span - length + 1))
    return start, month_add(start, length)


def data_window(wh: Warehouse, metric: MetricSpec, *, schema: str | None = None) -> tuple[dt.date, dt.date]:
    lo, hi = metric_window(wh, metric, schema=schema)
    return as_date(lo), as_date(hi)
