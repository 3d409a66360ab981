"""Counterfactual verification of rule -> metric edges, on the read-only path.

An edge is verified when applying the rule's operation to the metric's SQL changes the answer on
at least one slice: the whole time range, every value of each dimension of the metric, every
month, every value of each dimension in each month. The slices of a side come from one GROUPING
SETS statement, and `prefetch` computes the side without rules and every effect's side of a
metric in one scan (docs/architecture.md, "Ingest"); a statement that already groups, or
DIBENCH_GROUPED_PLAN=0, runs one per slice.
"""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError
from dibench.core.models import MetricSpec
from dibench.sqlops import sides
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.grouped import window_only_bounds_time
from dibench.sqlops.ops import AnyEffect, Bound, apply_effect
from dibench.sqlops.shape import group_by, hoist_row_subqueries, month_bucket
from dibench.sqlops.tree import aliased_column, column, outer_select
from dibench.stores.pack_data import WIDE, metric_window
from dibench.stores.warehouse import Warehouse, bounded_message


@dataclass(frozen=True)
class EdgeCheck:
    rule_id: str
    metric_id: str
    verified: bool
    changed_slices: tuple[str, ...]
    slices_checked: int
    error: str | None = None


def window_free(metric: MetricSpec, effects: list[tuple[str, AnyEffect]]) -> bool:
    """Whether neither the metric's SQL nor any of `effects` does more with the window than bound
    the time column (a rule may count accounts opened before :end_date)."""
    try:
        base = Bound(parse(metric.template, where=f"metric {metric.id}: sql"))
        trees = [base.tree] + [apply_effect(base, eff, metric, rule_id).tree for rule_id, eff in effects]
    except (DibenchError, ValueError):
        return False  # a derived metric, or an effect that fails: verify_effect says so on the edge
    time_col = aliased_column(metric.time_ref)
    return all(window_only_bounds_time(t, time_col) is None for t in trees)


def edge_window(wh: Warehouse, metric: MetricSpec, effects: list[tuple[str, AnyEffect]],
                windows: dict[str, tuple[dt.date, dt.date]], *, schema: str | None = None) -> tuple[dt.date, dt.date]:
    """The window edges are verified on: all of the metric's data. When the window does nothing
    but bound the time column (`window_free`), WIDE keeps exactly the rows [first day, day after
    last) keeps and spares a scan for them (grouped plan only; one statement per slice asks
    `metric_window`, once per metric in `windows`)."""
    if get_settings().grouped_plan and window_free(metric, effects):
        return WIDE
    if metric.id not in windows:
        windows[metric.id] = metric_window(wh, metric, schema=schema)
    return windows[metric.id]


def rounded(v: Any, digits: int) -> Any:
    if isinstance(v, float):
        return round(v, digits)
    return v


Keys = list[tuple[str, exp.Expression | None]]  # a key of two expressions is an exp.Tuple of them
BY_MONTH = " by month"  # the label of a dimension's key month by month: `region by month`
Answers = dict[str, dict[str, Any]]  # slice key label -> {slice: rounded value}
SideCache = dict[tuple[str, str], Answers]  # (SQL, parameters) of one side -> its answers, for some keys


def side_key(tree: exp.Expression, params: dict[str, Any]) -> tuple[str, str]:
    return render(tree), json.dumps(params, sort_keys=True, default=str)


def _grouped(k: exp.Expression) -> exp.Expression:
    """What a key is grouped by: a month key (TO_CHAR of a DATE_TRUNC) by the DATE_TRUNC."""
    return k.this if isinstance(k, exp.ToChar) else k


def grouping_sets(tree: exp.Expression, keys: Keys) -> exp.Expression:
    """One statement for every slice key: the keys of one expression, GROUPING() of them (which
    set a row is of) and the tree's projections, GROUP BY GROUPING SETS ((), (key1), ...,
    (key1, key3)). A month key is grouped by the DATE_TRUNC and formatted once per group, not once
    per row; a key of two expressions reuses the projections of its members."""
    tree = tree.copy()
    select = outer_select(tree)
    shown = [k for _, k in keys if k is not None and not isinstance(k, exp.Tuple)]
    grouped = [_grouped(k) for k in shown]
    sets = [exp.Tuple(expressions=[]) if k is None else
            exp.Tuple(expressions=[_grouped(m).copy() for m in k.expressions]) if isinstance(k, exp.Tuple) else
            exp.Paren(this=_grouped(k).copy()) for _, k in keys]
    select.set("expressions", [*[exp.alias_(e.copy(), f"k{i}") for i, e in enumerate(shown)],
                               exp.alias_(exp.func("GROUPING", *[e.copy() for e in grouped]), "grouping_set"),
                               *[p.copy() for p in select.expressions]])
    select.set("group", exp.Group(grouping_sets=[exp.GroupingSets(expressions=sets)]))
    return hoist_row_subqueries(tree)


