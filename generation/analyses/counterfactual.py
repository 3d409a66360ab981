"""Counterfactual: the metric per group under the policy in force and with the featured rule
lifted (every other rule still applied). {"rows": [{group, current, hypothetical}]}; the no-rule
answer has current = hypothetical."""
from __future__ import annotations

from typing import Any

from generation.analyses import Outcome, outcome, window_facts
from generation.analyses.decomposition import MAX_GROUPS, grouped_rows
from generation.grounding import Context, choose_window
from generation.skeletons import Skeleton
from sqlops.shape import PERIOD_ALIAS, group_by, month_bucket

NAME = "counterfactual"


def compatible(sk: Skeleton) -> bool:
    return bool(sk.rules) and (sk.dimension_type == "temporal" or 2 <= sk.cardinality <= MAX_GROUPS)


def merge(current: list[dict[str, Any]], hypothetical: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cur = {r["group"]: r["value"] for r in current}
    hyp = {r["group"]: r["value"] for r in hypothetical}
    return [{"group": g, "current": cur.get(g), "hypothetical": hyp.get(g)} for g in sorted(set(cur) | set(hyp))]


def answer(current_rows: list[tuple[Any, ...]], hypothetical_rows: list[tuple[Any, ...]], digits: int) -> dict[str, Any]:
    """(group, value, n) rows with the rule (current) and without it (hypothetical) -> the answer."""
    return {"rows": merge(grouped_rows(current_rows, digits), grouped_rows(hypothetical_rows, digits))}


def build(ctx: Context) -> Outcome | None:
    temporal = ctx.skeleton.dimension_type == "temporal"
    window = choose_window(*ctx.data_window, ctx.rng, months=6 if temporal else None)

    def shape(t: Any) -> Any:
        key = month_bucket(ctx.time(t)) if temporal else ctx.dim(t)
        return group_by(t, key, alias=PERIOD_ALIAS if temporal else "grp")

    pair = ctx.pair(shape, window, lifted=True)
    digits = ctx.metric.rounding
    if len(grouped_rows(pair.base_rows, digits)) < 2:
        return None
    assert pair.lifted_rows is not None
    gold = answer(pair.gold_rows, pair.lifted_rows, digits)
    base = answer(pair.base_rows, pair.base_rows, digits)
    featured = ctx.skeleton.rules[0]
    doc = ctx.rule_docs.get(featured.id)
    facts = {**window_facts(window), "rules": [featured.id], "by_month": temporal,
             "lifted": doc.front.title if doc is not None else featured.id}
    return outcome(gold, base, pair, facts)
