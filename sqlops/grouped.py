"""Grouped query planning: one scan of a metric under some rules, many answers.

A metric statement built from decomposable aggregates is planned as a *partials* statement
(partial states per group and month over the data window); an analysis statement shaped from
the metric is answered by the same shape over a proxy query whose `value` recombines the
partials exactly in PostgreSQL. `decompose` says why a statement is not decomposed. Why it is
exact: docs/architecture.md, "Grounding". Pure functions on copies; values only as placeholders.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sqlglot import exp

from dibench.sqlops.shape import WINDOW, bounds_time, hoist_row_subqueries, month_bucket
from dibench.sqlops.sides import filtered
from dibench.sqlops.tree import outer_select, value_projection

ALIAS = "gp"  # the proxy's row source: one row per (group, month) partial
GROUP, PERIOD, ROWS = "g", "period", "n"
PARAM_PREFIX = "gp_"

# Aggregates whose partial states recombine exactly: COUNT by summing counts, SUM by summing
# sums, MIN/MAX/BOOL_AND/BOOL_OR by themselves; AVG is split into a SUM and a COUNT.
SELF = {exp.Min: "MIN", exp.Max: "MAX", exp.LogicalAnd: "BOOL_AND", exp.LogicalOr: "BOOL_OR"}


@dataclass(frozen=True)
class Partial:
    """One partial column: `name` in the partials statement, what it aggregates, and how the
    proxy recombines it (`kind`: count, sum, or the aggregate itself for MIN/MAX/...)."""

    name: str
    expression: exp.Expression
    kind: str  # "count" | "sum" | "self" | "distinct" (a cell's distinct count, for a DistinctAtom)
    function: str = ""  # for "self": MIN, MAX, BOOL_AND, BOOL_OR


@dataclass(frozen=True)
class Decomposed:
    """A metric statement split into partial aggregates and the `value` expression over them,
    in which each recombined aggregate is a Placeholder-free `gp.<partial>` template; likewise
    its HAVING, if any."""

    value: exp.Expression  # the original value with aggregates replaced by _Slot markers
    partials: tuple[Partial, ...]
    having: exp.Expression | None = None


class Slot(exp.Expression):
    """Where a recombined aggregate goes in the decomposed `value` (filled by `recombine`)."""

    arg_types = {"this": True, "avg": False}


class DistinctAtom(exp.Expression):
    """A HAVING comparison `COUNT(DISTINCT x) >= bound` (`strict`: `>`) whose count is the
    partial `this` per (group, month) cell, `bound` a placeholder or a number: decided for every
    group of cells at once by `decide_having`."""

    arg_types = {"this": True, "bound": True, "strict": False}


def aggregate_call(node: exp.Expression) -> tuple[exp.AggFunc, exp.Expression | None] | None:
    """(aggregate, FILTER clause) when `node` is an aggregate call, possibly filtered."""
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
        return node.this, node.expression
    if isinstance(node, exp.AggFunc):
        return node, None
    return None


def _filtered(agg: exp.Expression, where: exp.Expression | None) -> exp.Expression:
    return exp.Filter(this=agg, expression=where.copy()) if where is not None else agg


def _split(agg: exp.AggFunc, where: exp.Expression | None, first: int) -> tuple[list[Partial], exp.Expression] | str:
    """The partials of one aggregate and its Slot, or why it does not decompose."""
    if agg.find(exp.Distinct) is not None or isinstance(agg.parent, exp.WithinGroup):
        return f"{agg.sql_name()} DISTINCT/WITHIN GROUP is not decomposable"
    if agg.find(exp.Order) is not None:
        return f"ordered {agg.sql_name()} is not decomposable"
    name = f"c{first}"
    if isinstance(agg, exp.Count):
        return [Partial(name, _filtered(agg.copy(), where), "count")], Slot(this=exp.to_identifier(name))
    if isinstance(agg, exp.Sum):
        return [Partial(name, _filtered(agg.copy(), where), "sum")], Slot(this=exp.to_identifier(name))
    if isinstance(agg, exp.Avg):
        count_name = f"c{first + 1}"
        total = _filtered(exp.func("SUM", agg.this.copy()), where)
        counted = _filtered(exp.func("COUNT", agg.this.copy()), where)
        return ([Partial(name, total, "sum"), Partial(count_name, counted, "count")],
                Slot(this=exp.to_identifier(name), avg=exp.to_identifier(count_name)))
    if type(agg) in SELF:
        return [Partial(name, _filtered(agg.copy(), where), "self", SELF[type(agg)])], Slot(this=exp.to_identifier(name))
    return f"aggregate {agg.sql_name()} is not decomposable"


def distinct_arg(agg: exp.AggFunc) -> exp.Expression | None:
    """x when `agg` is `COUNT(DISTINCT x)` of one expression, else None."""
    if isinstance(agg, exp.Count) and isinstance(agg.this, exp.Distinct) and len(agg.this.expressions) == 1:
        return agg.this.expressions[0]
    return None


def _distinct_atom(node: exp.Expression, first: int) -> tuple[Partial, DistinctAtom] | None:
    """`COUNT(DISTINCT x) >= k` or `> k` (either way round), k a placeholder or a number: the
    per-cell distinct count as a partial and the atom standing for the comparison."""
    if isinstance(node, (exp.GTE, exp.GT)):
        counted, bound, strict = node.this, node.expression, isinstance(node, exp.GT)
    elif isinstance(node, (exp.LTE, exp.LT)):
        counted, bound, strict = node.expression, node.this, isinstance(node, exp.LT)
    else:
        return None
    found = aggregate_call(counted)
    if found is None or distinct_arg(found[0]) is None:
        return None
    if not (isinstance(bound, exp.Placeholder) or (isinstance(bound, exp.Literal) and bound.is_number)):
        return None
    name = f"c{first}"
    return (Partial(name, _filtered(found[0].copy(), found[1]), "distinct"),
            DistinctAtom(this=exp.to_identifier(name), bound=bound.copy(), strict=strict))


def decompose(tree: exp.Expression) -> Decomposed | str:
    """The metric statement's `value` as partial aggregates, or the reason it cannot be (the
    caller then runs the original statement)."""
    if not isinstance(tree, exp.Select):
        return "not a plain SELECT"
    select = outer_select(tree)
    for clause in ("group", "distinct", "limit", "offset", "order", "qualify"):
        if select.args.get(clause):
            return f"the statement has {clause.upper()}"
    if len(select.expressions) != 1:
        return "more than one projection"
    value = value_projection(tree).this.copy()
    if value.find(exp.Window) is not None:
        return "window function"
    partials: list[Partial] = []
    reason: list[str] = []

    def visit(node: exp.Expression) -> exp.Expression:
        if reason:
            return node
        found = aggregate_call(node)
        if found is not None:
            split = _split(found[0], found[1], len(partials))
            if isinstance(split, str):
                reason.append(split)
                return node
            partials.extend(split[0])
            return split[1]
        if isinstance(node, (exp.Column, exp.Subquery, exp.Select)):
            reason.append("a column or subquery outside an aggregate")
        return node

    value = value.transform(visit, copy=False)
    if reason:
        return reason[0]
    if not partials:
        return "no aggregate in value"
    having = None
    if select.args.get("having"):
        # Recombined like the value, then applied by the proxy to the groups a shape forms, as
        # the original applies it to its groups (partials_query leaves it out).
        def visit_having(node: exp.Expression) -> exp.Expression:
            atom = None if reason else _distinct_atom(node, len(partials))
            if atom is None:
                return visit(node)
            partials.append(atom[0])
            return atom[1]

        having = select.args["having"].this.copy().transform(visit_having, copy=False)
        if reason:
            return f"HAVING: {reason[0]}"
    return Decomposed(value, tuple(partials), having)


def window_only_bounds_time(tree: exp.Expression, time_col: exp.Expression) -> str | None:
    """Why the window's placeholders do more than bound the time column in the outer WHERE (a
    backlog metric counts tickets still open at :end_date: its partials would depend on the
    window), or None. Partials over the data window stand for any month-aligned window only when
    `time >= :start_date AND time < :end_date` is all the window does."""
    where = outer_select(tree).args.get("where")
    for p in tree.find_all(exp.Placeholder):
        if p.name in WINDOW and not bounds_time(p, time_col, where):
            return f":{p.name} is used beyond bounding the time column"
    return None


def partials_query(tree: exp.Expression, d: Decomposed | None, group: exp.Expression | None,
                   time_col: exp.Expression) -> exp.Expression:
    """The metric's FROM/WHERE (window placeholders kept) grouped by (group, month): the group,
    the month as YYYY-MM, the row count and every partial (none without `d`: row counts serve
    top values whatever the metric's aggregates). Without the statement's HAVING: it holds for
    the groups an analysis forms, not for each partial row (the proxy applies it, `proxy_query`)."""
    tree = tree.copy()
    select = outer_select(tree)
    select.set("having", None)
    period = month_bucket(time_col)
    g = group.copy() if group is not None else exp.cast(exp.null(), "TEXT")
    select.set("expressions", [exp.alias_(g, GROUP), exp.alias_(period, PERIOD),
                               exp.alias_(exp.func("COUNT", exp.Star()), ROWS),
                               *[exp.alias_(p.expression.copy(), p.name) for p in (d.partials if d else ())]])
    # Grouped by the month's start, formatted once per group: TO_CHAR on every row costs more than
    # the aggregation itself.
    month = period.args["this"].copy()
    keys = [month] if group is None else [group.copy(), month]
    select.set("group", exp.Group(expressions=keys))
    return hoist_row_subqueries(tree)


@dataclass(frozen=True)
class CubeSide:
    """One rule set of a metric in the cube: its row filter over the base statement's rows
    (sides.Side.rows) and its decomposition, placeholders renamed as the side's (None: the
    row counts only)."""

    rows: exp.Expression | None
    decomposed: Decomposed | None


SET = "gs"  # GROUPING() of the dimension keys: which grouping set a cube row belongs to
MONTHS = "dibench_months"  # the cube's month keys: a VALUES list joined to the rows


def month_params(window: tuple[dt.date, dt.date]) -> dict[str, dt.date]:
    """The first day of every month a row in [window) can fall in, as the cube's parameters."""
    first, last = window[0].replace(day=1), (window[1] - dt.timedelta(days=1)).replace(day=1)
    out: dict[str, dt.date] = {}
    while first <= last:
        out[f"{MONTHS}_{len(out)}"] = first
        first = (first + dt.timedelta(days=32)).replace(day=1)
    return out