def slice_label(values: list[Any]) -> str:
    """A slice of a key of two expressions is its two values, `value|month`."""
    return "|".join(str(v) for v in values)


def grouped_rows(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], keys: Keys,
                 *, schema: str | None = None) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(key label, slice, the tree's projections) of every row of the GROUPING SETS statement."""
    singles = [k for _, k in keys if k is not None and not isinstance(k, exp.Tuple)]
    exprs = len(singles)
    everything = (1 << exprs) - 1
    bits: dict[int, str] = {}
    members: dict[str, list[int]] = {}
    for label, key in keys:  # GROUPING(k0..kn) sets bit n-1-i when k_i is not in the row's set
        if key is None:
            bits[everything] = label
            continue
        members[label] = [singles.index(m) for m in key.expressions] if isinstance(key, exp.Tuple) \
            else [singles.index(key)]
        bits[everything & ~sum(1 << (exprs - 1 - i) for i in members[label])] = label
    res = wh.execute_readonly(render(grouping_sets(tree, keys)), params, schema=schema)
    out = []
    for r in res.rows:
        label = bits[r[exprs]]
        slice_ = slice_label([r[i] for i in members[label]]) if label in members else "all"
        out.append((label, slice_, tuple(r[exprs + 1:])))
    return out


def grouped_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], keys: Keys, digits: int,
                    *, schema: str | None = None) -> Answers:
    """What `slice_answers` gives for each key, from one GROUPING SETS statement."""
    out: Answers = {label: {} for label, _ in keys}
    for label, slice_, values in grouped_rows(wh, tree, params, keys, schema=schema):
        out[label][slice_] = rounded(values[0], digits)
    return out


def side_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], keys: Keys, digits: int,
                 *, schema: str | None = None, cache: SideCache | None = None) -> Answers:
    """Every slice key's answers for one side (from `cache` when `prefetch` computed them); one
    statement unless the tree already groups."""
    key = side_key(tree, params)
    hit = cache.get(key) if cache is not None else None
    if hit is not None and all(label in hit for label, _ in keys):
        return {label: hit[label] for label, _ in keys}
    if not get_settings().grouped_plan or outer_select(tree).args.get("group"):
        out = {label: slice_answers(wh, tree, params, k, digits, schema=schema) for label, k in keys}
    else:
        out = grouped_answers(wh, tree, params, keys, digits, schema=schema)
    if cache is not None:
        cache[key] = out
    return out


def slice_keys(metric: MetricSpec, tree: exp.Expression, effects: list[AnyEffect]) -> Keys:
    """The whole window, each dimension the metric (or an effect's condition) slices by, each month,
    and each dimension's values month by month: a task asks for one value over whole months, and a
    rule that bites only on small groups (a minimum group size) bites first on one month's."""
    keys: Keys = [("all", None)]
    dims = list(metric.dimensions)
    for eff in effects:
        if eff.applies_when and eff.applies_when.dimension not in dims:
            dims.append(eff.applies_when.dimension)
    keys += [(d, column(tree, d)) for d in dims]
    month = month_bucket(aliased_column(metric.time_ref))
    keys.append(("month", month))
    keys += [(f"{d}{BY_MONTH}", exp.Tuple(expressions=[column(tree, d), month.copy()])) for d in dims]
    return keys


def prefetch(wh: Warehouse, metric: MetricSpec, effects: list[tuple[str, AnyEffect]],
             window: tuple[dt.date, dt.date], cache: SideCache, *, schema: str | None = None) -> None:
    """The answers of the metric without rules and under each effect, every slice, in one scan
    (sqlops/sides.py), into `cache` for `verify_effect`. An effect that is more than a row filter,
    a value and a HAVING (or fails to apply) is left to `verify_effect` alone."""
    if not get_settings().grouped_plan:
        return
    base = Bound(parse(metric.template, where=f"metric {metric.id}: sql"))
    base_params = {"start_date": window[0], "end_date": window[1], **metric.params}
    variants = [(base.tree, base_params)]
    for rule_id, eff in effects:
        try:
            gold = apply_effect(base, eff, metric, rule_id)
        except DibenchError:
            continue  # verify_effect records the error on the edge
        variants.append((gold.tree, {**base_params, **gold.params}))
    members: list[tuple[exp.Expression, dict[str, Any]]] = []
    parts: list[sides.Side] = []
    for tree, params in variants:
        part = sides.side(base.tree, tree, params, len(parts))
        if not isinstance(part, str):
            members.append((tree, params))
            parts.append(part)
    if len(parts) < 2:
        return
    keys = slice_keys(metric, base.tree, [eff for _, eff in effects])
    params = dict(base_params)
    for part in parts:
        params.update(part.params)
    answers: list[Answers] = [{label: {} for label, _ in keys} for _ in parts]
    for label, slice_, values in grouped_rows(wh, sides.combined(base.tree, parts), params, keys, schema=schema):
        for i, out in enumerate(answers):
            value, rows, having = values[3 * i: 3 * i + 3]
            # A WHERE that keeps no row of a group yields no group; HAVING drops the groups it fails.
            if having is True and (rows > 0 or label == "all"):
                out[label][slice_] = rounded(value, metric.rounding)
    for (tree, params), out in zip(members, answers):
        cache[side_key(tree, params)] = out


