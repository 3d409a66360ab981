"""Load Pagila (the PostgreSQL port of the Sakila DVD-rental database) into its own schema.

The pg_dump pair `pagila-schema.sql`, `pagila-data.sql` runs unchanged in a throwaway database
whose `public` schema is renamed, then that schema is copied into the warehouse in one
transaction (readers never see it half-loaded). The dump's `ALTER ... OWNER TO` lines are left
out. Why this route: docs/architecture.md, "Pagila's loader".
"""
from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.pool import NullPool

from dibench.core.config import Settings
from dibench.core.errors import DibenchError, WarehouseError
from dibench.stores.local import _pg_bin
from dibench.stores.pack_data import CREATED_MARK

FILES = ("pagila-schema.sql", "pagila-data.sql")
# Counts of the complete Pagila release (Settings().data_dir README); a mismatch means a
# different or truncated release, on which the pack's dates and rules would not hold.
# This release tags most films with two or three categories and pads store/staff with rows
# that no rental references; only stores 1-2 and staff 1-2 carry business.
EXPECTED_ROWS = {"rental": 16044, "payment": 16049, "film": 1000, "customer": 599, "inventory": 4581,
                 "category": 16, "film_category": 2367, "country": 109, "store": 500, "staff": 1500}
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
OWNER_LINE = re.compile(rb"^ALTER [A-Z ]+ .+ OWNER TO [^;]+;$")
COPY_START = re.compile(rb"^COPY .+ FROM stdin;$")
COPY_END = b"\\."
Quote = Callable[[str], str]


def source_files(path: str | Path | None) -> tuple[Path, Path]:
    folder = Path(path) if path is not None else Settings().data_dir / "pagila"
    files = tuple(folder / f for f in FILES)
    for f in files:
        if not f.is_file():
            raise DibenchError(f"{f}: Pagila dump file not found",
                               hint="pass --path to a folder with pagila-schema.sql and pagila-data.sql")
    return files[0], files[1]


def strip_owner_statements(dump: bytes) -> bytes:
    """Drop pg_dump's one-line `ALTER ... OWNER TO role;` statements, never touching COPY rows."""
    out: list[bytes] = []
    in_copy = False
    for line in dump.split(b"\n"):
        if in_copy:
            in_copy = line.rstrip(b"\r") != COPY_END
        elif COPY_START.match(line):
            in_copy = True
        elif OWNER_LINE.match(line):
            continue
        out.append(line)
    return b"\n".join(out)


def _libpq_env(engine: Engine, database: str) -> dict[str, str]:
    # Connection info goes through libpq's environment, so a password never shows in `ps`.
    url = engine.url
    env = {**os.environ, "PGHOST": url.host or "localhost", "PGPORT": str(url.port or 5432),
           "PGDATABASE": database}
    if url.username:
        env["PGUSER"] = url.username
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return env


def _psql(env: dict[str, str], args: list[str], what: str, *, script: bytes | None = None,
          pipe: IO[bytes] | None = None) -> None:
    """Run psql with ON_ERROR_STOP; its input is `script` or another process's output `pipe`."""
    argv = [_pg_bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *args]
    res = subprocess.run(argv, env=env, input=script, stdin=pipe, capture_output=True)
    if res.returncode != 0:
        raise WarehouseError(f"{what} failed (exit {res.returncode}): {res.stderr.decode(errors='replace').strip()}")


@contextmanager
def scratch_database(engine: Engine, quote: Quote) -> Iterator[str]:
    """A uniquely named empty database, dropped on exit (also after a failed load)."""
    name = f"dibench_scratch_pagila_{uuid.uuid4().hex[:12]}"
    auto = engine.execution_options(isolation_level="AUTOCOMMIT")
    with auto.connect() as conn:
        # template0: template1 may be in use by a concurrent session, which blocks CREATE DATABASE.
        conn.exec_driver_sql(f"CREATE DATABASE {quote(name)} TEMPLATE template0 ENCODING 'UTF8'")
    try:
        yield name
    finally:
        with auto.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")


