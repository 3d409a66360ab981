"""Significance testing: is the metric different between two groups? Monthly values per group
from one GROUP BY (group, month) on the window's calendar, then Welch's two-tailed t-test (scipy).
{"significant", "p_value", "t_statistic", "test_name", "alpha"}"""
from __future__ import annotations

from typing import Any

from dibench.core.answers import WELCH_ALPHA as ALPHA, months, welch
from dibench.generation.analyses.base import Outcome, categorical, outcome, period_edge, window_facts
from dibench.generation.analyses.comparison import pick_two
from dibench.generation.analyses.trend import additive
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import by_month, filter_in, group_by

NAME = "significance_testing"
# A rule rarely flips a significance verdict, so a rule task tries more group pairs and windows
# (each try is one GROUP BY pair of queries) before the counterfactual filter gives up on it.
WINDOW_TRIES = 10


def compatible(sk: Skeleton) -> bool:
    return categorical(sk) and sk.cardinality >= 2


def build(ctx: Context) -> Outcome | None:
    window = choose_window(*ctx.data_window, ctx.rng, months=12)
    two = pick_two(ctx, ctx.top_values(window, min_rows=30))
    if two is None:
        return None
    a, b = two

    def shape(t: Any) -> Any:
        t = group_by(filter_in(t, ctx.dim(t), ["group_a", "group_b"]), ctx.dim(t), copy=False)
        return by_month(t, ctx.time(t), with_count=False)

    pair = ctx.pair(shape, window, {"group_a": a, "group_b": b})
    facts = window_facts(window)
    # On the window's calendar, as a trend: a month without rows is 0 for a count or a sum.
    periods, empty = months(facts["start"], facts["end"]), 0 if additive(ctx.metric.sql) else None
    gold, base = welch(pair.gold_rows, a, b, periods, empty), welch(pair.base_rows, a, b, periods, empty)
    if gold is None or base is None:
        return None
    return outcome(gold, base, pair, {**facts, "group_a": a, "group_b": b, "alpha": ALPHA, "empty_period": empty,
                                      **period_edge(ctx, True)})
