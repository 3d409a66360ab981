"""Ranking: the top-k groups by the metric, best first. {"k", "rows": [{group, value}]}"""
from __future__ import annotations

from dibench.core.answers import grouped_rows, ranking as answer, top_k  # noqa: F401  (answer: the module contract)
from dibench.generation.analyses.base import Outcome, categorical, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import group_by

NAME = "ranking"


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and sk.cardinality >= 3


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    pair = ctx.pair(lambda t: group_by(t, ctx.dim(t)), window)
    gold_all = grouped_rows(pair.gold_rows, ctx.metric.rounding)
    base_all = grouped_rows(pair.base_rows, ctx.metric.rounding)
    n = len([r for r in gold_all if r["value"] is not None])
    if n < 3:
        return None
    k = min(ctx.rng.choice([3, 3, 5]), n - 1)
    hib = ctx.metric.higher_is_better
    facts = {**window_facts(window), "k": k, "higher_is_better": hib}
    return outcome({"k": k, "rows": top_k(gold_all, k, hib)}, {"k": k, "rows": top_k(base_all, k, hib)}, pair, facts)
