"""The read-only executor: the only way unit and route SQL runs on a catalog database.

SQLite files: three locks on the door: the SQL must parse (sqlite dialect) as one query; the file
is opened with `mode=ro`; an authorizer refuses anything but reads. A progress handler aborts a
query that runs past its deadline. PostgreSQL schemas: the same SQL, transpiled to PostgreSQL,
runs through the warehouse's read-only transaction with the schema as its only search path.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlglot
import sqlglot.errors
from sqlglot import exp

from dibench.core.errors import DibenchError
from dibench.routing.errors import UnitSQLError
from dibench.routing.sqltree import parse_select
from dibench.sqlops.dialect import DIALECT
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import get_warehouse

DEFAULT_TIMEOUT_S = 5.0
_PROGRESS_STEPS = 10_000  # VM instructions between deadline checks
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


@dataclass(frozen=True)
class PgSchema:
    """A catalog database that is a schema of the configured PostgreSQL warehouse."""

    schema: str

    @property
    def stem(self) -> str:
        return self.schema


def pg_names(schema: str) -> dict[str, str]:
    """lower-case name -> the name as PostgreSQL holds it, of the schema's tables and columns."""
    names: dict[str, str] = {}
    for table, cols in schema_columns(get_warehouse(), schema).items():
        names[table.lower()] = table
        names.update({c.lower(): c for c in cols})
    return names


def sqlite_to_postgres(sql: str, names: dict[str, str]) -> str:
    """The SQLite query as PostgreSQL. SQLite names are case-insensitive: each table or column name
    is written as the schema holds it (quoted only where that is not lower case). A double-quoted
    name that is no column is a string in SQLite (`WHERE continent = "Asia"`) and becomes a string
    literal. `:name` placeholders stay `:name` (the warehouse binds them so), not psycopg's `%(name)s`."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if not isinstance(ident, exp.Identifier):
            continue
        if ident.name.lower() in names:
            _respell(ident, names[ident.name.lower()])
        elif ident.quoted and not col.table:
            col.replace(exp.Literal.string(ident.name))
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.name.lower() in names:
            _respell(table.this, names[table.name.lower()])
    return tree.sql(dialect=DIALECT)


def _respell(ident: exp.Identifier, actual: str) -> None:
    ident.set("this", actual)
    ident.set("quoted", actual != actual.lower())


def run_postgres(target: PgSchema, sql: str, params: dict[str, Any] | None, timeout_s: float,
                 names: dict[str, str]) -> "SqliteResult":
    try:
        pg_sql = sqlite_to_postgres(sql, names)
        res = get_warehouse().execute_readonly(pg_sql, params, timeout_s=timeout_s, schema=target.schema)
    except (DibenchError, sqlglot.errors.SqlglotError) as exc:
        raise UnitSQLError("execution", str(exc).splitlines()[0], sql) from exc
    return SqliteResult(res.columns, [tuple(r) for r in res.rows], res.elapsed_s)


@dataclass(frozen=True)
class SqliteResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float


def _decode(raw: bytes) -> str:
    # a few Spider databases hold Latin-1 bytes in TEXT columns; keep them readable, never fail
    return raw.decode("utf-8", errors="replace")


@lru_cache(maxsize=32768)
def _check(sql: str) -> None:
    """parse_select, remembered per SQL text: units and routes run the same SQL many times."""
    parse_select(sql)


def _authorizer(action: int, *_args: Any) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def connect_readonly(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise UnitSQLError("missing-database", f"no SQLite file at {path}", "")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    conn.text_factory = _decode
    return conn


class SqliteExecutor:
    """Keeps one read-only connection per file; `run` checks, times out and executes."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._conns: dict[Path, sqlite3.Connection] = {}
        self._pg_names: dict[str, dict[str, str]] = {}  # per schema, read once per executor

    def _conn(self, path: Path) -> sqlite3.Connection:
        if path not in self._conns:
            self._conns[path] = connect_readonly(path)
        return self._conns[path]

    def run(self, path: Path | PgSchema, sql: str, params: dict[str, Any] | None = None) -> SqliteResult:
        _check(sql)
        if isinstance(path, PgSchema):
            if path.schema not in self._pg_names:
                self._pg_names[path.schema] = pg_names(path.schema)
            return run_postgres(path, sql, params, self.timeout_s, self._pg_names[path.schema])
        conn = self._conn(path)
        deadline = time.monotonic() + self.timeout_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, _PROGRESS_STEPS)
        conn.set_authorizer(_authorizer)
        started = time.perf_counter()
        try:
            cur = conn.execute(sql, params or {})
            rows = [tuple(r) for r in cur.fetchall()]
            columns = [d[0] for d in cur.description or []]
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise UnitSQLError("timeout", f"exceeded {self.timeout_s:g}s", sql) from exc
            raise UnitSQLError("execution", str(exc), sql) from exc
        except sqlite3.DatabaseError as exc:
            raise UnitSQLError("execution", str(exc), sql) from exc
        finally:
            conn.set_progress_handler(None, 0)
            conn.set_authorizer(None)
        return SqliteResult(columns, rows, time.perf_counter() - started)

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def __enter__(self) -> "SqliteExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
