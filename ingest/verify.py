"""Counterfactual verification of rule -> metric edges.

An edge is verified when applying the rule's operation to the metric's SQL changes the
computed answer on at least one realistic slice of the data: the whole time range, every
value of each dimension the metric may be sliced by (one GROUP BY each), and every month.
Both statements run on the read-only path.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from service.errors import DibenchError
from service.models import MetricSpec
from service.warehouse import Warehouse, bounded_message
from sqlops.dialect import parse, render
from sqlops.ops import AnyEffect, Bound, apply_effect
from sqlops.shape import group_by, month_bucket, time_bounds
from sqlops.tree import aliased_column, column

WIDE = (dt.date(1900, 1, 1), dt.date(2200, 1, 1))


@dataclass(frozen=True)
class EdgeCheck:
    rule_id: str
    metric_id: str
    verified: bool
    changed_slices: tuple[str, ...]
    slices_checked: int
    error: str | None = None


def as_date(v: Any) -> dt.date:
    return v.date() if isinstance(v, dt.datetime) else v


def metric_window(wh: Warehouse, metric: MetricSpec, *, schema: str | None = None) -> tuple[dt.date, dt.date]:
    """[first day, day after last) of the metric's data, from its own FROM clause."""
    tree = time_bounds(parse(metric.template, where=f"metric {metric.id}: sql"), aliased_column(metric.time_ref))
    params = {"start_date": WIDE[0], "end_date": WIDE[1], **metric.params}
    res = wh.execute_readonly(render(tree), params, schema=schema)
    lo, hi = res.rows[0]
    if lo is None:
        raise DibenchError(f"metric {metric.id}: no rows in its tables; load the domain data first",
                           hint="dibench domain load <pack>")
    return as_date(lo), as_date(hi) + dt.timedelta(days=1)


def rounded(v: Any, digits: int) -> Any:
    if isinstance(v, float):
        return round(v, digits)
    return v


def slice_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], key: exp.Expression | None,
                  digits: int, *, schema: str | None = None) -> dict[str, Any]:
    """{slice label: rounded value}; a missing group (suppressed) is absent from the dict."""
    if key is None:
        res = wh.execute_readonly(render(tree), params, schema=schema)
        return {"all": rounded(res.rows[0][0], digits)} if res.rows else {}
    res = wh.execute_readonly(render(group_by(tree, key, with_count=False)), params, schema=schema)
    return {str(r[0]): rounded(r[1], digits) for r in res.rows}


def verify_effect(wh: Warehouse, metric: MetricSpec, rule_id: str, eff: AnyEffect,
                  window: tuple[dt.date, dt.date] | None = None, *, schema: str | None = None) -> EdgeCheck:
    """Verify one edge; `schema` is the pack's (its read-only role runs every statement). A failure
    is kept on the edge as a bounded one-line message: SQL errors are already value-free."""
    try:
        base = Bound(parse(metric.template, where=f"metric {metric.id}: sql"))
        gold = apply_effect(base, eff, metric, rule_id)
        lo, hi = window or metric_window(wh, metric, schema=schema)
        base_params = {"start_date": lo, "end_date": hi, **metric.params}
        gold_params = {**base_params, **gold.params}
        keys: list[tuple[str, exp.Expression | None]] = [("all", None)]
        dims = list(metric.dimensions)
        if eff.applies_when and eff.applies_when.dimension not in dims:
            dims.append(eff.applies_when.dimension)
        for d in dims:
            keys.append((d, column(base.tree, d)))
        keys.append(("month", month_bucket(aliased_column(metric.time_ref))))
        changed: list[str] = []
        for label, key in keys:
            b = slice_answers(wh, base.tree, base_params, key, metric.rounding, schema=schema)
            g = slice_answers(wh, gold.tree, gold_params, key, metric.rounding, schema=schema)
            for s in sorted(set(b) | set(g)):
                if b.get(s, "<suppressed>") != g.get(s, "<suppressed>"):
                    changed.append(f"{label}={s}" if key is not None else "all")
        return EdgeCheck(rule_id, metric.id, bool(changed), tuple(changed[:20]), len(keys))
    except DibenchError as exc:
        return EdgeCheck(rule_id, metric.id, False, (), 0, bounded_message(str(exc)))
