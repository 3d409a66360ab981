"""The warehouse (PostgreSQL through SQLAlchemy 2 + psycopg 3) and its one read-only path.

`execute_readonly` is the only way generated SQL runs. It accepts a single SELECT / WITH
query (checked on the sqlglot tree), runs it in a READ ONLY transaction with a statement
timeout, and always rolls back.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlglot import exp

from service.config import Settings, get_settings
from service.errors import QueryTimeout, ReadOnlyViolation, RewriteError, ServiceError, WarehouseError
from sqlops.dialect import parse

# Functions with side effects, or that reach outside the database, never run on the read-only path.
FORBIDDEN_FUNCTIONS = frozenset({
    "setval", "nextval", "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "dblink", "dblink_exec", "dblink_connect", "lo_import", "lo_export", "lo_unlink", "pg_read_file",
    "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_advisory_lock", "pg_advisory_xact_lock",
    "pg_switch_wal", "pg_create_restore_point", "set_config", "pg_promote", "pg_logical_emit_message",
    "txid_current", "pg_current_xact_id", "query_to_xml", "query_to_xml_and_xmlschema", "pg_file_write",
})


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def statement_kind(tree: exp.Expression) -> str:
    return tree.key.upper()


def check_readonly(sql: str) -> exp.Expression:
    """Raise ReadOnlyViolation unless sql is one side-effect-free query."""
    try:
        tree = parse(sql, where="read-only SQL")
    except RewriteError as exc:
        if "expected one statement" in str(exc):
            raise ReadOnlyViolation("multi-statement", sql) from exc
        raise ReadOnlyViolation("unparseable", sql) from exc
    if not isinstance(tree, exp.Query):
        raise ReadOnlyViolation(statement_kind(tree), sql)
    for node in tree.walk():
        if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
                             exp.Alter, exp.Command, exp.Copy, exp.Into)):
            raise ReadOnlyViolation(statement_kind(node), sql)
        if isinstance(node, exp.Lock):
            raise ReadOnlyViolation("SELECT ... FOR UPDATE/SHARE", sql)
        if isinstance(node, (exp.Anonymous, exp.Func)):
            fname = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if fname in FORBIDDEN_FUNCTIONS:
                raise ReadOnlyViolation(f"call to {fname}()", sql)
    return tree


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    return value


class Warehouse:
    def __init__(self, settings: Settings | None = None, engine: Engine | None = None) -> None:
        self.settings = settings or get_settings()
        self.engine = engine or create_engine(self.settings.database_url, pool_pre_ping=True, pool_size=5)

    def execute_readonly(self, sql: str, params: dict[str, Any] | None = None,
                         *, timeout_s: float | None = None, schema: str | None = None) -> QueryResult:
        """`schema`: the domain schema, first on the search path, so unqualified table names resolve."""
        check_readonly(sql)
        timeout_ms = int(1000 * (timeout_s if timeout_s is not None else self.settings.statement_timeout_s))
        started = time.perf_counter()
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("BEGIN TRANSACTION READ ONLY")
                try:
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {timeout_ms:d}")
                    if schema is not None:
                        path = exp.to_identifier(schema, quoted=True).sql(dialect="postgres")
                        conn.exec_driver_sql(f"SET LOCAL search_path TO {path}")
                    result = conn.execute(text(sql), params or {})
                    columns = list(result.keys())
                    rows = [tuple(_plain(v) for v in row) for row in result.fetchall()]
                finally:
                    conn.exec_driver_sql("ROLLBACK")
        except OperationalError as exc:
            self._raise(exc, sql)
        except DBAPIError as exc:
            self._raise(exc, sql)
        return QueryResult(columns, rows, time.perf_counter() - started)

    @staticmethod
    def _raise(exc: DBAPIError, sql: str) -> None:
        orig = exc.orig
        sqlstate = getattr(orig, "sqlstate", None)
        message = str(orig).strip().splitlines()[0] if orig else str(exc)
        if sqlstate == "57014":
            raise QueryTimeout(f"statement timed out: {message}") from exc
        if sqlstate == "25006":
            raise ReadOnlyViolation("write in read-only transaction", sql) from exc
        if sqlstate is None and "connect" in message.lower():
            raise ServiceError(f"PostgreSQL is not reachable: {message}", hint="run `dibench services up`") from exc
        raise WarehouseError(f"SQL failed ({sqlstate}): {message}") from exc

    def admin(self) -> Engine:
        """The engine for loaders and DDL (never used for generated SQL)."""
        return self.engine

    def dispose(self) -> None:
        self.engine.dispose()


@lru_cache(maxsize=1)
def get_warehouse() -> Warehouse:
    return Warehouse()


_ = event  # sqlalchemy.event kept importable for listeners added by loaders
