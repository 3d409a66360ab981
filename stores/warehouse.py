"""The warehouse: the engine seam, the PostgreSQL engine (SQLAlchemy 2 + psycopg 3) and its one
read-only path. A `Warehouse` executes read-only, inspects its catalog, names its sqlglot dialect
and gives loaders what they write to; `open_warehouse` picks the engine by the URL's scheme
(ENGINES; DuckDB: stores/duckdb_warehouse.py; docs/engines.md). Stages pass PostgreSQL SQL.

`execute_readonly` is the only way generated SQL runs. It accepts a single SELECT / WITH
query (checked on the sqlglot tree), runs it in a READ ONLY transaction with a statement
timeout, and always rolls back. Given the domain's schema it runs as that domain's read-only
role (stores.pgroles): the checker is then the second wall, the role's privileges the first.
"""
from __future__ import annotations

import copy
import importlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import psycopg
from psycopg import sql as psql
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlglot import exp

from dibench.core.config import Settings, get_settings
from dibench.core.errors import (
    DibenchError, QueryTimeout, ReadOnlyViolation, RewriteError, ServiceError, WarehouseError,
)
from dibench.sqlops import pglex
from dibench.sqlops.dialect import parse
from dibench.sqlops.pglex import SqlScanError
from dibench.stores.engines import DISPLAY_NAMES, ENGINES, engine_scheme
from dibench.stores.pgroles import ensure_all_readonly_roles, ensure_readonly_role, readonly_role

# Functions with side effects, that reach outside the database or other sessions, or that run SQL
# given as a string (which this checker would never see), never run on the read-only path.
FORBIDDEN_FUNCTIONS = frozenset({
    "setval", "nextval", "pg_reload_conf", "pg_rotate_logfile", "lo_import", "lo_export", "lo_unlink",
    "pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_switch_wal", "pg_create_restore_point",
    "set_config", "current_setting", "pg_promote", "pg_logical_emit_message", "txid_current", "pg_current_xact_id",
    "pg_notify", "pg_file_write", "pg_file_unlink", "pg_file_rename", "pg_sleep_until",
    "ts_stat", "ts_rewrite", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
    "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml",
    "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
    "database_to_xml_and_xmlschema", "loread", "lowrite", "pg_import_system_collations", "pg_stat_reset",
    "pg_show_all_settings", "pg_show_all_file_settings", "pg_hba_file_rules", "pg_ident_file_mappings", "pg_config",
})
# Families refused by prefix: large objects, directory listings, locks, signals, dblink, WAL/replication
# control and the statistics resets.
FORBIDDEN_PREFIXES = ("lo_", "pg_ls_", "pg_read_", "pg_advisory", "pg_try_advisory", "pg_cancel", "pg_terminate",
                      "dblink", "pg_replication_", "pg_create_", "pg_drop_", "pg_wal_", "pg_stat_reset",
                      "pg_file_", "pg_log_")
# Catalogs that hold secrets or server files (password hashes, user mappings, configuration).
SECRET_RELATIONS = frozenset({
    "pg_shadow", "pg_authid", "pg_user_mappings", "pg_user_mapping", "pg_hba_file_rules", "pg_ident_file_mappings",
    "pg_file_settings", "pg_settings", "pg_largeobject", "pg_largeobject_metadata", "pg_stat_activity",
    "pg_db_role_setting", "pg_config", "pg_stat_ssl", "pg_stat_gssapi",
})
# Activity and statistics of every session and of the server (what other sessions run, their
# locks, prepared statements, cursors, snapshots, transaction ids, WAL and replication state,
# memory; the counters and samples of every table): another session's query text is someone
# else's private SQL. The whole class is refused to an agent's SQL (`agent=True`: our own planner
# queries read pg_stats), by prefix or by a word in a pg_/txid_ name; tests/test_readonly.py
# checks it against the server's own pg_proc and pg_views.
ACTIVITY_PREFIXES = ("pg_stat", "pg_lock", "pg_prepared_", "pg_cursor", "pg_backend_", "pg_control_", "pg_current_",
                     "pg_last_", "pg_xact_", "pg_get_wal_", "pg_isolation_test_", "pg_backup_", "txid_")
