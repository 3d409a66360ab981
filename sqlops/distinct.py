"""A distinct count by pre-aggregation: one hash aggregate instead of one sort per DISTINCT.

`pre_aggregated` computes a statement whose aggregates are counts, distinct counts of one
expression x, MIN, MAX, BOOL_AND and BOOL_OR (each FILTERed or not) in two steps, grouped by its
keys and x first, then by its keys; every result keeps its type and value exactly. Anything else
is left alone. It pays when x has many rows per value, so the caller decides when to use it. Why
it is exact: docs/architecture.md, "Distinct counts in two steps". Pure functions on copies.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dibench.sqlops.grouped import SELF, aggregate_call, distinct_arg, join_months, month_text
from dibench.sqlops.shape import month_bucket

Q = "dibench_q"  # the first step's alias in the outer query
X = "dx"  # its column holding x


@dataclass(frozen=True)
class Months:
    """Every month the statement's rows fall in, as placeholders (sqlops.grouped.month_params),
    and its time column: a key that is the time column's month (`month_bucket`) is grouped by
    the month joined from that list in the first step (sqlops.grouped.join_months), not by each
    row's formatted month. PostgreSQL estimates as many months as timestamps, and would sort the
    first step's rows rather than hash them (a rule task's monthly cells of agents' tickets at 1M
    tickets: 2.4 s so, 1.0 s by the joined month, 1.8 s in one step). The caller guarantees that
    the list holds every row's month (a row whose month is not listed would form a group of a
    NULL month)."""

    time_column: exp.Expression
    params: tuple[str, ...]


def _call(node: exp.Expression) -> tuple[exp.AggFunc, exp.Expression | None] | None:
    """(aggregate, FILTER condition) when `node` is an aggregate call, possibly filtered."""
    found = aggregate_call(node)
    if found is None or found[1] is None:
        return found
    return found[0], found[1].this if isinstance(found[1], exp.Where) else found[1]


def distinct_key(tree: exp.Expression) -> exp.Column | None:
    """The column x of the distinct counts of a statement `pre_aggregated` can rewrite, or None."""
    plan = _plan(tree)
    return plan[0] if plan is not None else None


def _name(projection: exp.Expression) -> exp.Identifier | None:
    """The output name of a projection, as written (quoted or not)."""
    if isinstance(projection, exp.Alias):
        return projection.args["alias"]
    if isinstance(projection, exp.Column):
        return projection.this
    return None


def _plan(tree: exp.Expression) -> tuple[exp.Column, list[exp.Expression]] | None:
    """(x, the GROUP BY keys) when every part of the statement is one the rewrite sees through."""
    if not isinstance(tree, exp.Select):
        return None
    for clause in ("distinct", "order", "limit", "offset", "qualify", "windows", "locks"):
        if tree.args.get(clause):
            return None
    group = tree.args.get("group")
    if group is not None and any(group.args.get(k) for k in ("grouping_sets", "rollup", "cube", "totals")):
        return None
    keys = list(group.expressions) if group is not None else []
    if any(isinstance(k, exp.Literal) or (isinstance(k, exp.Column) and not k.table) for k in keys):
        return None  # by position, or maybe by an output name
    distinct: list[exp.Expression] = []
    bodies = []
    for projection in tree.expressions:
        if _name(projection) is None:
            return None
        bodies.append(projection.this if isinstance(projection, exp.Alias) else projection)
    having = tree.args.get("having")
    if having is not None:
        bodies.append(having.this)
    if not all(any(b == k for k in keys) or _sees_through(b, distinct) for b in bodies):
        return None
    x = distinct[0] if distinct else None
    if not isinstance(x, exp.Column) or not x.table or any(d != x for d in distinct):
        return None  # no distinct count, several distinct expressions, or not a column
    return x, keys


def _sees_through(body: exp.Expression, distinct: list[exp.Expression]) -> bool:
    """Whether `body` reads rows only through aggregates the rewrite recombines (the argument of
    each distinct count appended to `distinct`)."""
    if isinstance(body, (exp.Window, exp.Subquery, exp.Select, exp.WithinGroup, exp.Column, exp.Star, exp.Dot)):
        return False
    found = _call(body)
    if found is not None:
        agg, where = found
        if where is not None and where.find(exp.AggFunc, exp.Subquery, exp.Window) is not None:
            return False
        x = distinct_arg(agg)
        if x is not None:
            distinct.append(x)
            return True
        if agg.find(exp.Distinct, exp.Order, exp.Subquery, exp.Window) is not None:
            return False
        return isinstance(agg, exp.Count) or type(agg) in SELF
    if isinstance(body, exp.AggFunc):
        return False
    return all(_sees_through(child, distinct) for child in body.iter_expressions())


def pre_aggregated(tree: exp.Expression, months: Months | None = None) -> exp.Select | None:
    """The statement computed in two steps (module docstring): the same columns, names, groups
    and values; None when `tree` is not one the rewrite sees through. With `months`, a month key
    is grouped by the joined month in the first step (`Months`)."""
    plan = _plan(tree)
    if plan is None:
        return None
    x, keys = plan
    inner = tree.copy()
    inner.set("having", None)
    first_keys = [k.copy() for k in keys]  # what the first step groups by
    first_values = [k.copy() for k in keys]  # and projects as k<i>
    if months is not None and any(k == month_bucket(months.time_column) for k in keys):
        month = join_months(inner, months.time_column, list(months.params))
        for i, k in enumerate(keys):
            if k == month_bucket(months.time_column):
                first_keys[i], first_values[i] = month.copy(), month_text(month)
    key_names = [f"k{i}" for i in range(len(keys))]
    partials: dict[str, exp.Expression] = {}  # SQL -> the first step's column (one per distinct partial)

    def q(name: str) -> exp.Column:
        return exp.column(name, table=Q)

    def partial(e: exp.Expression) -> exp.Column:
        name = partials.setdefault(e.sql(), exp.alias_(e, f"a{len(partials)}")).alias
        return q(name)

    def recombine(node: exp.Expression) -> exp.Expression:
        found = _call(node)
        if found is None:
            return node
        agg, where = found
        if distinct_arg(agg) is not None:
            # The rows of the group that pass w; x is the group's own value.
            rows = exp.func("COUNT", exp.Star())
            passing = partial(exp.Filter(this=rows, expression=exp.Where(this=where.copy())) if where is not None else rows)
            return exp.Filter(this=exp.func("COUNT", q(X)),
                              expression=exp.Where(this=exp.GT(this=passing, expression=exp.Literal.number(0))))
        if isinstance(agg, exp.Count):
            return exp.cast(exp.func("COALESCE", exp.func("SUM", partial(node.copy())), exp.Literal.number(0)), "BIGINT")
        return exp.func(SELF[type(agg)], partial(node.copy()))

    def outer_of(body: exp.Expression) -> exp.Expression:
        for i, k in enumerate(keys):
            if body == k:
                return q(key_names[i])
        return body.copy().transform(recombine, copy=False)

    projections = []
    for p in tree.expressions:
        body = p.this if isinstance(p, exp.Alias) else p
        name = _name(p)
        assert name is not None  # _plan checked
        projections.append(exp.Alias(this=outer_of(body), alias=name.copy()))
    having = tree.args.get("having")
    outer_having = outer_of(having.this) if having is not None else None
    inner.set("expressions", [*[exp.alias_(v, n) for v, n in zip(first_values, key_names)],
                              exp.alias_(x.copy(), X), *partials.values()])
    inner.set("group", exp.Group(expressions=[*first_keys, x.copy()]))
    outer = exp.select(*projections).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(Q))))
    if keys:
        outer.set("group", exp.Group(expressions=[q(n) for n in key_names]))
    if outer_having is not None:
        outer.set("having", exp.Having(this=outer_having))
    return outer
