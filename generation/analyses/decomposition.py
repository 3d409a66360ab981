"""Decomposition: the metric broken down by the dimension, every group (one the policy suppresses
or empties with a null value). {"rows": [{group, value}]}"""
from __future__ import annotations

from dibench.core.answers import decomposition as answer, grouped_rows
from dibench.generation.analyses.base import Outcome, categorical, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import group_by

NAME = "decomposition"
MAX_GROUPS = 25


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and 2 <= sk.cardinality <= MAX_GROUPS


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    pair = ctx.pair(lambda t: group_by(t, ctx.dim(t)), window)
    # Every group the data has without rules is listed: one the policy suppresses, with no value.
    groups = sorted(r["group"] for r in grouped_rows(pair.base_rows, ctx.metric.rounding))
    gold = answer(pair.gold_rows, ctx.metric.rounding, groups)
    base = answer(pair.base_rows, ctx.metric.rounding, groups)
    if len(gold["rows"]) < 2 and len(base["rows"]) < 2:
        return None
    if all(r["value"] is None for r in gold["rows"]):
        return None  # the policy withholds every group: an answer of nulls alone, which a constant gives
    return outcome(gold, base, pair, {**window_facts(window), "all_groups": groups})
