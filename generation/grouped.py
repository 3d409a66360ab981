"""The grouped plan of a skeleton's analyses: each analysis statement of a metric under one rule
set is answered by its own shape over partial aggregates from one scan (a partials statement, a
cube of every rule set and dimension, or (group, month) cells), cached by the Executor; or the
reason it cannot be, and then the caller runs one statement for every rule set (`batched`) or
the original statement. The stored gold SQL is always the original statement. How and why it is
exact: docs/architecture.md, "Grounding".
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, Protocol, TypeVar

from sqlglot import exp

from dibench.core.errors import DibenchError, ServiceError
from dibench.core.models import MetricSpec
from dibench.generation.executor import Executor, Part, Shape
from dibench.generation.skeletons import Skeleton
from dibench.sqlops import distinct, grouped, sides
from dibench.sqlops.dialect import render
from dibench.sqlops.shape import N_ALIAS, group_by, month_bucket, rename_placeholders
from dibench.sqlops.tree import column, outer_select
from dibench.stores.warehouse import QueryResult

T = TypeVar("T")


class Context(Protocol):
    """What the grouped plan reads of one analysis of one skeleton (`generation.grounding.Context`)."""

    metric: MetricSpec
    skeleton: Skeleton
    ex: Executor
    data_window: tuple[dt.date, dt.date]

    @property
    def featured(self) -> str | None: ...

    def under(self, rule_ids: frozenset[str]) -> tuple[Part, ...]: ...

    def policy_key(self, rule_ids: frozenset[str] | None = None) -> tuple[Any, ...]: ...

    def shaped(self, shape: Shape, what: str, build: Callable[[], T]) -> T: ...

    def time(self, tree: exp.Expression) -> exp.Expression: ...

    def dim(self, tree: exp.Expression) -> exp.Expression: ...

    def window_params(self, window: tuple[dt.date, dt.date]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Partials:
    """The partial rows of a metric under one rule set, columnwise, and the proxy's `value`."""

    columns: dict[str, list[Any]]
    types: dict[str, str]
    value: exp.Expression  # grouped.no_value() when only the row counts are exact
    params: dict[str, Any]  # the metric's and the rules': placeholders outside aggregates stay in `value`
    why: str | None = None  # why the value cannot be recombined (the row counts still serve top values)
    key: Hashable = None  # what these partials are in the Executor's cache: answers from them are cached under it
    having: exp.Expression | None = None  # the statement's HAVING over the partials (no_value() when not exact)


def month_aligned(window: tuple[dt.date, dt.date]) -> bool:
    return window[0].day == 1 and window[1].day == 1


def partials(ctx: Context, rule_ids: frozenset[str], value_needed: bool = True) -> Partials | str:
    """The partials of the skeleton's metric under `rule_ids` over the data window, or why not;
    without `value_needed` (top values), the row counts of a metric whose value does not decompose."""
    if ctx.metric.derived is not None:
        return "derived metric (joined components)"
    wanted = (frozenset(rule_ids), group_label(ctx))
    hit = cube(ctx).get(wanted)
    if hit is None and wanted[0] in pair_sets(ctx):
        hit = pairs_cube(ctx).get(wanted)
    if hit is not None:
        return hit
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
    key = ("partials", sql, json.dumps(params, sort_keys=True, default=str))
    having = has_having(part.bound.tree)
    return ctx.ex.remember(key, lambda: keyed(typed(ctx.ex.run(sql, params, cache=False, exact=True), d, params,
                                                    having), key), pin=True)


def has_having(tree: exp.Expression) -> bool:
    return outer_select(tree).args.get("having") is not None


def keyed(p: Partials | str, key: Hashable) -> Partials | str:
    return replace(p, key=key) if isinstance(p, Partials) else p


def typed(res: QueryResult, d: grouped.Decomposed | str, params: dict[str, Any], having: bool) -> Partials | str:
    return typed_columns({c: [r[i] for r in res.rows] for i, c in enumerate(res.columns)}, d, params, having)


