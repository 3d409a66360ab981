"""Which schemas a piece of SQL names: a domain's SQL reads its own schema and nothing else.

One check, used where a metric or a rule is validated (`dibench domain validate`) and again
where a rule's expression is applied to a metric's tree (ingest verification, grounding), so a
document that reaches the pipeline without validation is refused too. The domain's read-only
role is the wall behind it; this check gives the author a one-line error naming the field.
"""
from __future__ import annotations

from sqlglot import exp

# Built-in functions live here; a function qualified with any other schema is user code.
BUILTIN_SCHEMA = "pg_catalog"


def _folded(part: exp.Expression | None) -> str:
    """An identifier as PostgreSQL resolves it: unquoted names fold to lower case."""
    if isinstance(part, exp.Identifier):
        return part.name if part.quoted else part.name.lower()
    return part.sql().lower() if part is not None else ""


def _qualifier(node: exp.Expression) -> list[str]:
    """The schema (and catalog) parts naming where a table or column lives
    (schema.table.column: the schema part of a column is its `db`)."""
    if isinstance(node, (exp.Table, exp.Column)):
        return [_folded(node.args.get(k)) for k in ("db", "catalog") if node.args.get(k) is not None]
    return []


def foreign_schemas(tree: exp.Expression, allowed: set[str]) -> list[str]:
    """Problems, one line each, for every schema `tree` names outside `allowed`, and every
    function qualified with a schema other than pg_catalog."""
    problems: list[str] = []
    for node in tree.walk():
        for schema in _qualifier(node):
            if schema not in allowed:
                problems.append(f"names schema {schema!r}; only {', '.join(sorted(allowed)) or 'its own'} may be read")
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            schema = _folded(node.this.this if isinstance(node.this, exp.Column) else node.this)
            if schema != BUILTIN_SCHEMA:
                problems.append(f"calls a function of schema {schema!r}; only built-in functions may be called")
    return sorted(set(problems))


def schemas_named(tree: exp.Expression) -> set[str]:
    """The schemas the tables of `tree` are qualified with (a metric's own schema)."""
    return {_folded(t.args["db"]) for t in tree.find_all(exp.Table) if t.args.get("db") is not None}