def join_months(select: exp.Select, time_col: exp.Expression, months: list[str]) -> exp.Column:
    """LEFT JOIN `select`'s rows to `(VALUES (:<months[0]>), ...) AS dibench_months(m)` on the
    first day of the month of `time_col`; the joined month column (NULL for a row whose month
    is not listed). Grouped by it, PostgreSQL knows there are len(months) months (`cube_query`)."""
    values = exp.Values(expressions=[exp.Tuple(expressions=[exp.cast(exp.Placeholder(this=m), "DATE")]) for m in months],
                        alias=exp.TableAlias(this=exp.to_identifier(MONTHS), columns=[exp.to_identifier("m")]))
    month = exp.column("m", table=MONTHS)
    start = exp.cast(month_bucket(time_col).args["this"], "DATE")
    select.append("joins", exp.Join(this=values, side="LEFT", on=exp.EQ(this=month.copy(), expression=start)))
    return month


def month_text(month: exp.Expression) -> exp.Expression:
    """A joined month as `month_bucket` writes it: YYYY-MM."""
    return exp.func("TO_CHAR", month.copy(), exp.Literal.string("YYYY-MM"))


def cube_query(tree: exp.Expression, cube_sides: list[CubeSide], dims: list[exp.Expression],
               time_col: exp.Expression, months: list[str], params: dict[str, Any] | None = None) -> exp.Expression:
    """The partials of several rule sets and several dimensions of one metric in one scan: the
    base statement's FROM/WHERE, GROUP BY GROUPING SETS ((dim_0, month), ..., (month)), with
    per dimension its key `k<j>`, the month `period`, `gs` (GROUPING of the keys) and, per side
    i, its row count `n<i>` and partials `s<i>_c<k>`, each aggregate FILTERed by the side's rows.
    A grouping set aggregates exactly the rows GROUP BY (dim, month) would, and a FILTER keeps
    exactly the rows the side's WHERE would: the rows of set j and side i with n<i> > 0 are
    `partials_query` of that side grouped by dim j (sqlops/sides.py says why a FILTER is the WHERE).

    The month is the key of a `LEFT JOIN (VALUES (:<months[0]>), ...) AS dibench_months(m)` on
    the row's month start (placeholders of `month_params`), not DATE_TRUNC of the time column:
    PostgreSQL estimates as many months as distinct timestamps, thinks millions of groups will
    not fit in memory and sorts the rows once per grouping set; grouped by a column of 24
    values, it hashes every set in one pass. A row whose month is not in the list (none when
    the WHERE bounds the time column by the window the list covers) has a NULL period, which
    the caller must treat as a failed cube. `params` (the statement's): identical row
    subqueries under different placeholders with equal values share one join."""
    tree = tree.copy()
    select = outer_select(tree)
    month = join_months(select, time_col, months)
    projections: list[exp.Expression] = [exp.alias_(d.copy(), f"k{j}") for j, d in enumerate(dims)]
    projections.append(exp.alias_(month_text(month), PERIOD))
    if dims:
        projections.append(exp.alias_(exp.func("GROUPING", *[d.copy() for d in dims]), SET))
    for i, side in enumerate(cube_sides):
        projections.append(exp.alias_(filtered(exp.func("COUNT", exp.Star()), side.rows), f"{ROWS}{i}"))
        for p in side.decomposed.partials if side.decomposed else ():
            projections.append(exp.alias_(filtered(p.expression, side.rows), f"s{i}_{p.name}"))
    select.set("expressions", projections)
    sets = [exp.Tuple(expressions=[d.copy(), month.copy()]) for d in dims] + [exp.Paren(this=month.copy())]
    select.set("group", exp.Group(grouping_sets=[exp.GroupingSets(expressions=sets)]))
    return hoist_row_subqueries(tree, params)


