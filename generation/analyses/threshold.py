"""Threshold crossing: does the metric on a slice meet a threshold? {"value", "threshold", "result"}"""
from __future__ import annotations

import math

from dibench.core.answers import threshold_crossing as answer
from dibench.core.contracts import half_unit
from dibench.generation.analyses import point_query
from dibench.generation.analyses.base import Outcome, outcome
from dibench.generation.grounding import Context
from dibench.generation.skeletons import Skeleton

NAME = "threshold_crossing"


def compatible(sk: Skeleton) -> bool:
    return True


def round_significant(x: float, digits: int) -> float:
    if x == 0:
        return 0.0
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


def roundest_between(a: float, b: float) -> float:
    """The roundest number strictly between a and b (a business target: 300,000 rather than
    321,413), so the verdict still differs on either side; their rounded midpoint if none is."""
    lo, hi = min(a, b), max(a, b)
    if hi > lo:
        top = math.ceil(math.log10(max(abs(lo), abs(hi)))) + 1
        for p in range(top, math.floor(math.log10(hi - lo)) - 2, -1):
            for step in (10.0 ** p, 5 * 10.0 ** (p - 1)):
                c = math.floor(lo / step + 1) * step
                if lo < c < hi:
                    return float(round(c, 6))
    return float(round((a + b) / 2, 0))


def states_its_answer(threshold: float, values: list[float | None], rounding: int) -> bool:
    """Whether a target equals a value to find (with the policy or without it): the question would
    state its own answer, and echoing the target would pass."""
    return any(v is not None and abs(v - threshold) < half_unit(rounding) for v in values)


def build(ctx: Context) -> Outcome | None:
    point = point_query.build(ctx)
    if point is None or point.gold_answer["value"] is None:
        return None
    m = ctx.metric
    if "threshold" in ctx.fixed:
        threshold = float(ctx.fixed["threshold"])  # a policy variant answers the same question
    elif m.target is not None:
        threshold = float(m.target)
    else:
        # No business target: a round number between the answers with and without rules,
        # else close to the value, so the question is neither trivial nor arbitrary.
        g, b = point.gold_answer["value"], point.base_answer["value"]
        threshold = roundest_between(g, b) if b is not None else round_significant(g, 2)
    if "threshold" not in ctx.fixed and states_its_answer(
            threshold, [point.gold_answer["value"], point.base_answer["value"]], m.rounding):
        return None
    facts = {**point.facts, "threshold": threshold, "higher_is_better": m.higher_is_better}
    return Outcome(answer(point.gold_answer["value"], threshold, m.higher_is_better),
                   answer(point.base_answer["value"], threshold, m.higher_is_better), point.gold_sql,
                   point.base_sql, point.gold_params, point.base_params, facts)


_ = outcome
