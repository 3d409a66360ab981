"""The read-only SQLite executor: the only way unit and route SQL runs on a catalog database.

Three locks on the door: the SQL must parse (sqlite dialect) as one query; the file is opened
with `mode=ro`; an authorizer refuses anything but reads. A progress handler aborts a query
that runs past its deadline.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from routing.errors import UnitSQLError
from routing.sqltree import parse_select

DEFAULT_TIMEOUT_S = 5.0
_PROGRESS_STEPS = 10_000  # VM instructions between deadline checks
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


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

    def run(self, path: Path, sql: str, params: dict[str, Any] | None = None) -> SqliteResult:
        _check(sql)
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