def typed_columns(columns: dict[str, list[Any]], d: grouped.Decomposed | str, params: dict[str, Any],
                  having: bool) -> Partials | str:
    """The partial rows with their exact array types; the value (and the HAVING, which the
    statement has if `having`) recombined, unless `d` says why not, a partial is a float or a
    distinct count in the HAVING is not decided by the cells (then the group, month and row
    count columns only, and a HAVING no shape can keep)."""
    types: dict[str, str] = {}
    why = d if isinstance(d, str) else None
    for name, values in columns.items():
        t = grouped.column_type(values, grouped.EMPTY_TYPES.get(name, "NUMERIC"))
        if t is None:
            why = why or f"partial {name} is not integer or numeric (a float sum is not exact)"
            if name in (grouped.GROUP, grouped.PERIOD, grouped.ROWS):
                return why
            continue
        types[name] = t
    having_template = None
    if why is None and not isinstance(d, str) and d.having is not None:
        decided = grouped.decide_having(d, columns, params)  # a suppression by a distinct count
        why, having_template = (decided, None) if isinstance(decided, str) else (None, decided)
    if why is not None or isinstance(d, str):
        keep = (grouped.GROUP, grouped.PERIOD, grouped.ROWS)
        return Partials({c: columns[c] for c in keep}, {c: types[c] for c in keep}, grouped.no_value(), params,
                        why, having=grouped.no_value() if having else None)
    cells_only = {p.name for p in d.partials if p.kind == "distinct"}  # decided above, not passed on
    return Partials({c: v for c, v in columns.items() if c not in cells_only},
                    {c: t for c, t in types.items() if c not in cells_only}, grouped.recombine(d, types), params,
                    having=None if having_template is None else grouped.recombine(d, types, having_template))


# ------------------------------------------------------------------------------ one cube per metric
CubeKey = tuple[frozenset[str], str | None]  # (rule set, dimension; None: by month only)


def group_label(ctx: Context) -> str | None:
    return ctx.skeleton.dimension if ctx.skeleton.dimension_type != "temporal" else None


def rule_sets(ctx: Context) -> list[frozenset[str]]:
    """What the analyses of any skeleton of the metric ask for: no rule, the whole policy, and
    the policy without each of its rules (decisive rules, the answer without the featured rule)."""
    policy = frozenset(r.rule_id for r in ctx.skeleton.policy)
    return list(dict.fromkeys([frozenset(), policy, *[policy - {r} for r in sorted(policy)]]))


def pair_sets(ctx: Context) -> list[frozenset[str]]:
    """What a rule task's variants ask for beyond `rule_sets`: the policy without its featured
    rule and one other (the answer with the featured rule lifted, one more rule excluded); none
    with fewer than three rules (the policy without two of two is the no-rule set)."""
    if ctx.featured is None or all(r.rule_id != ctx.featured for r in ctx.skeleton.policy):
        return []
    return [s for s in every_pair(ctx) if ctx.featured not in s]


def cube(ctx: Context) -> dict[CubeKey, Partials | str]:
    """The partials of the skeleton's metric for every rule set of `rule_sets` and every dimension,
    from one statement, computed once per run (empty: no cube for this metric)."""
    key = ("cube", *ctx.policy_key(), tuple(ctx.metric.dimensions), ctx.data_window)
    return ctx.ex.remember(key, lambda: _cube(ctx, key, rule_sets(ctx), ctx.metric.dimensions), pin=True)


def every_pair(ctx: Context) -> list[frozenset[str]]:
    """The policy without any two of its rules: `pair_sets` of every featured rule of the policy."""
    policy = sorted(r.rule_id for r in ctx.skeleton.policy)
    if len(policy) < 3:
        return []
    return [frozenset(policy) - {a, b} for a, b in combinations(policy, 2)]


def pairs_cube(ctx: Context) -> dict[CubeKey, Partials | str]:
    """The partials of every rule set of `every_pair` by every dimension and by month, from one
    statement, computed once per run when a variant first asks for one of `pair_sets`: one scan
    for the rule tasks of every featured rule and dimension of the metric (at 1M tickets, 3.4 s
    for the SLA attainment's three rules, against 1.3-1.7 s for each of the six pairs of a
    featured rule and a dimension that asked for one)."""
    key = ("pairs", *ctx.policy_key(), tuple(ctx.metric.dimensions), ctx.data_window)
    return ctx.ex.remember(key, lambda: _cube(ctx, key, every_pair(ctx), ctx.metric.dimensions), pin=True)