ACTIVITY_WORDS = ("activity", "replication", "snapshot", "blocking_pids", "memory_context", "shmem", "multixact",
                  "logfile", "listening_channels", "notification_queue", "wal", "xact")
_SQL_STATE_CLASS_SYNTAX = "42"
# Permission denied, or an unknown table: a schema without USAGE is silently left out of the
# search_path, so a recreated schema that lost its grants shows as "relation does not exist".
_MAYBE_STALE_GRANTS = ("42501", "42P01")
_MAX_ERROR_CHARS = 160


# The server went away under the statement, or is not there yet: a connection exception (class
# 08), an administrator's shutdown, a crash of another backend, or a server still starting.
_UNREACHABLE_PREFIXES = ("08", "57P01", "57P02", "57P03")


def _unreachable(sqlstate: str | None) -> bool:
    """Whether a failed statement says the server is unreachable, not that the statement is wrong:
    a caller must not record it against the statement (a rejected task), only retry later."""
    return sqlstate is not None and sqlstate.startswith(_UNREACHABLE_PREFIXES)


def activity_name(name: str) -> bool:
    """Whether a function or relation belongs to the activity and statistics class."""
    lowered = name.lower()
    return lowered.startswith(ACTIVITY_PREFIXES) or (
        lowered.startswith(("pg_", "txid_")) and any(word in lowered for word in ACTIVITY_WORDS))


def forbidden_function(name: str, agent: bool = False) -> bool:
    lowered = name.lower()
    return lowered in FORBIDDEN_FUNCTIONS or lowered.startswith(FORBIDDEN_PREFIXES) or (agent and activity_name(lowered))


def forbidden_relation(name: str, agent: bool = False) -> str | None:
    lowered = name.lower()
    if lowered in SECRET_RELATIONS:
        return f"read of system catalog {lowered}"
    if agent and activity_name(lowered):
        return f"read of activity/statistics view {lowered}"
    return None


@dataclass(frozen=True)
class ResultCap:
    """At most this many rows, and about this many bytes of values, are read of one result: the
    rest is never fetched from the server (a server-side cursor)."""

    rows: int = 10_000
    bytes: int = 8 << 20


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    referred_schema: str | None
    referred_table: str
    referred_columns: tuple[str, ...]


@dataclass(frozen=True)
class TableShape:
    """One table of a schema as its engine's catalog describes it."""

    columns: tuple[tuple[str, str], ...]  # (name, type as the engine writes it)
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float
    cut: str | None = None  # why fewer rows than the query has were read (a ResultCap), else None

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def statement_kind(tree: exp.Expression) -> str:
    return tree.key.upper()


def _refusal(node: exp.Expression, agent: bool) -> str | None:
    """Why one node of a query may not run on the read-only path, or None."""
    if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
                         exp.Alter, exp.Command, exp.Copy, exp.Into)):
        return statement_kind(node)
    if isinstance(node, exp.Lock):
        return "SELECT ... FOR UPDATE/SHARE"
    if isinstance(node, (exp.Anonymous, exp.Func)):
        fname = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        if forbidden_function(fname, agent):
            return f"call to {fname.lower()}()"
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        return forbidden_relation(node.name, agent)
    return None


def _scanned_refusal(sql: str, agent: bool) -> str | None:
    """Why the names PostgreSQL itself reads in `sql` (sqlops.pglex) may not run, or None. The
    tree check below sees sqlglot's reading; this one sees the server's, so a name spelled so
    that the two differ (Unicode escapes, a comment one of them ends earlier) is still caught."""
    try:
        for name in pglex.names(sql):
            if name.called and forbidden_function(name.text, agent):
                return f"call to {name.text.lower()}()"
            relation = forbidden_relation(name.text, agent)
            if relation is not None:
                return relation
    except SqlScanError as exc:
        return str(exc)
    return None


