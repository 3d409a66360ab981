"""Point query: the metric on one slice (dimension = value) in a window. {"value": x}"""
from __future__ import annotations

from generation.analyses import Outcome, categorical, outcome, rnd, window_facts
from generation.grounding import Context, choose_window
from generation.skeletons import Skeleton
from sqlops.shape import filter_eq

NAME = "point_query"


def compatible(sk: Skeleton) -> bool:
    return True


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    facts = window_facts(window)
    extra = {}
    if categorical(ctx.skeleton):
        values = ctx.top_values(window)
        if not values:
            return None
        value = ctx.conditional_value() or ctx.rng.choice(values[:6])
        facts["group"] = value
        extra["slice_value"] = value
        pair = ctx.pair(lambda t: filter_eq(t, ctx.dim_col, "slice_value"), window, extra)
    else:
        pair = ctx.pair(lambda t: t, window)
    digits = ctx.metric.rounding
    gold = {"value": rnd(pair.gold_rows[0][0], digits) if pair.gold_rows else None}
    base = {"value": rnd(pair.base_rows[0][0], digits) if pair.base_rows else None}
    return outcome(gold, base, pair, facts)
