"""Gold SQL in other engines' dialects, transpiled with sqlglot from the stored PostgreSQL tree.

Agents under test often run on DuckDB, Snowflake, BigQuery, Trino or Spark SQL; an export can
carry each task's gold SQL in those dialects (`dibench export --dialect duckdb,trino`). The
values stay bound parameters: each dialect gets its own placeholder syntax (`$name` DuckDB,
`@name` BigQuery, `:name` Snowflake and Spark, `?` in order for Trino, whose parameters are
positional: `param_order` lists the names in that order). What cannot be transpiled is said,
never half-emitted: sqlglot's `unsupported` messages are collected with ErrorLevel.RAISE and
the record names the reason.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError

from dibench.core.errors import DibenchError
from dibench.sqlops.dialect import parse

DIALECTS = ("duckdb", "snowflake", "bigquery", "trino", "spark")
POSITIONAL = frozenset({"trino"})
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class TranspileError(DibenchError):
    """A dialect name that dibench does not transpile to."""


@dataclass(frozen=True)
class Transpiled:
    dialect: str
    sql: str | None
    param_order: list[str] | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"sql": self.sql, "param_order": self.param_order, "error": self.error}


def parse_dialects(text: str) -> list[str]:
    """`duckdb,trino` -> ['duckdb', 'trino'], each checked."""
    names = [d.strip().lower() for d in text.split(",") if d.strip()]
    unknown = sorted(set(names) - set(DIALECTS))
    if unknown or not names:
        raise TranspileError(f"--dialect {text!r}: expected a comma-separated list of {', '.join(DIALECTS)}")
    return list(dict.fromkeys(names))


def _positional(tree: exp.Expression) -> tuple[exp.Expression, list[str]]:
    """Named placeholders -> anonymous `?` in reading order, with the names in that order."""
    order: list[str] = []

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name:
            order.append(node.name)
            return exp.Placeholder()
        return node

    return tree.transform(swap), order


def transpile(sql: str, dialect: str) -> Transpiled:
    """`sql` (PostgreSQL with :name placeholders) in `dialect`; `error` says why not, if not."""
    if dialect not in DIALECTS:
        raise TranspileError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
    try:
        tree = parse(sql, where="gold SQL")
        order = None
        if dialect in POSITIONAL:
            tree, order = _positional(tree.copy())
        return Transpiled(dialect, tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE), order)
    except (UnsupportedError, SqlglotError, DibenchError) as exc:
        return Transpiled(dialect, None, None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")


def transpile_all(sql: str | None, dialects: list[str]) -> dict[str, dict[str, Any]]:
    """{dialect: {sql, param_order, error}} of one task's gold SQL (empty without SQL)."""
    return {d: transpile(sql, d).as_dict() for d in dialects} if sql else {}


def typed_params(params: dict[str, Any]) -> dict[str, Any]:
    """Bound values with ISO dates as dates: PostgreSQL casts an untyped string to the column's
    type, stricter engines (DuckDB) compare a VARCHAR parameter with a TIMESTAMP only if typed."""
    return {k: dt.date.fromisoformat(v) if isinstance(v, str) and _ISO_DATE.match(v) else v
            for k, v in params.items()}