def _cube(ctx: Context, key: Hashable, sets: list[frozenset[str]],
          dimensions: list[str]) -> dict[CubeKey, Partials | str]:
    base = ctx.under(frozenset())[0].bound.tree
    if grouped.window_only_bounds_time(base, ctx.time(base)) is not None:
        return {}
    window = ctx.window_params(ctx.data_window)
    members: list[tuple[frozenset[str], grouped.Decomposed | str, dict[str, Any], bool]] = []
    cube_sides: list[grouped.CubeSide] = []
    params = dict(window)
    for rule_set in sets:
        try:
            bound = ctx.under(rule_set)[0].bound
        except DibenchError:
            continue  # the statement of that rule set reports it
        own = {**window, **bound.params}
        i = len(members)
        side = sides.side(base, bound.tree, own, i)
        if isinstance(side, str) or grouped.window_only_bounds_time(bound.tree, ctx.time(bound.tree)) is not None:
            continue
        renamed = grouped.decompose(rename_placeholders(bound.tree, f"s{i}_", sides.WINDOW))
        if isinstance(renamed, str) and side.having is not None:
            continue  # a HAVING the partials cannot apply: its row counts would serve nothing
        members.append((rule_set, grouped.decompose(bound.tree), own, side.having is not None))
        cube_sides.append(grouped.CubeSide(side.rows, None if isinstance(renamed, str) else renamed))
        params.update(side.params)
    dims: list[tuple[str, Any]] = []
    for name in dimensions:
        try:
            dims.append((name, column(base, name)))
        except DibenchError:
            continue
    if not members:
        return {}
    months = grouped.month_params(ctx.data_window)
    sql = render(grouped.cube_query(base, cube_sides, [d for _, d in dims], ctx.time(base), list(months), params))
    try:
        res = ctx.ex.run(sql, {**params, **months}, cache=False, exact=True)
    except ServiceError:
        raise  # the server is out of reach: no smaller statement would fare better
    except DibenchError:
        # The cube is a shortcut: one that fails (its statement timed out on a loaded server) leaves
        # each rule set to its own, smaller partials statement, which reports its own errors.
        return {}
    at = {c: i for i, c in enumerate(res.columns)}
    if any(r[at[grouped.PERIOD]] is None for r in res.rows):
        return {}  # a row outside the months of the data window (cube_query): as a failed cube
    by_set: dict[int | None, list[tuple[Any, ...]]] = {}
    for r in res.rows:
        by_set.setdefault(grouped.cube_set(r[at[grouped.SET]], len(dims)) if dims else None, []).append(r)
    out: dict[CubeKey, Partials | str] = {}
    for j, set_rows in by_set.items():
        for i, (rule_set, d, own, having) in enumerate(members):
            n = at[f"{grouped.ROWS}{i}"]
            kept = [r for r in set_rows if r[n] > 0]  # no row of this rule set: no group, as its WHERE
            columns = {grouped.GROUP: [r[at[f"k{j}"]] if j is not None else None for r in kept],
                       grouped.PERIOD: [r[at[grouped.PERIOD]] for r in kept],
                       grouped.ROWS: [r[n] for r in kept]}
            decomposed = cube_sides[i].decomposed
            for p in decomposed.partials if decomposed is not None else ():
                columns[p.name] = [r[at[f"s{i}_{p.name}"]] for r in kept]
            label = dims[j][0] if j is not None else None
            out[(rule_set, label)] = keyed(typed_columns(columns, d, own, having), (key, rule_set, label))
    return out


