"""Trend: the metric over consecutive months, one GROUP BY over the periods.
{"direction", "total_change_pct", "peak_period"}"""
from __future__ import annotations

from dibench.core.answers import trend_summary as summarise
from dibench.generation.analyses.base import Outcome, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import PERIOD_ALIAS, group_by, month_bucket

NAME = "trend_analysis"


def compatible(sk: Skeleton) -> bool:
    return sk.dimension_type == "temporal"


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng, months=ctx.rng.choice([6, 8, 12]))
    pair = ctx.pair(lambda t: group_by(t, month_bucket(ctx.time(t)), alias=PERIOD_ALIAS), window)
    gold = summarise(pair.gold_rows, ctx.metric.rounding)
    base = summarise(pair.base_rows, ctx.metric.rounding)
    if gold is None or base is None:
        return None
    return outcome(gold, base, pair, {**window_facts(window), "periods": len(pair.gold_rows)})
