"""Ranking: the top-k groups by the metric, best first. {"k", "rows": [{group, value}]}. k never
cuts a tie (of the answer with the policy or without it): the top k is one set of groups."""
from __future__ import annotations

from typing import Any

from dibench.core.answers import grouped_rows, ranking as answer, top_k  # noqa: F401  (answer: the module contract)
from dibench.generation.analyses.base import Outcome, categorical, outcome, window_facts
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import group_by

NAME = "ranking"


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and sk.cardinality >= 3


def tied_at(rows: list[dict[str, Any]], k: int, higher_is_better: bool) -> bool:
    """Whether the k-th and the next group of the ranking have the same value: a cut inside a tie
    would make the top k depend on how ties are broken, and no agent could know."""
    ranked = top_k(rows, k + 1, higher_is_better)
    return len(ranked) > k and ranked[k - 1]["value"] == ranked[k]["value"]


def untied_k(answers: list[list[dict[str, Any]]], wanted: int, n: int, higher_is_better: bool) -> int | None:
    """The k nearest `wanted` (smaller first) that cuts no tie in any of `answers`; None if each does."""
    for k in [wanted, *range(wanted - 1, 1, -1), *range(wanted + 1, n)]:
        if not any(tied_at(rows, k, higher_is_better) for rows in answers):
            return k
    return None


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    pair = ctx.pair(lambda t: group_by(t, ctx.dim(t)), window)
    gold_all = grouped_rows(pair.gold_rows, ctx.metric.rounding)
    base_all = grouped_rows(pair.base_rows, ctx.metric.rounding)
    n = len([r for r in gold_all if r["value"] is not None])
    if n < 3:
        return None
    hib = ctx.metric.higher_is_better
    wanted = min(ctx.rng.choice([3, 3, 5]), n - 1)
    # A policy variant answers the same question: its k is the standard task's.
    k = int(ctx.fixed["k"]) if "k" in ctx.fixed else untied_k([gold_all, base_all], wanted, n, hib)
    if k is None:
        return None
    facts = {**window_facts(window), "k": k, "higher_is_better": hib}
    return outcome({"k": k, "rows": top_k(gold_all, k, hib)}, {"k": k, "rows": top_k(base_all, k, hib)}, pair, facts)
