"""Ranking: the top-k groups by the metric, best first. {"k", "rows": [{group, value}]}"""
from __future__ import annotations

from typing import Any

from generation.analyses import Outcome, categorical, outcome, window_facts
from generation.analyses.decomposition import grouped_rows
from generation.grounding import Context, choose_window
from generation.skeletons import Skeleton
from sqlops.shape import group_by

NAME = "ranking"


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and sk.cardinality >= 3


def top_k(rows: list[dict[str, Any]], k: int, higher_is_better: bool) -> list[dict[str, Any]]:
    present = [r for r in rows if r["value"] is not None]
    sign = -1 if higher_is_better else 1
    return sorted(present, key=lambda r: (sign * r["value"], r["group"]))[:k]


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


def answer(rows: list[tuple[Any, ...]], k: int, higher_is_better: bool, digits: int) -> dict[str, Any]:
    """The ranking answer from (group, value, n) rows: what build() derives, for re-execution."""
    return {"k": k, "rows": top_k(grouped_rows(rows, digits), k, higher_is_better)}
