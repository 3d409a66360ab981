"""Comparison: the metric for two groups. {"group_a", "group_b", "value_a", "value_b", "higher"}"""
from __future__ import annotations

from dibench.core.answers import Rows, comparison as answer, exact, label, rnd
from dibench.generation.analyses.base import Outcome, categorical, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import filter_in, group_by

NAME = "comparison"


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and sk.cardinality >= 2


def pick_two(ctx: Context, values: list[str]) -> tuple[str, str] | None:
    if len(values) < 2:
        return None
    cond = ctx.conditional_value()
    if cond in values:
        other = ctx.rng.choice([v for v in values[:6] if v != cond])
        return (cond, other) if ctx.rng.random() < 0.5 else (other, cond)
    a, b = ctx.rng.sample(values[:6], 2)
    return a, b


def rounded_together(rows: Rows, a: str, b: str, digits: int) -> bool:
    """Whether the two groups' values differ but round to the same figure: the gold would say
    "equal" where an agent that compares the exact values names one of them, and both are right."""
    raw = {label(r[0]): r[1] for r in rows}
    va, vb = raw.get(a), raw.get(b)
    if va is None or vb is None:
        return False
    return rnd(va, digits) == rnd(vb, digits) and exact(va) != exact(vb)


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    two = pick_two(ctx, ctx.top_values(window))
    if two is None:
        return None
    a, b = two
    pair = ctx.pair(lambda t: group_by(filter_in(t, ctx.dim(t), ["group_a", "group_b"]), ctx.dim(t), copy=False),
                    window, {"group_a": a, "group_b": b})
    d = ctx.metric.rounding
    if rounded_together(pair.gold_rows, a, b, d) or rounded_together(pair.base_rows, a, b, d):
        return None
    return outcome(answer(pair.gold_rows, a, b, d), answer(pair.base_rows, a, b, d), pair,
                   {**window_facts(window), "group_a": a, "group_b": b})
