"""Trend: the metric over consecutive months, one GROUP BY over the periods.
{"direction", "total_change_pct", "peak_period"}"""
from __future__ import annotations

from typing import Any

from generation.analyses import Outcome, outcome, rnd, window_facts
from generation.grounding import Context, choose_window
from generation.skeletons import Skeleton
from sqlops.shape import PERIOD_ALIAS, group_by, month_bucket

NAME = "trend_analysis"
FLAT_PCT = 1.0  # |total change| below this many percent counts as flat
PCT_DIGITS = 1  # total_change_pct is rounded to this many decimals (its scoring tolerance follows)


def compatible(sk: Skeleton) -> bool:
    return sk.dimension_type == "temporal"


def summarise(rows: list[tuple[Any, ...]], digits: int) -> dict[str, Any] | None:
    series = sorted((str(r[0]), float(r[1])) for r in rows if r[0] is not None and r[1] is not None)
    if len(series) < 3:
        return None
    first, last = series[0][1], series[-1][1]
    change = 0.0 if first == 0 else (last - first) / abs(first) * 100.0
    direction = "flat" if abs(change) < FLAT_PCT else ("increasing" if change > 0 else "decreasing")
    peak = max(series, key=lambda p: (p[1], p[0]))[0]
    return {"direction": direction, "total_change_pct": rnd(change, PCT_DIGITS), "peak_period": peak}


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng, months=ctx.rng.choice([6, 8, 12]))
    pair = ctx.pair(lambda t: group_by(t, month_bucket(ctx.time(t)), alias=PERIOD_ALIAS), window)
    gold = summarise(pair.gold_rows, ctx.metric.rounding)
    base = summarise(pair.base_rows, ctx.metric.rounding)
    if gold is None or base is None:
        return None
    return outcome(gold, base, pair, {**window_facts(window), "periods": len(pair.gold_rows)})