def cube_set(grouping: int, dims: int) -> int | None:
    """The dimension index of a cube row from its GROUPING() value (None: the month-only set).
    GROUPING(k0..kn-1) sets bit n-1-j when k_j is not grouped in the row's set."""
    everything = (1 << dims) - 1
    for j in range(dims):
        if grouping == everything & ~(1 << (dims - 1 - j)):
            return j
    return None


def cell_type(values: list[Any], empty: str = "NUMERIC") -> str | None:
    """`column_type`, and DOUBLE PRECISION for floats: a cell's value is passed and read back
    whole, never summed, so a float carries it exactly."""
    if {type(v) for v in values if v is not None} == {float}:
        return "DOUBLE PRECISION"
    return column_type(values, empty)


# What the group, month and row count of partial rows are when no row has one (no rows at all,
# or the group of a by-month partial): a shape compares the group with text values.
EMPTY_TYPES = {GROUP: "TEXT", PERIOD: "TEXT", ROWS: "BIGINT"}


def column_type(values: list[Any], empty: str = "NUMERIC") -> str | None:
    """The SQL array element type that carries these partial values exactly (`empty` when none is
    set), or None when they cannot be recombined exactly (floats: their sum depends on the order
    of terms)."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return empty
    if kinds == {bool}:
        return "BOOLEAN"
    if kinds == {int}:
        return "BIGINT"
    if kinds == {Decimal}:
        return "NUMERIC"
    if kinds == {str}:
        return "TEXT"
    if kinds <= {dt.date}:
        return "DATE"
    return None


def _col(name: str) -> exp.Column:
    return exp.column(name, table=ALIAS)


def _bigint(e: exp.Expression) -> exp.Expression:
    return exp.cast(e, "BIGINT")


def recombine(d: Decomposed, types: dict[str, str], template: exp.Expression | None = None) -> exp.Expression:
    """The metric's `value` (or another `template` of `d`: its HAVING) over the proxy's partial
    columns, typed as the original aggregates: a count stays BIGINT (0 over no rows), an integer
    sum BIGINT, an average numeric sum / count."""
    kinds = {p.name: p for p in d.partials}

    def fill(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, Slot):
            return node
        p = kinds[node.this.name]
        total = exp.func("SUM", _col(p.name))
        if node.args.get("avg") is not None:
            count = exp.func("SUM", _col(node.args["avg"].name))
            return exp.paren(exp.Div(this=exp.cast(total, "NUMERIC"),
                                     expression=exp.func("NULLIF", count, exp.Literal.number(0)), typed=True))
        if p.kind == "count":
            return _bigint(exp.func("COALESCE", total, exp.Literal.number(0)))
        if p.kind == "sum":
            return _bigint(total) if types[p.name] == "BIGINT" else total
        return exp.func(p.function, _col(p.name))

    return (d.value if template is None else template).copy().transform(fill, copy=False)


def decide_having(d: Decomposed, columns: dict[str, list[Any]], params: dict[str, Any]) -> exp.Expression | str:
    """`d`'s HAVING with each `DistinctAtom` decided by the (group, month) cells `columns`, its
    bound read from `params`; or why an atom is not decided. When every cell alone meets the
    bound, a group of cells counts at least as many distinct values as its largest cell, so it
    meets the bound exactly when it holds a cell (`COUNT(gp.n) > 0`; TRUE when a count of 0
    would meet it too); a group without a cell counts none, as the statement over no rows."""
    assert d.having is not None
    undecided: list[str] = []

    def fill(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, DistinctAtom):
            return node
        bound = node.args["bound"]
        k = params.get(bound.name) if isinstance(bound, exp.Placeholder) else Decimal(bound.name)
        strict = bool(node.args.get("strict"))

        def meets(v: Any) -> bool:
            return v > k if strict else v >= k

        if isinstance(k, bool) or not isinstance(k, (int, Decimal)) \
                or not all(meets(v) for v in columns[node.this.name]):
            undecided.append(node.this.name)
            return node
        return exp.true() if meets(0) else exp.GT(this=exp.func("COUNT", _col(ROWS)), expression=exp.Literal.number(0))

    having = d.having.copy().transform(fill, copy=False)
    if undecided:
        return "HAVING: COUNT DISTINCT is below its bound in some (group, month) cell"
    return having


@lru_cache(maxsize=None)
def _array_of(element: str) -> exp.DataType:
    return exp.DataType.build(f"{element}[]")


def _array_type(element: str) -> exp.DataType:
    """`element[]`, parsed once per element type (parsing a type name costs more than the rest
    of a proxy statement)."""
    return _array_of(element).copy()


def proxy_query(value: exp.Expression, types: dict[str, str], having: exp.Expression | None = None) -> exp.Select:
    """SELECT <value> AS value FROM UNNEST(:gp_<column>, ...) AS gp(<columns>) [HAVING <having>]:
    the partial rows as the row source of an analysis shape. `tree.meta['grouped']` tells the
    shapes' column lookups to read the group and month from gp."""
    names = list(types)
    arrays = [exp.cast(exp.Placeholder(this=PARAM_PREFIX + n), _array_type(types[n])) for n in names]
    source = exp.Unnest(expressions=arrays,
                        alias=exp.TableAlias(this=exp.to_identifier(ALIAS),
                                             columns=[exp.to_identifier(n) for n in names]))
    tree = exp.select(exp.alias_(value, "value")).from_(source)
    if having is not None:
        tree.set("having", exp.Having(this=having))
    tree.meta["grouped"] = True
    return tree


