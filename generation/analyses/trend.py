"""Trend: the metric over consecutive months, one GROUP BY over the periods, on the calendar of the
window (a month without rows is 0 for a count or a sum, left out for an average or a ratio).
{"direction", "total_change_pct", "peak_period"}"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from dibench.core.answers import months, trend_summary as summarise, trend_tie
from dibench.core.errors import DibenchError
from dibench.generation.analyses.base import Outcome, outcome, period_edge, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.dialect import parse
from dibench.sqlops.shape import by_month

NAME = "trend_analysis"


def compatible(sk: Skeleton) -> bool:
    return sk.dimension_type == "temporal"


def additive(sql: str | None) -> bool:
    """Whether the metric's value is a count or a sum (a COUNT or SUM, filtered or not, or COALESCE
    of one, is its whole select expression): a month without rows is then 0, not unknown."""
    if not sql:
        return False
    try:
        tree = parse(sql, where="trend metric")
    except DibenchError:
        return False
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1:
        return False
    value = tree.expressions[0].unalias()
    if isinstance(value, exp.Coalesce):
        value = value.this
    if isinstance(value, exp.Filter):  # COUNT(*) FILTER (WHERE ...) counts, SUM(x) FILTER (...) sums
        value = value.this
    return isinstance(value, (exp.Count, exp.Sum))


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng, months=ctx.rng.choice([6, 8, 12]))
    pair = ctx.pair(lambda t: by_month(t, ctx.time(t)), window)
    facts = window_facts(window)
    # The calendar: every month of the window, a month without rows 0 for a count or a sum.
    periods, empty = months(facts["start"], facts["end"]), 0 if additive(ctx.metric.sql) else None
    gold = summarise(pair.gold_rows, ctx.metric.rounding, periods, empty)
    base = summarise(pair.base_rows, ctx.metric.rounding, periods, empty)
    if gold is None or base is None:
        return None
    tie = trend_tie(pair.gold_rows, periods, empty)
    facts = {**facts, "periods": len(periods), "empty_period": empty, **period_edge(ctx, True)}
    return replace(outcome(gold, base, pair, facts),
                   ties=[tie] if tie is not None else [])
