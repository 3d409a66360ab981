"""Point query: the metric on one slice (dimension = value) in a window. {"value": x}"""
from __future__ import annotations

from dibench.core.answers import point_value as answer
from dibench.generation.analyses.base import Outcome, categorical, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import filter_eq

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
        pair = ctx.pair(lambda t: filter_eq(t, ctx.dim(t), "slice_value"), window, extra)
    else:
        pair = ctx.pair(lambda t: t, window)
    digits = ctx.metric.rounding
    return outcome(answer(pair.gold_rows, digits), answer(pair.base_rows, digits), pair, facts)