def answer(ctx: Context, rule_ids: frozenset[str], shape: Shape, window: tuple[dt.date, dt.date],
           extra: dict[str, Any]) -> QueryResult | str:
    """The rows `shape(metric under rule_ids)` returns in `window`, from the partials; or why the
    original statement must run instead."""
    if not month_aligned(window):
        return "window not aligned on months"
    value_needed, cells_shape, period = ctx.shaped(shape, "probe", lambda: probe(ctx, shape))
    p = partials(ctx, rule_ids, value_needed=value_needed)
    if not isinstance(p, str):
        tree = grouped.count_rows(shape(grouped.proxy_query(p.value, p.types, p.having)))
        if p.why is None or not grouped.needs_value(tree):
            return _answer(ctx, p, tree, window, extra, period)
    why = p if isinstance(p, str) else str(p.why)  # p.why is set: the value was needed
    if cells_shape:
        c = cells(ctx, rule_ids)
        if c is not None:
            return _answer(ctx, c, grouped.count_rows(shape(grouped.proxy_query(c.value, c.types))), window, extra,
                           period)
    return why


def probe(ctx: Context, shape: Shape) -> tuple[bool, bool, int | None]:
    """Whether `shape` keeps the metric's value, whether its groups are (group, month) cells
    (sqlops.grouped.one_cell_per_group), and the index of its month column when each of its rows
    is computed from one cell alone (sqlops.grouped.cell_rows_period), read from the shape of a
    proxy without partials."""
    tree = shape(grouped.proxy_query(grouped.no_value(), {grouped.GROUP: "TEXT"}))
    by_group = group_label(ctx) is not None
    return grouped.needs_value(tree), grouped.one_cell_per_group(tree, by_group), \
        grouped.cell_rows_period(tree, by_group)


def _answer(ctx: Context, p: Partials, tree: exp.Expression, window: tuple[dt.date, dt.date],
            extra: dict[str, Any], period: int | None) -> QueryResult:
    """The rows of the shaped proxy `tree` over the partial rows `p` of the months of `window`.
    When each row is computed from one cell, `period` its month column (`probe`: a monthly
    series), the rows over every month are computed once and each window keeps its months' rows
    (a rule task's significance test tries up to ten windows, most with the same two groups)."""
    sql = render(tree)
    first, last = f"{window[0]:%Y-%m}", f"{window[1]:%Y-%m}"
    extra_key = json.dumps(extra, sort_keys=True, default=str)

    def run(first: str, last: str) -> QueryResult:
        keep = [i for i, period in enumerate(p.columns[grouped.PERIOD]) if first <= period < last]
        params = {**p.params, **extra, **{grouped.PARAM_PREFIX + c: [v[i] for i in keep] for c, v in p.columns.items()}}
        return ctx.ex.run(sql, params, cache=False, exact=True)

    if period is not None:
        every = ctx.ex.remember(("answer", p.key, sql, None, extra_key), lambda: run("", "~"))
        return QueryResult(every.columns, [r for r in every.rows if r[period] is not None and first <= r[period] < last],
                           every.elapsed_s)
    # The same answer for the same shape of the same partials (the policy variants of one analysis
    # ask for the answer without rules again), computed once.
    return ctx.ex.remember(("answer", p.key, sql, window, extra_key), lambda: run(first, last))


