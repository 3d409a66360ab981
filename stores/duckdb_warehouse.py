"""The DuckDB engine: a DuckDB file read in place (`duckdb:///absolute/path.duckdb`).

Every engine-specific fact of DuckDB lives here: how a file is opened read-only, which functions
and statements are refused, how the catalog is read, how the stages' PostgreSQL trees are
rendered for DuckDB. The `duckdb` package is the optional extra `dibench[duckdb]`, imported when
a DuckDB URL is opened. There is no per-domain role: isolation is a read-only open of one file
per domain with file access and extensions off and the configuration locked (docs/engines.md);
the statement check refuses the same first.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import Engine
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.qualify_tables import qualify_tables
from sqlglot.schema import MappingSchema

from dibench.core.config import Settings, get_settings
from dibench.core.errors import (
    ConfigError, QueryTimeout, ReadOnlyViolation, ServiceError, WarehouseError,
)
from dibench.sqlops.transpile import typed_params
from dibench.stores.engines import DISPLAY_NAMES
from dibench.stores.warehouse import (
    ForeignKey, QueryResult, ResultCap, TableShape, Warehouse, _fetch_to_cap, parse_query, statement_kind,
)

if TYPE_CHECKING:
    import duckdb

# Functions that read files, other databases or the network, run SQL given as text, or show the
# engine's settings, secrets and paths: never run on the read-only path.
FORBIDDEN_FUNCTIONS = frozenset({
    "glob", "sniff_csv", "query", "query_table", "getenv", "current_setting", "which_secret",
    "duckdb_settings", "duckdb_secrets", "duckdb_extensions", "duckdb_databases", "duckdb_temporary_files",
    "duckdb_memory", "duckdb_log", "duckdb_logs", "enable_logging", "install_extension", "load_extension",
    "json_execute_serialized_sql", "parquet_scan", "read_xlsx", "test_all_types",
})
FORBIDDEN_PREFIXES = ("read_", "parquet_", "pragma_", "sqlite_", "postgres_", "mysql_", "iceberg_", "delta_",
                      "http", "s3_", "azure_", "ducklake_", "checkpoint", "force_checkpoint")
# Statements that are not one query: refused by the tree check before the engine sees them.
WRITE_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Copy,
    exp.Into, exp.Pragma, exp.Set, exp.Attach, exp.Detach, exp.Use, exp.Export, exp.Install,
)
_PATHLIKE = re.compile(r"[./\\:~]")
_SYNTAX_ERRORS = ("ParserException", "BinderException", "CatalogException", "SyntaxException")
_MAX_ERROR_CHARS = 160
READER_CONFIG: dict[str, Any] = {
    "access_mode": "READ_ONLY",
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
# Where `dibench domain load` marks the schemas it built (DuckDB has no comment on a schema).
MARK_SCHEMA = "_dibench"


def duckdb_path(url: str) -> Path:
    """`duckdb:///abs/file.duckdb` -> /abs/file.duckdb (a relative path is refused: the working
    folder of a worker is not the user's)."""
    parts = urlsplit(url)
    if parts.scheme != "duckdb" or parts.netloc or not parts.path.startswith("/"):
        raise ConfigError("DuckDB URL must be duckdb:///absolute/path.duckdb")
    return Path("/" + unquote(parts.path).lstrip("/"))


def forbidden_function(name: str) -> bool:
    lowered = name.lower()
    return lowered in FORBIDDEN_FUNCTIONS or lowered.startswith(FORBIDDEN_PREFIXES)


def _refusal(node: exp.Expression) -> str | None:
    """Why one node of a query may not run on DuckDB's read-only path, or None."""
    if isinstance(node, WRITE_NODES):
        return statement_kind(node)
    if isinstance(node, exp.Lock):
        return "SELECT ... FOR UPDATE/SHARE"
    if isinstance(node, (exp.Anonymous, exp.Func)):
        fname = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        if forbidden_function(fname):
            return f"call to {fname.lower()}()"
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and _PATHLIKE.search(node.name):
        return "read of a file named as a table"
    return None


def _engine_tree(tree: exp.Expression) -> exp.Expression:
    """The facts of DuckDB the PostgreSQL tree does not carry. An unsized NUMERIC is arbitrary
    precision on PostgreSQL but DECIMAL(18,3) on DuckDB (it would cut a ratio to 3 decimals):
    DOUBLE keeps the digits an answer is rounded to. The table checksum of stores.fingerprint is
    DuckDB's own hash (stable within an engine, which is all a fingerprint compares). DuckDB has no
    TO_CHAR: read as DuckDB (the gold SQL through an agent's tool), PostgreSQL's
    TO_CHAR(month, 'YYYY-MM') would render as a cast to text ("2024-03-01 00:00:00", not the
    period "2024-03"), so it is DuckDB's STRFTIME with the same format."""
    def swap(node: exp.Expression) -> exp.Expression:
        fmt = node.args.get("format") if isinstance(node, exp.ToChar) else None
        if isinstance(fmt, exp.Literal) and fmt.is_string:
            return exp.TimeToStr(this=node.this, format=Postgres.format_time(fmt))
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.DECIMAL and not node.expressions:
            return exp.DataType.build("DOUBLE")
        if isinstance(node, exp.Anonymous) and node.name.lower() == "hashtextextended":
            return exp.cast(exp.Anonymous(this="hash", expressions=node.expressions[:1]), "HUGEINT")
        return node
    return tree.transform(swap, copy=False)


@dataclass(frozen=True)
class Catalog:
    """The column types of a DuckDB file, (schema, table, column, type) rows, and the schema an
    unqualified table is read from (the statement's search path)."""

    columns: tuple[tuple[str, str, str, str], ...]
    search: str | None = None

    @property
    def mapping(self) -> MappingSchema:
        tables: dict[str, dict[str, dict[str, str]]] = {}
        for schema, table, column, type_ in self.columns:
            tables.setdefault(schema, {}).setdefault(table, {})[column] = type_
        return MappingSchema(tables, dialect="duckdb")


def integer_division(tree: exp.Expression, catalog: Catalog) -> exp.Expression:
    """PostgreSQL divides two integers as integers, truncating toward zero (7 / 2 is 3, -7 / 2 is
    -3); DuckDB's `/` always divides as real numbers. Each division of our own (PostgreSQL) tree
    whose two operands are integers by the file's catalog is given its operand types, so that
    sqlglot renders it as a truncating integer division for DuckDB, and both engines give the same
    number. The types are found on a qualified copy; the statement itself keeps its text. A
    division whose operand types cannot be told (a name the catalog lacks) stays DuckDB's."""
    divisions = list(tree.find_all(exp.Div))
    if not divisions:
        return tree
    for i, node in enumerate(divisions):
        node.meta["division"] = i
    typed = tree.copy()
    try:
        mapping = catalog.mapping
        qualify_tables(typed, db=catalog.search, dialect="postgres")
        qualify_columns(typed, mapping, expand_alias_refs=False, expand_stars=False,
                        allow_partial_qualification=True, dialect="postgres")
        annotate_types(typed, schema=mapping, dialect="postgres")
    except SqlglotError:
        return tree
    for node in typed.find_all(exp.Div):
        i = node.meta.get("division")
        if isinstance(i, int) and node.left.is_type(*exp.DataType.INTEGER_TYPES) \
                and node.right.is_type(*exp.DataType.INTEGER_TYPES):
            divisions[i].left.type, divisions[i].right.type = node.left.type, node.right.type
    return tree


@dataclass(frozen=True)
class Rendered:
    sql: str
    names: tuple[str, ...]  # the placeholders it binds


@lru_cache(maxsize=4096)
def checked_duckdb(sql: str, agent: bool = False, catalog: Catalog | None = None) -> Rendered:
    """`sql` checked and rendered for DuckDB, once per distinct text (and catalog). Our own SQL is
    PostgreSQL (the trees the stages build), its integer divisions PostgreSQL's when `catalog`
    types their operands; an agent's is DuckDB's own, as its schema description says.
    Raises ReadOnlyViolation unless it is one side-effect-free query."""
    tree = parse_query(sql, read="duckdb" if agent else "postgres")
    for node in tree.walk():
        reason = _refusal(node)
        if reason is not None:
            raise ReadOnlyViolation(reason, sql)
    tree = _engine_tree(tree)
    if catalog is not None and not agent:
        tree = integer_division(tree, catalog)
    names = tuple(dict.fromkeys(p.name for p in tree.find_all(exp.Placeholder) if p.name))
    try:
        return Rendered(tree.sql(dialect="duckdb"), names)
    except SqlglotError as exc:
        raise ReadOnlyViolation("not expressible in DuckDB", sql) from exc


def sanitized_error(exc: BaseException) -> str:
    """A bounded, value-free description of a DuckDB error: its class, and for syntax, binder and
    catalog errors (whose names come from the query itself) the first line with literals blanked.
    Other messages may carry data (a value that failed a cast), so their text is never kept."""
    kind = type(exc).__name__
    out = f"DuckDB {kind}"
    if kind in _SYNTAX_ERRORS:
        lines = str(exc).strip().splitlines()
        first = re.sub(r"'[^']*'?", "'…'", lines[0] if lines else "")
        out += f": {first}"
    return out[:_MAX_ERROR_CHARS]


_readers: dict[Path, duckdb.DuckDBPyConnection] = {}
_readers_lock = threading.Lock()


def _reader(path: Path) -> duckdb.DuckDBPyConnection:
    """The process's read-only connection to `path` (each query runs on a cursor of its own)."""
    import duckdb

    with _readers_lock:
        conn = _readers.get(path)
        if conn is None:
            if not path.is_file():
                raise WarehouseError(f"DuckDB file {path} does not exist", hint="dibench domain load <pack>")
            try:
                conn = duckdb.connect(str(path), read_only=True, config=dict(READER_CONFIG))
            except duckdb.IOException as exc:  # a writer holds the file's lock
                raise ServiceError(f"DuckDB file {path} cannot be opened: {sanitized_error(exc)}",
                                   hint="wait for the process writing it (a `dibench domain load`) to finish") from exc
            _readers[path] = conn
        return conn


def close_readers(path: Path) -> None:
    """Close this process's read-only connection to `path`: a writer (a loader) needs the file alone."""
    with _readers_lock:
        conn = _readers.pop(path, None)
    if conn is not None:
        conn.close()


@dataclass(frozen=True)
class DuckDBFile:
    """What a loader writes to on DuckDB: the file, opened read-write by `connect()` (after this
    process's readers are closed)."""

    path: Path

    def connect(self) -> duckdb.DuckDBPyConnection:
        import duckdb

        close_readers(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        conn = duckdb.connect(str(self.path))
        if fresh:  # the file is dibench's own: `domain remove --data` may delete it
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{MARK_SCHEMA}"')
            conn.execute(f'CREATE TABLE "{MARK_SCHEMA}".file (created_by VARCHAR)')
            conn.execute(f"INSERT INTO \"{MARK_SCHEMA}\".file VALUES ('dibench')")
        return conn


class DuckDBWarehouse(Warehouse):
    """A DuckDB file as the warehouse (see the module's docstring)."""

    engine_name = "duckdb"
    display_name = DISPLAY_NAMES["duckdb"]
    dialect = "duckdb"
    advises_indexes = False  # a column store: scans are what its indexes would serve
    isolation = "a read-only open of one file per domain, external access off, configuration locked"

    def __init__(self, settings: Settings | None = None, engine: Engine | None = None) -> None:
        import duckdb  # noqa: F401  (the optional extra: a clear error now rather than at the first query)

        self.settings = settings or get_settings()
        self.path = duckdb_path(self.settings.database_url)
        self._lock = threading.Lock()
        self._role_engines: dict[str, Engine] = {}
        self.default_schema: str | None = None
        self.parallel_workers: int | None = None
        self._columns: tuple[tuple[int, int], tuple[tuple[str, str, str, str], ...]] | None = None

    def execute_readonly(self, sql: str, params: dict[str, Any] | None = None,
                         *, timeout_s: float | None = None, schema: str | None = None,
                         exact: bool = False, cap: ResultCap | None = None, agent: bool = False) -> QueryResult:
        """As Warehouse.execute_readonly, on the read-only file: `schema` is the search path of the
        statement's cursor; a timer interrupts a statement past its timeout."""
        import duckdb

        schema = schema if schema is not None else self.default_schema
        rendered = checked_duckdb(sql, agent, None if agent or "/" not in sql else self.catalog(schema))
        timeout = timeout_s if timeout_s is not None else self.settings.statement_timeout_s
        values = typed_params({k: v for k, v in (params or {}).items() if k in rendered.names})
        missing = [n for n in rendered.names if n not in values]
        if missing:
            raise WarehouseError(f"query not sent: no value for placeholder :{missing[0]}")
        started = time.perf_counter()
        cur = _reader(self.path).cursor()
        timer = threading.Timer(timeout, cur.interrupt)
        try:
            if schema is not None:
                cur.execute("SET search_path = " + exp.Literal.string(schema).sql(dialect="duckdb"))
            timer.start()
            cur.execute(rendered.sql, values or None)
            columns = [d[0] for d in cur.description or []]
            rows, cut = _fetch(cur, cap)
        except duckdb.InterruptException as exc:
            raise QueryTimeout(f"statement timed out after {timeout:g} s") from exc
        except duckdb.PermissionException as exc:
            raise ReadOnlyViolation("file or extension access", sql) from exc
        except duckdb.Error as exc:
            if "Cannot execute statement of type" in str(exc):
                raise ReadOnlyViolation("write on a read-only file", sql) from exc
            raise WarehouseError(f"SQL failed: {sanitized_error(exc)}") from exc
        finally:
            timer.cancel()
            cur.close()
        plain = (lambda row: tuple(row)) if exact else (lambda row: tuple(_plain(v) for v in row))
        return QueryResult(columns, [plain(r) for r in rows], time.perf_counter() - started, cut)

    def catalog(self, search: str | None) -> Catalog:
        """The file's column types (read again when the file has changed), with `search` as the
        schema of an unqualified table."""
        stat = self.path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if self._columns is None or self._columns[0] != key:
            rows = self._catalog("SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
                                 "WHERE database_name = current_database() ORDER BY ALL", [])
            self._columns = (key, tuple((str(a), str(b), str(c), str(d)) for a, b, c, d in rows))
        return Catalog(self._columns[1], search)

    def _catalog(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """Our own catalog query (not an agent's: the read-only check does not apply to it)."""
        cur = _reader(self.path).cursor()
        try:
            return cur.execute(sql, params).fetchall()
        finally:
            cur.close()

    def inspect_schema(self, schema: str) -> dict[str, TableShape] | None:
        if not self.path.is_file():
            return None
        db = "current_database()"
        if not self._catalog(f"SELECT 1 FROM duckdb_schemas() WHERE database_name = {db} AND schema_name = ?",
                             [schema]):
            return None
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, type_ in self._catalog(
                "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c JOIN duckdb_tables() t "
                f"ON t.table_oid = c.table_oid WHERE c.database_name = {db} AND c.schema_name = ? "
                "ORDER BY c.table_name, c.column_index", [schema]):
            columns.setdefault(table, []).append((column, type_))
        pks: dict[str, tuple[str, ...]] = {}
        fks: dict[str, list[ForeignKey]] = {}
        for table, kind, cols, ref_table, ref_cols in self._catalog(
                "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
                f"referenced_column_names FROM duckdb_constraints() WHERE database_name = {db} AND schema_name = ? "
                "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') ORDER BY table_name, constraint_index",
                [schema]):
            if kind == "PRIMARY KEY":
                pks[table] = tuple(cols)
            else:
                fks.setdefault(table, []).append(ForeignKey(tuple(cols), schema, ref_table, tuple(ref_cols)))
        return {t: TableShape(tuple(cols), pks.get(t, ()), tuple(fks.get(t, ()))) for t, cols in columns.items()}

    def column_stats(self, schema: str, table: str, column: str) -> tuple[float, float] | None:
        return None  # no planner statistics to ask: the grouped plan keeps its statements as they are

    def schema_origin(self, schema: str) -> str:
        if self.inspect_schema(schema) is None:
            return "absent"
        marked = self._catalog(
            "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ? "
            "AND table_name = 'created'", [MARK_SCHEMA])
        if not marked:
            return "foreign"
        rows = self._catalog(f'SELECT 1 FROM "{MARK_SCHEMA}".created WHERE schema_name = ?', [schema])
        return "dibench" if rows else "foreign"

    def mark_created(self, schema: str) -> None:
        with self.loader_target().connect() as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{MARK_SCHEMA}"')
            conn.execute(f'CREATE TABLE IF NOT EXISTS "{MARK_SCHEMA}".created (schema_name VARCHAR PRIMARY KEY)')
            conn.execute(f'INSERT OR IGNORE INTO "{MARK_SCHEMA}".created VALUES (?)', [schema])

    def loader_target(self) -> DuckDBFile:
        return DuckDBFile(self.path)

    def file_created(self) -> bool:
        """Whether a dibench loader created this file (it was absent when the loader opened it)."""
        return bool(self.path.exists() and self._catalog(
            "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ? "
            "AND table_name = 'file'", [MARK_SCHEMA]))

    def data_file(self, schema: str) -> tuple[Path | None, str]:
        """The file `domain remove --data` deletes with `schema` (dibench created it and it holds no
        other schema), or None with the reason the file is kept."""
        if not self.file_created():
            return None, f"kept file {self.path}: dibench did not create it"
        others = sorted({s for (s,) in self._catalog(
            "SELECT DISTINCT schema_name FROM duckdb_tables() WHERE database_name = current_database()", [])}
            - {schema, MARK_SCHEMA})
        if others:
            return None, f"kept file {self.path}: it also holds schema {', '.join(others)}"
        return self.path, f"file {self.path} (created by dibench domain load)"

    def drop_schema(self, schema: str) -> None:
        with self.loader_target().connect() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {exp.to_identifier(schema, quoted=True).sql(dialect='duckdb')} "
                         "CASCADE")
            conn.execute(f'DELETE FROM "{MARK_SCHEMA}".created WHERE schema_name = ?', [schema])

    def remove_file(self) -> None:
        close_readers(self.path)
        for p in (self.path, self.path.with_name(self.path.name + ".wal")):
            p.unlink(missing_ok=True)

    def admin(self) -> Engine:
        raise WarehouseError("a DuckDB warehouse has no SQLAlchemy admin engine",
                             hint="loaders receive Warehouse.loader_target(), a DuckDBFile")

    def ensure_role(self, schema: str) -> str:
        """No role to make: the file is opened read-only (see the module's docstring)."""
        if self.inspect_schema(schema) is None:
            raise WarehouseError(f"schema {schema!r} is not in DuckDB file {self.path}",
                                 hint="dibench domain load <pack>")
        return f"read-only open of {self.path.name}"

    def ensure_all_roles(self) -> list[str]:
        return []

    def role_engine(self, schema: str) -> Engine:
        raise WarehouseError("a DuckDB warehouse has no per-domain role engines")

    def dispose(self) -> None:
        close_readers(self.path)


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def _fetch(cur: duckdb.DuckDBPyConnection, cap: ResultCap | None) -> tuple[list[Any], str | None]:
    return (cur.fetchall(), None) if cap is None else _fetch_to_cap(cur, cap)