def group_column() -> exp.Expression:
    return _col(GROUP)


def month_column() -> exp.Expression:
    """A date in the partial's month: `month_bucket` of it is the partial's period again."""
    return exp.cast(exp.func("CONCAT", _col(PERIOD), exp.Literal.string("-01")), "DATE")


# ------------------------------------------------------------------------------ cells
# A statement whose value does not decompose (a distinct count, a percentile, a HAVING on a
# distinct count) still answers exactly every shape whose groups are its (group, month) cells:
# the proxy then reads, per group, the one cell's value as the statement computed it.
CELL = "v"


def cell_value() -> exp.Expression:
    """The proxy's value over cells: the value of the one cell each group holds (`one_cell_per_group`)."""
    return exp.func("MIN", _col(CELL))


def one_cell_per_group(tree: exp.Expression, by_group: bool) -> bool:
    """True when the proxy SELECT inside the shaped `tree` groups by the month (and the group,
    with `by_group`): each of its groups then holds one partial row at most, so its rows are
    exactly the original statement's grouped by (group, month), whatever the shape wraps
    around them. A filter on the group or the window keeps or drops whole cells."""
    for select in tree.find_all(exp.Select):
        source = select.args.get("from") or select.args.get("from_")
        if source is None or not isinstance(source.this, exp.Unnest) or source.this.alias != ALIAS:
            continue
        group = select.args.get("group")
        if group is None or any(group.args.get(k) for k in ("grouping_sets", "rollup", "cube")):
            return False
        keys = group.expressions
        wanted = [month_bucket(month_column())] + ([group_column()] if by_group else [])
        return all(any(k == w for k in keys) for w in wanted)
    return False