def _copy_schema(engine: Engine, scratch: str, schema: str, quote: Quote) -> None:
    """pg_dump the renamed schema out of scratch, replace it in the warehouse in one transaction."""
    target = engine.url.database or "postgres"
    dump = subprocess.Popen([_pg_bin("pg_dump"), "--schema", schema, "--no-owner", "--no-privileges"],
                            env=_libpq_env(engine, scratch), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _psql(_libpq_env(engine, target),
              ["--single-transaction", "-c", f"DROP SCHEMA IF EXISTS {quote(schema)} CASCADE", "-f", "-",
               # CREATED_MARK is a constant without quotes: the literal needs no escaping.
               "-c", f"COMMENT ON SCHEMA {quote(schema)} IS '{CREATED_MARK}'"],
              f"restore of schema {schema}", pipe=dump.stdout)
    finally:
        assert dump.stdout is not None
        dump.stdout.close()
        err = dump.stderr.read().decode(errors="replace") if dump.stderr else ""
        if dump.wait() != 0:
            raise WarehouseError(f"pg_dump of scratch database {scratch} failed: {err.strip()}")


def _tables(conn: Connection, schema: str) -> list[str]:
    """Top-level tables of the schema (partitions are reached through their parent)."""
    return list(conn.execute(text(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = :schema AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1"),
        {"schema": schema}).scalars())


def table_counts(engine: Engine, schema: str) -> dict[str, int]:
    """Rows per top-level table (a partitioned table counts its partitions)."""
    quote = engine.dialect.identifier_preparer.quote_identifier
    with engine.connect() as conn:
        return {t: int(conn.execute(text(f"SELECT count(*) FROM {quote(schema)}.{quote(t)}")).scalar_one())
                for t in _tables(conn, schema)}


def analyze(engine: Engine, schema: str) -> None:
    """Planner statistics now: a restore leaves none, and the 10-table metric joins are planned blind
    (row estimates of 190 for 16,049 rows) until autovacuum gets round to the schema."""
    quote = engine.dialect.identifier_preparer.quote_identifier
    with engine.begin() as conn:
        for t in _tables(conn, schema):
            conn.execute(text(f"ANALYZE {quote(schema)}.{quote(t)}"))


def _check_release(counts: dict[str, int], folder: Path) -> None:
    wrong = {t: (counts.get(t), n) for t, n in EXPECTED_ROWS.items() if counts.get(t) != n}
    if wrong:
        detail = ", ".join(f"{t}: {got} rows, expected {want}" for t, (got, want) in sorted(wrong.items()))
        raise DibenchError(f"{folder}: not the complete Pagila release ({detail}); schema left unchanged")


def load(engine: Engine, schema: str = "pagila", path: str | Path | None = None, **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with the Pagila dump in `path` (default data_dir/pagila); return row counts.

    `size` and `seed` (passed to every loader by the CLI) mean nothing for a fixed dataset.
    """
    if not SCHEMA_NAME.fullmatch(schema) or schema == "public":
        raise DibenchError(f"invalid target schema {schema!r}: Pagila loads into its own schema, not public")
    schema_file, data_file = source_files(path)
    quote = engine.dialect.identifier_preparer.quote_identifier
    with scratch_database(engine, quote) as scratch:
        env = _libpq_env(engine, scratch)
        for f in (schema_file, data_file):
            _psql(env, ["-f", "-"], f"loading {f}", script=strip_owner_statements(f.read_bytes()))
        _psql(env, ["-c", f"ALTER SCHEMA public RENAME TO {quote(schema)}",
                    "-c", f"COMMENT ON SCHEMA {quote(schema)} IS 'Pagila DVD-rental sample data (loaded by dibench)'"],
              "renaming the scratch schema")
        # The payment metrics window on payment_date, which the dump indexes only per customer
        # and staff member (`dibench domain check pagila` lists no missing index). On the
        # partitioned parent, so every partition gets one.
        _psql(env, ["-c", f"CREATE INDEX ON {quote(schema)}.payment (payment_date)"], "indexing payment dates")
        # Checked before the copy, so a wrong release never replaces a good schema.
        scratch_engine = create_engine(engine.url.set(database=scratch), poolclass=NullPool)
        try:
            expected = table_counts(scratch_engine, schema)
        finally:
            scratch_engine.dispose()
        _check_release(expected, schema_file.parent)
        _copy_schema(engine, scratch, schema, quote)
    analyze(engine, schema)
    counts = table_counts(engine, schema)
    if counts != expected:
        raise WarehouseError(f"schema {schema}: row counts after the copy {counts} differ from the dump's {expected}")
    return {"tables": counts}
