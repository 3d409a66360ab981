"""Counterfactual verification of rule -> metric edges.

An edge is verified when applying the rule's operation to the metric's SQL changes the
computed answer on at least one realistic slice of the data: the whole time range, every
value of each dimension the metric may be sliced by, and every month. All slices of one side
(the metric without and with the rule) come from one statement, GROUP BY GROUPING SETS of the
slice keys (issue 15): each grouping set aggregates the same rows with the same expression as a
GROUP BY of its key alone would, HAVING included, so the answers are those of one statement per
slice. A statement that already groups falls back to one statement per slice, and so does every
statement with DIBENCH_GROUPED_PLAN=0 (the path before issue 15). The side without
the rule is shared by every edge of the metric (`BaseCache`). All statements run on the
read-only path.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from service.config import get_settings
from service.errors import DibenchError
from service.models import MetricSpec
from service.warehouse import Warehouse, bounded_message
from sqlops.dialect import parse, render
from sqlops.ops import AnyEffect, Bound, apply_effect
from sqlops.shape import group_by, month_bucket, time_bounds
from sqlops.tree import aliased_column, column, outer_select, value_projection

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


Keys = list[tuple[str, exp.Expression | None]]
Answers = dict[str, dict[str, Any]]  # slice key label -> {slice: rounded value}
BaseCache = dict[tuple[str, str], Answers]  # (SQL, parameters) of the side without the rule -> its answers


def grouping_sets(tree: exp.Expression, keys: Keys) -> exp.Expression:
    """One statement for every slice key: the keys, GROUPING() of them (which set a row is of) and
    the value, GROUP BY GROUPING SETS ((), (key1), ...)."""
    tree = tree.copy()
    select = outer_select(tree)
    exprs = [k for _, k in keys if k is not None]
    sets = [exp.Tuple(expressions=[]) if k is None else exp.Paren(this=k.copy()) for _, k in keys]
    select.set("expressions", [*[exp.alias_(e.copy(), f"k{i}") for i, e in enumerate(exprs)],
                               exp.alias_(exp.func("GROUPING", *[e.copy() for e in exprs]), "grouping_set"),
                               value_projection(tree).copy()])
    select.set("group", exp.Group(grouping_sets=[exp.GroupingSets(expressions=sets)]))
    return tree


def grouped_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], keys: Keys, digits: int,
                    *, schema: str | None = None) -> Answers:
    """What `slice_answers` gives for each key, from one GROUPING SETS statement."""
    exprs = len([k for _, k in keys if k is not None])
    everything = (1 << exprs) - 1
    bits: dict[int, str] = {}
    i = 0
    for label, key in keys:  # GROUPING(k0..kn) sets bit n-1-i when k_i is not in the row's set
        if key is None:
            bits[everything] = label
        else:
            bits[everything & ~(1 << (exprs - 1 - i))] = label
            i += 1
    res = wh.execute_readonly(render(grouping_sets(tree, keys)), params, schema=schema)
    out: Answers = {label: {} for label, _ in keys}
    positions = {label: n for n, label in enumerate(label for label, k in keys if k is not None)}
    for r in res.rows:
        label = bits[r[exprs]]
        value = rounded(r[exprs + 1], digits)
        if label in positions:
            out[label][str(r[positions[label]])] = value
        else:
            out[label]["all"] = value
    return out


def side_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], keys: Keys, digits: int,
                 *, schema: str | None = None, cache: BaseCache | None = None) -> Answers:
    """Every slice key's answers for one side; one statement unless the tree already groups."""
    key = (render(tree), json.dumps([params, [label for label, _ in keys]], sort_keys=True, default=str))
    if cache is not None and key in cache:
        return cache[key]
    if not get_settings().grouped_plan or outer_select(tree).args.get("group"):
        out = {label: slice_answers(wh, tree, params, k, digits, schema=schema) for label, k in keys}
    else:
        out = grouped_answers(wh, tree, params, keys, digits, schema=schema)
    if cache is not None:
        cache[key] = out
    return out


def slice_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], key: exp.Expression | None,
                  digits: int, *, schema: str | None = None) -> dict[str, Any]:
    """{slice label: rounded value}; a missing group (suppressed) is absent from the dict."""
    if key is None:
        res = wh.execute_readonly(render(tree), params, schema=schema)
        return {"all": rounded(res.rows[0][0], digits)} if res.rows else {}
    res = wh.execute_readonly(render(group_by(tree, key, with_count=False)), params, schema=schema)
    return {str(r[0]): rounded(r[1], digits) for r in res.rows}


def verify_effect(wh: Warehouse, metric: MetricSpec, rule_id: str, eff: AnyEffect,
                  window: tuple[dt.date, dt.date] | None = None, *, schema: str | None = None,
                  cache: BaseCache | None = None) -> EdgeCheck:
    """Verify one edge; `schema` is the pack's (its read-only role runs every statement); `cache`
    shares the side without the rule between the edges of one ingest. A failure is kept on the
    edge as a bounded one-line message: SQL errors are already value-free."""
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
        before = side_answers(wh, base.tree, base_params, keys, metric.rounding, schema=schema, cache=cache)
        after = side_answers(wh, gold.tree, gold_params, keys, metric.rounding, schema=schema)
        for label, key in keys:
            b, g = before[label], after[label]
            for s in sorted(set(b) | set(g)):
                if b.get(s, "<suppressed>") != g.get(s, "<suppressed>"):
                    changed.append(f"{label}={s}" if key is not None else "all")
        return EdgeCheck(rule_id, metric.id, bool(changed), tuple(changed[:20]), len(keys))
    except DibenchError as exc:
        return EdgeCheck(rule_id, metric.id, False, (), 0, bounded_message(str(exc)))
