"""Small helpers to find things in a metric's SELECT tree."""
from __future__ import annotations

from sqlglot import exp

from dibench.core.errors import RewriteError


def outer_select(tree: exp.Expression) -> exp.Select:
    if not isinstance(tree, exp.Select):
        raise RewriteError(f"expected a SELECT at the top of the metric SQL, found {tree.key.upper()}")
    return tree


def table_alias(tree: exp.Expression, table: str) -> str:
    """The alias (or name) under which `table` is read in the outer FROM/JOINs."""
    select = outer_select(tree)
    sources = []
    from_ = select.args.get("from") or select.args.get("from_")
    if from_ is not None:
        sources.append(from_.this)
    sources.extend(j.this for j in select.args.get("joins") or [])
    for src in sources:
        if isinstance(src, exp.Table) and src.name == table:
            return src.alias_or_name
    raise RewriteError(f"table {table!r} is not read in the metric's outer FROM/JOIN")


def column(tree: exp.Expression, ref: str) -> exp.Column:
    """`table.column` -> a Column qualified with that table's alias in this tree."""
    table, col = ref.split(".", 1)
    return exp.column(col, table=table_alias(tree, table))


def aliased_column(ref: str) -> exp.Column:
    """`alias.column` as written by a pack author (time_column) -> Column."""
    if "." not in ref:
        return exp.column(ref)
    alias, col = ref.split(".", 1)
    return exp.column(col, table=alias)


def value_projection(tree: exp.Expression) -> exp.Alias:
    select = outer_select(tree)
    for proj in select.expressions:
        if isinstance(proj, exp.Alias) and proj.alias == "value":
            return proj
    raise RewriteError("the metric SQL must select exactly one expression aliased `value`")


def tables_read(tree: exp.Expression) -> set[str]:
    """Every physical table the query reads, through CTEs and subqueries (CTE names excluded)."""
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    out = set()
    for t in tree.find_all(exp.Table):
        if t.name and t.name not in ctes:
            out.add(t.name)
    return out


def alias_tables(tree: exp.Expression) -> dict[str, str]:
    """{alias (or name): table} of every table the query reads."""
    return {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}


def columns_read(tree: exp.Expression) -> set[tuple[str, str]]:
    """(table, column) pairs referenced in the outer query, resolving aliases of physical tables."""
    alias_to_table = alias_tables(tree)
    out = set()
    for c in tree.find_all(exp.Column):
        if c.table and c.table in alias_to_table:
            out.add((alias_to_table[c.table], c.name))
    return out
