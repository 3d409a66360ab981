"""Several variants of one metric statement in one scan, for edge verification.

Variants that change only the WHERE (a row filter), the `value` and the HAVING of one base
statement are computed side by side over the base's rows, each filter becoming a FILTER on its
aggregates (`combined`); `row_filter` says why a variant cannot be combined. Each side's
placeholders but the window's are renamed `s<i>_...`. Pure functions on copies of the trees.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dibench.sqlops.shape import rename_placeholders
from dibench.sqlops.tree import outer_select, value_projection

WINDOW = frozenset({"start_date", "end_date"})


@dataclass(frozen=True)
class Side:
    """One variant as parts of the base statement: its extra row filter, value and HAVING."""

    value: exp.Expression
    rows: exp.Expression | None  # extra row filter (None: the base's rows)
    having: exp.Expression | None
    params: dict[str, Any]


def _frame(tree: exp.Expression) -> str:
    """The statement without projections, WHERE and HAVING: what sides must share."""
    t = tree.copy()
    select = outer_select(t)
    for arg in ("where", "having"):
        select.set(arg, None)
    select.set("expressions", [exp.Star()])
    return t.sql()


def _added(base_where: exp.Expression, where: exp.Expression) -> list[exp.Expression] | None:
    """The conditions `where` ANDs to `base_where` (in the order they were added; empty when the
    same), or None when `where` is not `base_where AND c1 AND c2 ...`."""
    added: list[exp.Expression] = []
    node, base_where = where.unnest(), base_where.unnest()
    while node != base_where:
        if not isinstance(node, exp.And):
            return None
        added.append(node.expression)
        node = node.this.unnest()
    return added[::-1]


def _row_conditions(base: exp.Expression, variant: exp.Expression) -> list[exp.Expression] | str:
    """The conditions `variant`'s WHERE ANDs to `base`'s, in the order they were added (none:
    the same WHERE), or why the variant is not the base plus row filters."""
    if _frame(base) != _frame(variant) or outer_select(variant).args.get("group"):
        return "the variant changes more than WHERE, value and HAVING"
    if outer_select(base).args.get("having") or outer_select(base).args.get("group"):
        return "the base statement groups or has HAVING"
    bw, vw = outer_select(base).args.get("where"), outer_select(variant).args.get("where")
    if bw == vw:
        return []
    added = _added(bw.this, vw.this) if bw is not None and vw is not None else None
    return added or "the variant's WHERE is not the base's plus a condition"


def _and(conditions: list[exp.Expression]) -> exp.Expression | None:
    if not conditions:
        return None
    return exp.and_(*[c.copy() for c in conditions]) if len(conditions) > 1 else conditions[0]


def row_filter(base: exp.Expression, variant: exp.Expression) -> exp.Expression | None | str:
    """The condition `variant`'s WHERE adds to `base`'s (None: the same WHERE), or why the
    variant is not the base plus a row filter. Conditions added one after another (two rules'
    row filters) are one condition: their AND."""
    conditions = _row_conditions(base, variant)
    return conditions if isinstance(conditions, str) else _and(conditions)


def side(base: exp.Expression, variant: exp.Expression, params: dict[str, Any], index: int) -> Side | str:
    """Variant `index` as a Side over the base's rows, placeholders renamed, or why not."""
    conditions = _row_conditions(base, variant)
    if isinstance(conditions, str):
        return conditions
    renamed = rename_placeholders(variant, f"s{index}_", WINDOW)
    select = outer_select(renamed)
    if select.find(exp.Window) is not None:
        return "window function"
    # The same conditions, read from the renamed WHERE (the last ones ANDed to it).
    renamed_conditions: list[exp.Expression] = []
    if conditions:
        node = select.args["where"].this
        for _ in conditions:
            node = node.unnest()
            renamed_conditions.append(node.expression)
            node = node.this
    having = select.args.get("having")
    return Side(value_projection(renamed).this, _and(renamed_conditions[::-1]),
                having.this if having is not None else None,
                side_params(params, index))


def side_params(params: dict[str, Any], index: int) -> dict[str, Any]:
    """`params` as side `index` names them: every placeholder but the window's prefixed `s<index>_`."""
    return {(k if k in WINDOW else f"s{index}_{k}"): v for k, v in params.items()}


def _aggregate(node: exp.Expression) -> bool:
    """An aggregate call as a FILTER clause applies to: f(...) or f(...) WITHIN GROUP (...)."""
    return isinstance(node, exp.AggFunc) or (isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.AggFunc))


def filtered(e: exp.Expression, rows: exp.Expression | None) -> exp.Expression:
    """`e` with `rows` added to the FILTER of each of its outermost aggregates (after WITHIN GROUP,
    as PostgreSQL writes it). A subquery outside any aggregate is left alone: its aggregates are
    over its own rows."""
    if rows is None:
        return e.copy()

    def add(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Filter) and _aggregate(node.this):
            cond = exp.and_(exp.paren(node.expression.this.copy()), exp.paren(rows.copy()))
            return exp.Filter(this=node.this.copy(), expression=exp.Where(this=cond))
        if _aggregate(node) and not isinstance(node.parent, exp.WithinGroup):
            return exp.Filter(this=node.copy(), expression=exp.Where(this=exp.paren(rows.copy())))
        if isinstance(node, exp.Subquery):
            return node.copy()  # a new node: not descended into
        return node

    return e.copy().transform(add, copy=False)


def combined(base: exp.Expression, sides: list[Side]) -> exp.Expression:
    """The base statement projecting, per side i: `v<i>` its value, `e<i>` how many rows pass its
    filter and `h<i>` its HAVING (TRUE without one)."""
    tree = base.copy()
    select = outer_select(tree)
    projections: list[exp.Expression] = []
    for i, s in enumerate(sides):
        rows = s.rows
        counted = exp.func("COUNT", exp.Star())
        projections += [exp.alias_(filtered(s.value, rows), f"v{i}"),
                        exp.alias_(filtered(counted, rows), f"e{i}"),
                        exp.alias_(filtered(s.having, rows) if s.having is not None else exp.true(), f"h{i}")]
    select.set("expressions", projections)
    return tree