def cell_rows_period(tree: exp.Expression, by_group: bool) -> int | None:
    """The index of the month column of a shaped proxy `tree` each of whose rows is computed from
    one (group, month) cell alone (`one_cell_per_group`, and nothing that reads across rows: no
    ORDER BY, LIMIT, DISTINCT, window function or subquery), or None. Its rows over any months
    are then its rows over all months whose month falls in them: a window only keeps or drops
    whole cells."""
    if not isinstance(tree, exp.Select) or not one_cell_per_group(tree, by_group):
        return None
    source = tree.args.get("from") or tree.args.get("from_")
    if source is None or not isinstance(source.this, exp.Unnest) or source.this.alias != ALIAS:
        return None  # the proxy SELECT is wrapped
    if any(tree.args.get(k) for k in ("order", "limit", "offset", "distinct", "qualify")) \
            or tree.find(exp.Window, exp.Subquery) is not None:
        return None
    month = month_bucket(month_column())
    for i, projection in enumerate(tree.expressions):
        if (projection.this if isinstance(projection, exp.Alias) else projection) == month:
            return i
    return None


UNAVAILABLE = "DIBENCH_NO_VALUE"


def no_value() -> exp.Expression:
    """The proxy's `value` when the partials carry row counts only: a shape that keeps it cannot
    be answered from them (`needs_value`)."""
    return exp.Anonymous(this=UNAVAILABLE)


def needs_value(tree: exp.Expression) -> bool:
    return any(a.name == UNAVAILABLE for a in tree.find_all(exp.Anonymous))


def count_rows(tree: exp.Expression) -> exp.Expression:
    """A shape's COUNT(*) counted source rows: over partials it is the sum of their row counts
    (in place: the caller shaped `tree` for this)."""
    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
            return _bigint(exp.func("COALESCE", exp.func("SUM", _col(ROWS)), exp.Literal.number(0)))
        return node

    return tree.transform(fill, copy=False)
