"""Decomposition: the metric broken down by the dimension, every group. {"rows": [{group, value}]}"""
from __future__ import annotations

from typing import Any

from generation.analyses import Outcome, categorical, outcome, rnd, window_facts
from generation.grounding import Context, choose_window
from generation.skeletons import Skeleton
from sqlops.shape import group_by

NAME = "decomposition"
MAX_GROUPS = 25


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and 2 <= sk.cardinality <= MAX_GROUPS


def grouped_rows(rows: list[tuple[Any, ...]], digits: int) -> list[dict[str, Any]]:
    """(group, value, n) rows -> [{group, value}] sorted by group name."""
    return sorted(({"group": str(r[0]), "value": rnd(r[1], digits)} for r in rows if r[0] is not None),
                  key=lambda x: x["group"])


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng)
    pair = ctx.pair(lambda t: group_by(t, ctx.dim(t)), window)
    gold = answer(pair.gold_rows, ctx.metric.rounding)
    base = answer(pair.base_rows, ctx.metric.rounding)
    if len(gold["rows"]) < 2 and len(base["rows"]) < 2:
        return None
    return outcome(gold, base, pair, window_facts(window))


def answer(rows: list[tuple[Any, ...]], digits: int) -> dict[str, Any]:
    return {"rows": grouped_rows(rows, digits)}
