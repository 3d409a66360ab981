"""Counterfactual: the metric per group under the policy in force and with the featured rule
lifted (every other rule still applied). {"rows": [{group, current, hypothetical}]}; the no-rule
answer has current = hypothetical."""
from __future__ import annotations

from typing import Any

from dibench.core.answers import grouped_rows, months, counterfactual as answer
from dibench.generation.analyses.base import Outcome, outcome, period_edge, window_facts
from dibench.generation.analyses.decomposition import MAX_GROUPS
from dibench.generation.analyses.trend import additive
from dibench.generation.grounding import Context, choose_window
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.shape import by_month, group_by

NAME = "counterfactual"


def compatible(sk: Skeleton) -> bool:
    return bool(sk.rules) and (sk.dimension_type == "temporal" or 2 <= sk.cardinality <= MAX_GROUPS)


def build(ctx: Context) -> Outcome | None:
    temporal = ctx.skeleton.dimension_type == "temporal"
    window = choose_window(*ctx.data_window, ctx.rng, months=6 if temporal else None)

    def shape(t: Any) -> Any:
        return by_month(t, ctx.time(t)) if temporal else group_by(t, ctx.dim(t), alias="grp")

    pair = ctx.pair(shape, window, lifted=True)
    digits = ctx.metric.rounding
    if len(grouped_rows(pair.base_rows, digits)) < 2:
        return None
    assert pair.lifted_rows is not None
    # By month, on the window's calendar: a month without rows is 0 for a count or a sum, null otherwise.
    periods = months(window[0].isoformat(), window[1].isoformat()) if temporal else None
    empty = 0 if additive(ctx.metric.sql) else None
    # By group, every group the data has without rules: one a policy withholds is listed with nulls.
    groups = None if temporal else sorted(r["group"] for r in grouped_rows(pair.base_rows, digits))
    gold = answer(pair.gold_rows, pair.lifted_rows, digits, periods, empty, groups)
    base = answer(pair.base_rows, pair.base_rows, digits, periods, empty, groups)
    if all(r["current"] is None and r["hypothetical"] is None for r in gold["rows"]):
        return None  # withheld with the rule and without it: nulls alone, which a constant gives
    featured = ctx.skeleton.rules[0]
    doc = ctx.rule_docs.get(featured.rule_id)
    facts = {**window_facts(window), "rules": [featured.rule_id], "by_month": temporal,
             "lifted": doc.front.title if doc is not None else featured.rule_id,
             **({"empty_period": empty} if temporal else {"all_groups": groups}), **period_edge(ctx, temporal)}
    return outcome(gold, base, pair, facts)
