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

from dibench.core.errors import DibenchError
from dibench.routing.errors import UnitSQLError
from dibench.routing.sqltree import parse_select
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


def run_postgres(target: PgSchema, sql: str, params: dict[str, Any] | None, timeout_s: float) -> "SqliteResult":
    try:
        pg_sql = sqlglot.transpile(sql, read="sqlite", write="postgres")[0]
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

    def _conn(self, path: Path) -> sqlite3.Connection:
        if path not in self._conns:
            self._conns[path] = connect_readonly(path)
        return self._conns[path]

    def run(self, path: Path | PgSchema, sql: str, params: dict[str, Any] | None = None) -> SqliteResult:
        _check(sql)
        if isinstance(path, PgSchema):
            return run_postgres(path, sql, params, self.timeout_s)
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