# ------------------------------------------------------------------------------ cells
def cells(ctx: Context, rule_ids: frozenset[str]) -> Partials | None:
    """The metric under `rule_ids` per (group, month) over the data window, each cell's value and
    row count as the metric's own statement grouped so returns them, from the one statement that
    answers every rule set (`batched`; a cell its HAVING rejects is left out, as that statement
    leaves its group out). For the shapes whose groups are cells (a per-month series of two
    groups: sqlops.grouped.one_cell_per_group) when the value does not decompose; None when
    the statements do not combine or the cells cannot be passed back exactly. Every group in
    every month costs more than two groups in one year (4.7 s against 1 s for a waiting time at
    1M tickets): a skeleton without a featured rule, which asks once, reads cells only when
    they are there already; a rule task tries several windows until its rule is decisive."""
    label = group_label(ctx)
    key = ("cells", *ctx.policy_key(), label, ctx.data_window)
    if ctx.featured is None and not ctx.ex.known((key, rule_ids)):
        return None

    def shape(t: exp.Expression) -> exp.Expression:
        if label is not None:
            t = group_by(t, ctx.dim(t), alias=grouped.GROUP)
        return group_by(t, month_bucket(ctx.time(t)), alias=grouped.PERIOD, copy=label is None)

    def build() -> Partials | None:
        if ctx.metric.derived is not None:
            return None
        for tree in (ctx.under(frozenset())[0].bound.tree, ctx.under(rule_ids)[0].bound.tree):
            if grouped.window_only_bounds_time(tree, ctx.time(tree)) is not None:
                return None  # cells over the data window would not be the window's
        res = batched(ctx, rule_ids, shape, ctx.data_window, {}, exact=True)
        if res is None:
            return None
        at = {c: i for i, c in enumerate(res.columns)}
        columns = {grouped.GROUP: [r[at[grouped.GROUP]] if label is not None else None for r in res.rows],
                   grouped.PERIOD: [r[at[grouped.PERIOD]] for r in res.rows],
                   grouped.ROWS: [r[at[N_ALIAS]] for r in res.rows],
                   grouped.CELL: [r[at["value"]] for r in res.rows]}
        types: dict[str, str] = {}
        for name, values in columns.items():
            t = grouped.cell_type(values, grouped.EMPTY_TYPES.get(name, "NUMERIC"))
            if t is None:
                return None
            types[name] = t
        return Partials(columns, types, grouped.cell_value(), {}, key=(key, rule_ids))

    return ctx.ex.remember((key, rule_ids), build, pin=True)


# ------------------------------------------------------------------------------ one statement, every rule set
def batched(ctx: Context, rule_ids: frozenset[str], shape: Shape, window: tuple[dt.date, dt.date],
            extra: dict[str, Any], exact: bool = False) -> QueryResult | None:
    """What `shape(metric under rule_ids)` returns in `window`, from one statement that answers the
    shape under every rule set of `rule_sets` at once (sqlops/sides.py: each rule set's row filter
    as a FILTER on its aggregates, with its row count and HAVING as columns); or None when the
    statements cannot be combined so. For the metrics the partials cannot answer (distinct
    counts, percentiles, HAVING): one scan instead of one per rule set. Rows come back as the
    rule set's own statement returns them: its columns, its groups (a group no row of the rule
    set reaches, or one its HAVING rejects, is left out)."""
    if ctx.metric.derived is not None:
        return None
    combined = ctx.ex.remember(("combined", *ctx.policy_key()), lambda: _combined(ctx), pin=True)
    if combined is None or rule_ids not in combined[0]:
        return None
    members, tree, own = combined
    window_params = {**ctx.window_params(window), **extra}
    params = dict(window_params)
    for i, bound_params in enumerate(own):
        params.update(sides.side_params({**window_params, **bound_params}, i))
    months = grouped.month_params(window)  # a month key pre-aggregated joins them (`pre_aggregate`)
    rendered = ctx.shaped(shape, f"batched {len(months)}",
                          lambda: _shaped_combined(ctx, shape, tree, len(members), list(months)))
    if rendered is None:
        return None
    sql, names, ungrouped, joins_months = rendered
    if joins_months:
        params.update(months)

    def split() -> dict[frozenset[str], QueryResult] | None:
        try:
            res = ctx.ex.run(sql, params, cache=False, exact=exact)
        except ServiceError:
            raise
        except DibenchError:
            return None  # as a failed cube: each rule set's own statement runs (and reports its errors)
        at = {c: i for i, c in enumerate(res.columns)}
        out = {}
        for i, rule_set in enumerate(members):
            v, e, h = at[f"v{i}"], at[f"e{i}"], at[f"h{i}"]
            pick = [v if n == "value" else e if n == N_ALIAS else at[n] for n in names]
            rows = [tuple(r[k] for k in pick) for r in res.rows if r[h] is True and (ungrouped or r[e] > 0)]
            out[rule_set] = QueryResult(names, rows, res.elapsed_s)
        return out

    answers = ctx.ex.remember(("batched", sql, json.dumps(params, sort_keys=True, default=str), exact), split)
    return answers[rule_ids] if answers is not None else None


