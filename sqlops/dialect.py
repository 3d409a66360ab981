"""Parse and render SQL with sqlglot, keeping `:name` placeholders for bound parameters."""
from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from service.errors import RewriteError


class BoundPostgres(Postgres):
    """Postgres, but placeholders render as `:name` (SQLAlchemy text() binds them)."""

    class Generator(Postgres.Generator):
        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            name = expression.name
            if not name:
                raise RewriteError("anonymous placeholder '?' is not supported; use :name")
            return f":{name}"


DIALECT = BoundPostgres


def parse(sql: str, *, where: str = "SQL") -> exp.Expression:
    try:
        statements = sqlglot.parse(sql, read="postgres")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        at = f" (line {first.get('line')}, column {first.get('col')})" if first else ""
        raise RewriteError(f"{where}: cannot parse{at}: {str(exc).splitlines()[0]}") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise RewriteError(f"{where}: expected one statement, found {len(statements)}")
    return statements[0]


def parse_expression(sql: str, *, where: str = "expression") -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, read="postgres", into=exp.Condition) if False else sqlglot.condition(sql, dialect="postgres")
    except sqlglot.errors.ParseError as exc:
        raise RewriteError(f"{where}: cannot parse expression {sql!r}: {str(exc).splitlines()[0]}") from exc


def render(tree: exp.Expression) -> str:
    return tree.sql(dialect=DIALECT)


def placeholders(tree: exp.Expression) -> set[str]:
    return {p.name for p in tree.find_all(exp.Placeholder) if p.name}