def parse_query(sql: str, read: str = "postgres") -> exp.Expression:
    """The one query `sql` holds, read in the `read` dialect; ReadOnlyViolation (naming why) for
    anything else: several statements, a statement that is not a query, text too large or deep."""
    try:
        tree = parse(sql, where="read-only SQL", read=read)
    except RewriteError as exc:
        if "expected one statement" in str(exc):
            raise ReadOnlyViolation("multi-statement", sql) from exc
        if "too large" in str(exc) or "too deep" in str(exc):
            raise ReadOnlyViolation(str(exc).split(": ", 1)[-1], sql) from exc
        raise ReadOnlyViolation("unparseable", sql) from exc
    if not isinstance(tree, exp.Query):
        raise ReadOnlyViolation(statement_kind(tree), sql)
    return tree


def check_readonly(sql: str, agent: bool = False) -> exp.Expression:
    """Raise ReadOnlyViolation unless sql is one side-effect-free query: checked on the names
    PostgreSQL reads (`_scanned_refusal`) and on sqlglot's tree; an `agent`'s, also free of the
    activity and statistics class."""
    tree = parse_query(sql)
    scanned = _scanned_refusal(sql, agent)
    if scanned is not None:
        raise ReadOnlyViolation(scanned, sql)
    for node in tree.walk():
        reason = _refusal(node, agent)
        if reason is not None:
            raise ReadOnlyViolation(reason, sql)
    return tree


@lru_cache(maxsize=4096)
def checked_readonly(sql: str, agent: bool = False) -> None:
    """check_readonly, once per distinct text: the verdict depends on the text alone, and a
    generation run sends the same statements again and again (a refusal raises every time: an
    exception is never cached)."""
    check_readonly(sql, agent)


def sanitized_error(orig: BaseException | None) -> str:
    """A bounded, value-free description of a database error: SQLSTATE and its class, plus, for
    syntax and undefined-object errors (class 42) only, the first line of the message, whose
    quoted identifiers come from the query itself (shortened) and whose literals are blanked.
    Messages of other classes may carry data (an invalid value, a DETAIL row, a file read
    through a function), so their text is never kept."""
    sqlstate = getattr(orig, "sqlstate", None) or "?????"
    kind = re.sub(r"(?<!^)(?=[A-Z])", " ", type(orig).__name__).lower() if orig is not None else "error"
    out = f"SQLSTATE {sqlstate} ({kind})"
    if sqlstate.startswith(_SQL_STATE_CLASS_SYNTAX) and orig is not None:
        lines = str(orig).strip().splitlines()
        first = re.sub(r"'[^']*'?", "'…'", lines[0] if lines else "")
        first = re.sub(r'"([^"]{0,40})[^"]*"?', r'"\1"', first)
        out += f": {first}"
    return out[:_MAX_ERROR_CHARS]


