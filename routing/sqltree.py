"""SQLite-dialect syntax-tree operations for source units (sqlglot).

Spider's gold SQL writes string values in double quotes, which SQLite reads as an identifier
when a column of that name exists and as a string otherwise. `normalise_quoted` applies that
same rule on the tree, so schema checks and value bindings see literals where SQLite does.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp

from dibench.routing.errors import UnitSQLError

DIALECT = "sqlite"
_WRITE_NODES = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
                exp.Command, exp.Copy, exp.Into, exp.Pragma, exp.Attach, exp.Detach, exp.Transaction)


def parse_select(sql: str) -> exp.Query:
    """Parse one read-only query (SELECT or a set operation of SELECTs); raise UnitSQLError otherwise."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise UnitSQLError("unparseable", str(exc).splitlines()[0], sql) from exc
    if len(statements) != 1:
        raise UnitSQLError("multi-statement", f"expected one statement, found {len(statements)}", sql)
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise UnitSQLError("not-select", f"{tree.key.upper()} is not a query", sql)
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise UnitSQLError("not-select", f"{node.key.upper()} inside a query", sql)
    return tree


def render(tree: exp.Expression) -> str:
    return tree.sql(dialect=DIALECT)


def has_order_by(tree: exp.Expression) -> bool:
    """True when the outermost query orders its rows (decides ordered vs multiset comparison)."""
    return tree.args.get("order") is not None


def _cte_names(tree: exp.Expression) -> set[str]:
    return {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}


def table_names(tree: exp.Expression) -> set[str]:
    """Base tables the query reads (lower case), without CTE names."""
    ctes = _cte_names(tree)
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}


def _aliases(tree: exp.Expression) -> dict[str, str | None]:
    """alias (or table name) -> base table name; None for a subquery or CTE alias."""
    ctes = _cte_names(tree)
    out: dict[str, str | None] = {}
    for t in tree.find_all(exp.Table):
        base = t.name.lower()
        out[(t.alias or t.name).lower()] = None if base in ctes else base
        out.setdefault(base, None if base in ctes else base)
    for sq in tree.find_all(exp.Subquery):
        if sq.alias:
            out[sq.alias.lower()] = None
    return out


def _select_aliases(tree: exp.Expression) -> set[str]:
    return {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}


def normalise_quoted(tree: exp.Expression, schema: dict[str, set[str]]) -> exp.Expression:
    """Copy of tree where an unqualified double-quoted name that is no column becomes a string.

    schema: {table (lower): {column (lower)}} of the owner database.
    """
    tree = tree.copy()
    known = set().union(*schema.values()) if schema else set()
    known |= _select_aliases(tree)
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if (isinstance(ident, exp.Identifier) and ident.quoted and not col.table
                and ident.name.lower() not in known):
            col.replace(exp.Literal.string(ident.name))
    return tree


@dataclass(frozen=True)
class SchemaProblem:
    kind: str  # unknown-table | unknown-column
    name: str


def schema_problems(tree: exp.Expression, schema: dict[str, set[str]]) -> list[SchemaProblem]:
    """Tables and columns the (normalised) query names that the owner database does not have."""
    problems: list[SchemaProblem] = []
    for name in sorted(table_names(tree)):
        if name not in schema:
            problems.append(SchemaProblem("unknown-table", name))
    aliases = _aliases(tree)
    read_tables = [t for t in table_names(tree) if t in schema]
    select_aliases = _select_aliases(tree)
    for col in tree.find_all(exp.Column):
        name = col.name.lower()
        if not name or name == "*":
            continue
        qualifier = col.table.lower() if col.table else None
        if qualifier:
            base = aliases.get(qualifier, qualifier)
            if base is None:
                continue  # a subquery/CTE column: checked where the subquery reads its tables
            if base in schema and name not in schema[base]:
                problems.append(SchemaProblem("unknown-column", f"{base}.{name}"))
            continue
        if name in select_aliases or any(name in schema[t] for t in read_tables):
            continue
        if not any(name in cols for cols in schema.values()):
            problems.append(SchemaProblem("unknown-column", name))
    return problems


@dataclass(frozen=True)
class FilterLiteral:
    """`column = literal` in the outermost WHERE: a place a value could be bound."""

    table: str | None  # base table of the column, when it resolves
    column: str
    value: str | int | float
    index: int  # position among the outermost WHERE's equality literals


def _outer_where_equalities(tree: exp.Expression) -> list[exp.EQ]:
    if not isinstance(tree, exp.Select):
        return []
    where = tree.args.get("where")
    if where is None:
        return []
    out = []
    for eq in where.find_all(exp.EQ):
        # only equalities that belong to this SELECT, not to a nested subquery
        if eq.find_ancestor(exp.Select) is tree:
            out.append(eq)
    return out


def _literal_value(node: exp.Expression) -> str | int | float | None:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    return None


def filter_literals(tree: exp.Expression) -> list[FilterLiteral]:
    aliases = _aliases(tree)
    tables = table_names(tree)
    out: list[FilterLiteral] = []
    for i, eq in enumerate(_outer_where_equalities(tree)):
        left, right = eq.this, eq.expression
        if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
            left, right = right, left
        value = _literal_value(right)
        if not isinstance(left, exp.Column) or value is None:
            continue
        qualifier = left.table.lower() if left.table else None
        table = aliases.get(qualifier) if qualifier else (next(iter(tables)) if len(tables) == 1 else None)
        out.append(FilterLiteral(table, left.name.lower(), value, i))
    return out


def parameterise(tree: exp.Expression, index: int, parameter: str) -> exp.Expression:
    """Copy of tree with the index-th outermost equality literal replaced by `:parameter`."""
    tree = tree.copy()
    eq = _outer_where_equalities(tree)[index]
    literal = eq.expression if isinstance(eq.expression, exp.Literal) else eq.this
    literal.replace(exp.Placeholder(this=parameter))
    return tree


def placeholders(tree: exp.Expression) -> set[str]:
    return {p.name for p in tree.find_all(exp.Placeholder) if p.name}


@lru_cache(maxsize=32768)
def sql_placeholders(sql: str) -> frozenset[str]:
    """The placeholders of one read-only query, parsed once per text: every router of an audit binds the
    same gold statements again."""
    return frozenset(placeholders(parse_select(sql)))


def identifiers(tree: exp.Expression) -> Iterable[str]:
    """Table and column names the query mentions (lower case), for distinctiveness checks."""
    yield from table_names(tree)
    for col in tree.find_all(exp.Column):
        if col.name and col.name != "*":
            yield col.name.lower()
