"""Parse and render SQL with sqlglot, keeping `:name` placeholders for bound parameters.

Every text parsed here may come from a document, an LLM or an agent, so its size is checked
before the parser sees it: sqlglot's parser and generator recurse once per nesting level (about
fifty nested parentheses exhaust Python's stack) and some rewrites are quadratic in the number
of terms. The limits are generous for real metrics and rules and refuse a hostile input in
milliseconds with a one-line error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from dibench.core.errors import RewriteError


class BoundPostgres(Postgres):
    """Postgres, but placeholders render as `:name` (SQLAlchemy text() binds them)."""

    class Generator(Postgres.Generator):
        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            name = expression.name
            if not name:
                raise RewriteError("anonymous placeholder '?' is not supported; use :name")
            return f":{name}"


DIALECT = BoundPostgres


@dataclass(frozen=True)
class Limits:
    chars: int
    depth: int      # nested parentheses
    connectors: int  # AND / OR terms


# A rule's predicate, weight, expression or count: a few hundred characters in practice.
EXPRESSION_LIMITS = Limits(chars=4_000, depth=16, connectors=200)
# A whole statement (metric template, gold SQL with every rule applied, an agent's query).
STATEMENT_LIMITS = Limits(chars=100_000, depth=36, connectors=2_000)

_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_CONNECTOR = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)


def check_size(text: str, limits: Limits, *, where: str) -> None:
    """Raise RewriteError (one line, no echo of the text) when `text` exceeds `limits`; a linear
    scan that never parses."""
    if len(text) > limits.chars:
        raise RewriteError(f"{where}: too large: {len(text):,} characters (at most {limits.chars:,})")
    bare = _QUOTED.sub("''", text)
    depth = deepest = 0
    for ch in bare:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    if deepest > limits.depth:
        raise RewriteError(f"{where}: too deeply nested: {deepest} levels of parentheses (at most {limits.depth})")
    terms = len(_CONNECTOR.findall(bare))
    if terms > limits.connectors:
        raise RewriteError(f"{where}: too large: {terms:,} AND/OR terms (at most {limits.connectors:,})")


def _first_line(exc: Exception) -> str:
    """sqlglot's message, bounded: it quotes the text around the error, which may be long."""
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return line if len(line) <= 200 else line[:200] + "…"


def parse(sql: str, *, where: str = "SQL", read: str = "postgres") -> exp.Expression:
    """One statement of `sql` in the `read` dialect (ours is PostgreSQL; an agent's may be its engine's)."""
    check_size(sql, STATEMENT_LIMITS, where=where)
    try:
        statements = sqlglot.parse(sql, read=read)
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        at = f" (line {first.get('line')}, column {first.get('col')})" if first else ""
        raise RewriteError(f"{where}: cannot parse{at}: {_first_line(exc)}") from exc
    except RecursionError as exc:  # a shape the size checks let through; never a traceback
        raise RewriteError(f"{where}: too deeply nested to parse") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise RewriteError(f"{where}: expected one statement, found {len(statements)}")
    return statements[0]


def parse_expression(sql: str, *, where: str = "expression") -> exp.Expression:
    check_size(sql, EXPRESSION_LIMITS, where=where)
    try:
        return sqlglot.condition(sql, dialect="postgres")
    except sqlglot.errors.ParseError as exc:
        raise RewriteError(f"{where}: cannot parse expression: {_first_line(exc)}") from exc
    except RecursionError as exc:
        raise RewriteError(f"{where}: too deeply nested to parse") from exc


def render(tree: exp.Expression) -> str:
    """The tree as PostgreSQL text. Not copied first (a deep copy cost more than generating). The
    PostgreSQL generator rewrites a tree in place only for QUALIFY, semi/anti joins, percentiles
    without WITHIN GROUP and nested CTEs: the first three never come out of parsing PostgreSQL,
    and a nested CTE moved to the top renders as the same text at every later render."""
    return tree.sql(dialect=DIALECT, copy=False)


def placeholders(tree: exp.Expression) -> set[str]:
    return {p.name for p in tree.find_all(exp.Placeholder) if p.name}