def bounded_message(text: str) -> str:
    """First line of an error message, at most a few hundred characters (for stored errors)."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= 2 * _MAX_ERROR_CHARS else first[:2 * _MAX_ERROR_CHARS] + "…"


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    return value


@contextmanager
def admin_cursor(engine: Engine) -> Iterator[psycopg.Cursor[Any]]:
    """A psycopg cursor in one transaction on the admin engine: committed on success, else rolled
    back. Loaders use it for COPY and composed identifiers, which are psycopg 3 API, not DBAPI."""
    conn = engine.raw_connection()
    try:
        driver = conn.driver_connection
        if not isinstance(driver, psycopg.Connection):
            raise DibenchError(f"loaders need a postgresql+psycopg engine, got {type(driver).__name__}",
                               hint="set DIBENCH_DATABASE_URL to a postgresql+psycopg:// URL")
        with driver.cursor() as cur:
            yield cur
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.close()


def _discard_session(dbapi_connection: Any, _record: Any) -> None:
    """Back in the pool, a read-only role's connection forgets everything its query left behind
    (advisory locks, prepared statements, temp state, settings): DISCARD ALL needs autocommit."""
    if dbapi_connection is None:
        return
    dbapi_connection.autocommit = True
    try:
        dbapi_connection.execute("DISCARD ALL")
    finally:
        dbapi_connection.autocommit = False


FETCH_ROWS = 200  # rows of a capped result fetched from the server-side cursor at a time


def _value_bytes(row: Any) -> int:
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row) + 8


def _run_readonly(engine: Engine, sql: str, params: dict[str, Any], timeout_ms: int, exact: bool = False,
                  parallel: int | None = None,
                  cap: ResultCap | None = None) -> tuple[list[str], list[tuple[Any, ...]], str | None]:
    with engine.connect() as conn:
        try:
            # The driver has just opened the transaction: this is its first statement.
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {timeout_ms:d}")
            if parallel is not None:
                conn.exec_driver_sql(f"SET LOCAL max_parallel_workers_per_gather = {parallel:d}")
            if cap is None:
                result = conn.execute(text(sql), params)
                fetched, cut = result.fetchall(), None
            else:
                result = conn.execution_options(stream_results=True, max_row_buffer=FETCH_ROWS).execute(
                    text(sql), params)
                fetched, cut = _fetch_to_cap(result, cap)
                result.close()
            plain = (lambda row: tuple(row)) if exact else (lambda row: tuple(_plain(v) for v in row))
            return list(result.keys()), [plain(row) for row in fetched], cut
        finally:
            conn.rollback()


def _fetch_to_cap(result: Any, cap: ResultCap) -> tuple[list[Any], str | None]:
    rows: list[Any] = []
    size = 0
    while part := result.fetchmany(FETCH_ROWS):
        for row in part:
            size += _value_bytes(row)
            if len(rows) >= cap.rows:
                return rows, f"stopped after {cap.rows} rows (the result has more)"
            if size > cap.bytes:
                return rows, f"stopped after {len(rows)} rows: the result exceeds {cap.bytes} bytes"
            rows.append(row)
    return rows, None


# The planner's statistics of a column: its distinct values (negative: a fraction of the rows)
# and its table's rows.
COLUMN_STATS_SQL = (
    "SELECT s.n_distinct, c.reltuples FROM pg_catalog.pg_stats AS s "
    "JOIN pg_catalog.pg_namespace AS n ON n.nspname = s.schemaname "
    "JOIN pg_catalog.pg_class AS c ON c.relnamespace = n.oid AND c.relname = s.tablename "
    "WHERE s.schemaname = :schema AND s.tablename = :table AND s.attname = :column"
)
# The comment `dibench domain load` puts on a schema it creates. Only a schema carrying it is ever
# dropped or replaced by dibench: any other one is a user's data, read in place.
CREATED_MARK = "created by dibench domain load: dibench domain remove --data may drop it"


class Warehouse:
    """The PostgreSQL engine (and the seam's reference implementation)."""

    engine_name = "postgresql"
    display_name = DISPLAY_NAMES["postgresql"]
    dialect = "postgres"        # the sqlglot dialect this engine's SQL is rendered in
    advises_indexes = True      # `domain check` proposes indexes for it (ingest/indexes.py)
    isolation = "a read-only role per domain schema (stores/pgroles.py)"

    def __init__(self, settings: Settings | None = None, engine: Engine | None = None) -> None:
        self.settings = settings or get_settings()
        self.engine = engine or create_engine(self.settings.database_url, pool_pre_ping=True, pool_size=5)
        self._role_engines: dict[str, Engine] = {}
        self._lock = threading.Lock()
        self.default_schema: str | None = None
        # Parallel workers of one read-only statement (None: the server's setting); a generation
        # worker sets it so that N workers do not start N x 2 parallel workers on N CPUs.
        self.parallel_workers: int | None = None

    def for_schema(self, schema: str) -> Warehouse:
        """This warehouse with `schema` as the default of `execute_readonly(schema=...)`: a handle
        for code that passes a Warehouse around on behalf of one domain. Engines are shared."""
        readonly_role(schema)
        scoped = copy.copy(self)
        scoped.default_schema = schema
        return scoped

    def execute_readonly(self, sql: str, params: dict[str, Any] | None = None,
                         *, timeout_s: float | None = None, schema: str | None = None,
                         exact: bool = False, cap: ResultCap | None = None, agent: bool = False) -> QueryResult:
        """Run one checked query in a READ ONLY transaction with a statement timeout, always rolled
        back. With `schema` (or a default from `for_schema`), it runs as that domain's read-only role
        (see stores.pgroles), which can read that schema only; without, as the admin role (only
        for callers with no domain). NUMERIC values come back as floats; `exact` keeps them
        Decimal (partial aggregates that are summed again, and answers, which core.answers rounds
        on the exact value as PostgreSQL's ROUND(numeric, d) does). With `cap` (an agent's SQL),
        rows are fetched through a server-side cursor up to the cap, and `cut` says where it stopped.
        `agent`: the SQL is an agent's, refused if it reads activity or statistics."""
        checked_readonly(sql, agent)
        schema = schema if schema is not None else self.default_schema
        timeout_ms = int(1000 * (timeout_s if timeout_s is not None else self.settings.statement_timeout_s))
        engine = self.engine if schema is None else self.role_engine(schema)
        started = time.perf_counter()
        try:
            columns, rows, cut = _run_readonly(engine, sql, params or {}, timeout_ms, exact, self.parallel_workers, cap)
        except DBAPIError as exc:
            if not (schema is not None and getattr(exc.orig, "sqlstate", None) in _MAYBE_STALE_GRANTS
                    and self._regranted(schema)):
                self._raise(exc, sql)
            try:  # the schema was recreated behind our back and has its grants again: one retry
                columns, rows, cut = _run_readonly(engine, sql, params or {}, timeout_ms, exact,
                                                   self.parallel_workers, cap)
            except DBAPIError as again:
                self._raise(again, sql)
        return QueryResult(columns, rows, time.perf_counter() - started, cut)

    def inspect_schema(self, schema: str) -> dict[str, TableShape] | None:
        """{table: shape} of `schema`, from the catalog; None when the schema is not there."""
        insp = inspect(self.admin())
        if schema not in insp.get_schema_names():
            return None
        shapes = {}
        for t in insp.get_table_names(schema=schema):
            cols = tuple((c["name"], str(c["type"])) for c in insp.get_columns(t, schema=schema))
            pk = tuple(insp.get_pk_constraint(t, schema=schema).get("constrained_columns") or ())
            fks = tuple(ForeignKey(tuple(fk["constrained_columns"]), fk.get("referred_schema"), fk["referred_table"],
                                   tuple(fk["referred_columns"])) for fk in insp.get_foreign_keys(t, schema=schema))
            shapes[t] = TableShape(cols, pk, fks)
        return shapes

    def column_stats(self, schema: str, table: str, column: str) -> tuple[float, float] | None:
        """(distinct values, table rows) of a column by the planner's statistics, or None when the
        table was never analysed."""
        res = self.execute_readonly(COLUMN_STATS_SQL, {"schema": schema, "table": table, "column": column},
                                    schema=schema)
        if not res.rows or res.rows[0][0] is None or not res.rows[0][1]:
            return None
        n_distinct, rows = float(res.rows[0][0]), float(res.rows[0][1])
        return (n_distinct if n_distinct >= 0 else -n_distinct * rows), rows

    def schema_origin(self, schema: str) -> str:
        """"absent", "dibench" (created by a dibench loader) or "foreign" (anyone else's)."""
        with admin_cursor(self.admin()) as cur:
            return schema_origin(cur, schema)

    def mark_created(self, schema: str) -> None:
        """Mark `schema` as made by a dibench loader (only such a schema is ever replaced or dropped)."""
        with admin_cursor(self.admin()) as cur:
            mark_created(cur, schema)

    def drop_schema(self, schema: str) -> None:
        """Drop a schema a dibench loader created (`domain remove --data`; the caller checked its origin)."""
        with admin_cursor(self.admin()) as cur:
            cur.execute(psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psql.Identifier(schema)))

    def data_file(self, schema: str) -> tuple[Path | None, str]:
        """The file that goes with `schema` on `domain remove --data` (an embedded engine's), or
        None and why none: a server's schema is its data."""
        return None, ""

    def remove_file(self) -> None:
        raise WarehouseError(f"a {self.display_name} warehouse has no data file to remove")

    def _regranted(self, schema: str) -> bool:
        """After a permission error: if the role lacks a grant on its own schema (dropped and
        recreated outside our loaders), grant it again and say so; a query that reached for
        another schema leaves everything as it is."""
        role = readonly_role(schema)
        with self.admin().connect() as conn:
            complete = conn.execute(text(
                "SELECT has_schema_privilege(:role, :schema, 'USAGE') AND coalesce(bool_and("
                "has_table_privilege(:role, c.oid, 'SELECT')), true) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :schema AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"),
                {"role": role, "schema": schema}).scalar()
        if complete:
            return False
        self.ensure_role(schema)
        return True

    @staticmethod
    def _raise(exc: DBAPIError, sql: str) -> NoReturn:
        orig = exc.orig
        sqlstate = getattr(orig, "sqlstate", None)
        if sqlstate == "57014":
            raise QueryTimeout("statement timed out (SQLSTATE 57014)") from exc
        if sqlstate == "25006":
            raise ReadOnlyViolation("write in read-only transaction", sql) from exc
        if (sqlstate is None and isinstance(exc, OperationalError)) or _unreachable(sqlstate):
            raise ServiceError(f"PostgreSQL is not reachable: {bounded_message(str(orig or exc))}",
                               hint="run `dibench services up`") from exc
        raise WarehouseError(f"SQL failed: {sanitized_error(orig)}") from exc

    def role_engine(self, schema: str) -> Engine:
        """The pooled engine of `schema`'s read-only role, made (and the role granted) on first use."""
        with self._lock:
            engine = self._role_engines.get(schema)
            if engine is None:
                role = self.ensure_role(schema)
                url = self.engine.url.set(username=role, password=self.settings.readonly_password_for(role))
                engine = create_engine(url, pool_pre_ping=True, pool_size=5)
                event.listen(engine, "checkin", _discard_session)
                self._role_engines[schema] = engine
            return engine

    def ensure_role(self, schema: str) -> str:
        """Create or update `schema`'s read-only role on the admin path; returns its name."""
        readonly_role(schema)  # a bad name fails before any SQL
        with admin_cursor(self.admin()) as cur:
            if cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
                raise WarehouseError(f"schema {schema!r} is not loaded", hint="dibench domain load <pack>")
            return ensure_readonly_role(cur, schema, timeout_ms=self.role_timeout_ms,
                                        password=self.settings.readonly_password_for(readonly_role(schema)))

    def ensure_all_roles(self) -> list[str]:
        """A read-only role for every domain schema already in the warehouse (idempotent)."""
        with admin_cursor(self.admin()) as cur:
            return ensure_all_readonly_roles(cur, timeout_ms=self.role_timeout_ms,
                                             password_for=self.settings.readonly_password_for)

    @property
    def role_timeout_ms(self) -> int:
        return int(1000 * self.settings.statement_timeout_s)

    def admin(self) -> Engine:
        """The engine for loaders and DDL (never used for generated SQL)."""
        return self.engine

    def loader_target(self) -> Any:
        """What a pack's loader function receives to write to: here the admin engine; each engine
        says its own (DuckDB: the file)."""
        return self.admin()

    def dispose(self) -> None:
        with self._lock:
            for engine in self._role_engines.values():
                engine.dispose()
            self._role_engines.clear()
        self.engine.dispose()