def _shaped_combined(ctx: Context, shape: Shape, tree: exp.Expression, members: int,
                     months: list[str]) -> tuple[str, list[str], bool, bool] | None:
    """The combined statement `tree` shaped: its SQL (its distinct counts pre-aggregated when
    that is faster: `pre_aggregate`), the columns each rule set's rows keep, whether it is
    ungrouped, and whether it reads the placeholders `months` (the window's months); None when
    the shape does not apply to it."""
    try:
        shaped = shape(tree)
    except DibenchError:
        return None
    columns = [p.alias_or_name for p in outer_select(shaped).expressions]
    if "v0" not in columns:
        return None
    first = columns.index("v0")
    names = [*columns[:first], "value", *columns[first + 3 * members:]]
    fast = pre_aggregate(ctx, shaped, months)
    joins_months = any(p.name in months for p in fast.find_all(exp.Placeholder))
    return render(fast), names, not outer_select(shaped).args.get("group"), joins_months


# Pre-aggregation pays from about this many rows per distinct value (sqlops/distinct.py): faster
# at 210 (agents of tickets: 1.8 s -> 1.0 s), slower at 8 (customers of tickets: 0.86 s -> 0.93
# s) and at 1 (tickets: 0.43 s -> 0.74 s).
ROWS_PER_VALUE = 50


def pre_aggregate(ctx: Context, tree: exp.Expression, months: list[str]) -> exp.Expression:
    """`tree` with its distinct counts pre-aggregated (sqlops.distinct.pre_aggregated) when their
    column holds at least ROWS_PER_VALUE rows per value by PostgreSQL's statistics (looked up
    once per column and run), else `tree` (and when the column's table was never analysed). A
    key that is the time column's month is grouped by the month joined from `months`, the
    placeholders of the months of the statement's window (sqlops.distinct.Months): every row
    falls in one when the window's placeholders bound the time column; else such a statement
    stays as it is."""
    x = distinct.distinct_key(tree)
    if x is None:
        return tree
    table = next((t for t in tree.find_all(exp.Table) if t.alias_or_name == x.table), None)
    schema = (table.db or ctx.ex.schema) if table is not None else None
    if table is None or not schema:
        return tree

    def few_values() -> bool:
        stats = ctx.ex.wh.column_stats(schema, table.name, x.name)
        if stats is None:
            return False
        values, rows = stats
        return 0 < values * ROWS_PER_VALUE <= rows

    if not ctx.ex.remember(("rows per value", schema, table.name, x.name), few_values, pin=True):
        return tree
    time_col = ctx.time(tree)
    group = outer_select(tree).args.get("group")
    time_keys = [k for k in group.expressions if time_col in k.find_all(exp.Column)] if group is not None else []
    if not time_keys:
        return distinct.pre_aggregated(tree) or tree
    if any(k != month_bucket(time_col) for k in time_keys) or not bounded_by_window(tree, time_col):
        return tree  # PostgreSQL would sort the first step's rows by a time bucket (sqlops.distinct.Months)
    return distinct.pre_aggregated(tree, distinct.Months(time_col, tuple(months))) or tree


def bounded_by_window(tree: exp.Expression, time_col: exp.Expression) -> bool:
    """Whether the outer WHERE keeps only rows with `:start_date <= time < :end_date` (both
    bounds there, and the window's placeholders used for nothing else)."""
    names = {p.name for p in tree.find_all(exp.Placeholder)}
    return set(grouped.WINDOW) <= names and grouped.window_only_bounds_time(tree, time_col) is None


def _combined(ctx: Context) -> tuple[list[frozenset[str]], exp.Expression, list[dict[str, Any]]] | None:
    """The rule sets that combine, the base statement projecting each one's value, row count and
    HAVING (sides.combined), and each one's own parameters (renamed per call)."""
    base = ctx.under(frozenset())[0].bound
    members: list[frozenset[str]] = []
    parts: list[sides.Side] = []
    own: list[dict[str, Any]] = []
    for rule_set in rule_sets(ctx):
        try:
            bound = ctx.under(rule_set)[0].bound
        except DibenchError:
            continue
        side = sides.side(base.tree, bound.tree, {}, len(parts))
        if not isinstance(side, str):
            members.append(rule_set)
            parts.append(side)
            own.append(bound.params)
    return (members, sides.combined(base.tree, parts), own) if parts else None
