"""The grouped plan of a skeleton's analyses (issue 15): every analysis statement of a metric under
one rule set reads one partials statement (per group and month, the whole data window, run once
and cached by the Executor), and is answered by its own shape over those partials in
PostgreSQL (sqlops/grouped.py says why that is exact). The stored gold SQL stays the original
statement; only how its rows are obtained changes. When a statement cannot be planned so, the
reason is returned and the caller runs the original statement (`Executor.plan_log` keeps the
path of every statement, so each task records the path its analysis took)."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from service.warehouse import QueryResult
from sqlops import grouped
from sqlops.dialect import render

if TYPE_CHECKING:  # grounding imports this module
    from generation.grounding import Context

Shape = Any  # Callable[[exp.Expression], exp.Expression]; grounding.Shape, without the import cycle


@dataclass(frozen=True)
class Partials:
    """The partial rows of a metric under one rule set, columnwise, and the proxy's `value`."""

    columns: dict[str, list[Any]]
    types: dict[str, str]
    value: exp.Expression  # grouped.no_value() when only the row counts are exact
    params: dict[str, Any]  # the metric's and the rules': placeholders outside aggregates stay in `value`
    why: str | None = None  # why the value cannot be recombined (the row counts still serve top values)


def month_aligned(window: tuple[dt.date, dt.date]) -> bool:
    return window[0].day == 1 and window[1].day == 1


def partials(ctx: Context, rule_ids: frozenset[str], value_needed: bool = True) -> Partials | str:
    """The partials of the skeleton's metric under `rule_ids` over the data window, or why not;
    without `value_needed` (top values), the row counts of a metric whose value does not decompose."""
    if ctx.metric.derived is not None:
        return "derived metric (joined components)"
    part = ctx.under(rule_ids)[0]
    why = grouped.window_only_bounds_time(part.bound.tree, ctx.time(part.bound.tree))
    if why is not None:
        return why
    d = grouped.decompose(part.bound.tree)
    if isinstance(d, str) and value_needed:
        return d
    categorical = ctx.skeleton.dimension_type != "temporal"
    tree = grouped.partials_query(part.bound.tree, None if isinstance(d, str) else d,
                                  ctx.dim(part.bound.tree) if categorical else None, ctx.time(part.bound.tree))
    params = {**ctx.window_params(ctx.data_window), **part.bound.params}
    sql = render(tree)
    return ctx.ex.remember(("partials", sql, json.dumps(params, sort_keys=True, default=str)),
                           lambda: typed(ctx.ex.run(sql, params, cache=False), d, params))


def typed(res: QueryResult, d: grouped.Decomposed | str, params: dict[str, Any]) -> Partials | str:
    """The partial rows with their exact array types; the value recombined, unless `d` says why
    not or a partial is a float (then the group, month and row count columns only)."""
    columns = {c: [r[i] for r in res.rows] for i, c in enumerate(res.columns)}
    types: dict[str, str] = {}
    why = d if isinstance(d, str) else None
    for name, values in columns.items():
        t = grouped.column_type(values)
        if t is None:
            why = why or f"partial {name} is not integer or numeric (a float sum is not exact)"
            if name in (grouped.GROUP, grouped.PERIOD, grouped.ROWS):
                return why
            continue
        types[name] = t
    if why is not None or isinstance(d, str):
        keep = (grouped.GROUP, grouped.PERIOD, grouped.ROWS)
        return Partials({c: columns[c] for c in keep}, {c: types[c] for c in keep}, grouped.no_value(), params,
                        why)
    return Partials(columns, types, grouped.recombine(d, types), params)


def answer(ctx: Context, rule_ids: frozenset[str], shape: Shape, window: tuple[dt.date, dt.date],
           extra: dict[str, Any]) -> QueryResult | str:
    """The rows `shape(metric under rule_ids)` returns in `window`, from the partials; or why the
    original statement must run instead."""
    if not month_aligned(window):
        return "window not aligned on months"
    probe = shape(grouped.proxy_query(grouped.no_value(), {grouped.GROUP: "TEXT"}))
    p = partials(ctx, rule_ids, value_needed=grouped.needs_value(probe))
    if isinstance(p, str):
        return p
    tree = grouped.count_rows(shape(grouped.proxy_query(p.value, p.types)))
    if p.why is not None and grouped.needs_value(tree):
        return p.why
    first, last = f"{window[0]:%Y-%m}", f"{window[1]:%Y-%m}"
    keep = [i for i, period in enumerate(p.columns[grouped.PERIOD]) if first <= period < last]
    params = {**p.params, **extra, **{grouped.PARAM_PREFIX + c: [v[i] for i in keep] for c, v in p.columns.items()}}
    return ctx.ex.run(render(tree), params, cache=False)