def schema_origin(cur: psycopg.Cursor[Any], schema: str) -> str:
    """"absent", "dibench" (created by a dibench loader) or "foreign" (anyone else's)."""
    row = cur.execute("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
                      (schema,)).fetchone()
    if row is None:
        return "absent"
    return "dibench" if row[0] == CREATED_MARK else "foreign"


def mark_created(cur: psycopg.Cursor[Any], schema: str) -> None:
    cur.execute(psql.SQL("COMMENT ON SCHEMA {} IS {}").format(psql.Identifier(schema), psql.Literal(CREATED_MARK)))


# URL scheme -> "module:class" of its engine, imported when a URL names it (the driver of an
# optional engine is an optional extra). Any other scheme is SQLAlchemy's, through PostgreSQL's code.
def open_warehouse(settings: Settings | None = None) -> Warehouse:
    """The warehouse of `settings.database_url`, on the engine its scheme names."""
    settings = settings or get_settings()
    target = ENGINES.get(engine_scheme(settings.database_url))
    if target is None:
        return Warehouse(settings)
    module, name = target.split(":")
    engine_class: type[Warehouse] = getattr(importlib.import_module(module), name)
    return engine_class(settings)


@lru_cache(maxsize=1)
def get_warehouse() -> Warehouse:
    return open_warehouse()