def slice_answers(wh: Warehouse, tree: exp.Expression, params: dict[str, Any], key: exp.Expression | None,
                  digits: int, *, schema: str | None = None) -> dict[str, Any]:
    """{slice label: rounded value}; a missing group (suppressed) is absent from the dict."""
    if key is None:
        res = wh.execute_readonly(render(tree), params, schema=schema)
        return {"all": rounded(res.rows[0][0], digits)} if res.rows else {}
    if isinstance(key, exp.Tuple):
        first, second = key.expressions
        shaped = group_by(group_by(tree, first, "k0", with_count=False), second, "k1", with_count=False)
        res = wh.execute_readonly(render(shaped), params, schema=schema)
        return {slice_label([r[1], r[0]]): rounded(r[2], digits) for r in res.rows}
    res = wh.execute_readonly(render(group_by(tree, key, with_count=False)), params, schema=schema)
    return {str(r[0]): rounded(r[1], digits) for r in res.rows}


UNIT_RATIO = 20.0  # the rule's value this many times the metric's (or less) on every slice: another unit


def value_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float, Decimal)):
        return "number"
    if isinstance(v, dt.timedelta):
        return "interval"
    return type(v).__name__


def value_problem(metric: MetricSpec, before: Answers, after: Answers) -> str | None:
    """An effect whose value is of another type than the metric's (an interval where the metric is
    a number of hours), or of another unit on every slice (60 times larger throughout), does not
    refine the metric: it replaces it with another quantity, and the edge is not verified."""
    pairs = [(b[s], after[label][s]) for label, b in before.items() for s in b
             if s in after.get(label, {}) and b[s] is not None and after[label][s] is not None]
    base = {value_kind(x) for x, _ in pairs}
    rule = {value_kind(y) for _, y in pairs}
    if base and rule - base:
        return (f"the rule's values are of type {sorted(rule - base)[0]} where metric {metric.id}'s are of type "
                f"{sorted(base)[0]} ({getattr(metric.unit, 'value', metric.unit)}): its type or unit differs")
    ratios = [float(y) / float(x) for x, y in pairs if value_kind(x) == value_kind(y) == "number" and float(x) != 0]
    if len(ratios) >= 3 and (all(r >= UNIT_RATIO for r in ratios) or all(0 < r <= 1 / UNIT_RATIO for r in ratios)):
        return (f"the rule's value differs from metric {metric.id}'s by a factor of at least {UNIT_RATIO:g} on every "
                f"slice ({getattr(metric.unit, 'value', metric.unit)}): another unit, not a refinement")
    return None


def verify_effect(wh: Warehouse, metric: MetricSpec, rule_id: str, eff: AnyEffect,
                  window: tuple[dt.date, dt.date] | None = None, *, schema: str | None = None,
                  cache: SideCache | None = None) -> EdgeCheck:
    """Verify one edge; `schema` is the pack's (its read-only role runs every statement); `cache`
    holds the sides `prefetch` computed and shares the side without the rule between edges. A
    failure is kept on the edge as a bounded one-line message: SQL errors are already value-free."""
    try:
        base = Bound(parse(metric.template, where=f"metric {metric.id}: sql"))
        gold = apply_effect(base, eff, metric, rule_id)
        lo, hi = window or metric_window(wh, metric, schema=schema)
        base_params = {"start_date": lo, "end_date": hi, **metric.params}
        gold_params = {**base_params, **gold.params}
        keys = slice_keys(metric, base.tree, [eff])
        changed: list[str] = []
        before = side_answers(wh, base.tree, base_params, keys, metric.rounding, schema=schema, cache=cache)
        after = side_answers(wh, gold.tree, gold_params, keys, metric.rounding, schema=schema, cache=cache)
        for label, key in keys:
            b, g = before[label], after[label]
            for s in sorted(set(b) | set(g)):
                if b.get(s, "<suppressed>") != g.get(s, "<suppressed>"):
                    changed.append(f"{label}={s}" if key is not None else "all")
        problem = value_problem(metric, before, after)
        if problem:
            return EdgeCheck(rule_id, metric.id, False, tuple(changed[:20]), len(keys), problem)
        return EdgeCheck(rule_id, metric.id, bool(changed), tuple(changed[:20]), len(keys))
    except DibenchError as exc:
        return EdgeCheck(rule_id, metric.id, False, (), 0, bounded_message(str(exc)))
