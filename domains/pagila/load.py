"""Load Pagila (the PostgreSQL port of the Sakila DVD-rental database) into its own schema.

The source is the pg_dump pair `pagila-schema.sql` then `pagila-data.sql`. Those files start
with `set_config('search_path', '', false)` and qualify every object with `public.` (325 times in
the schema file, 34 in the data file), so `PGOPTIONS=-c search_path=...` cannot redirect them,
and a textual `public.` -> `pagila.` rewrite would also have to tell DDL from COPY rows and
function bodies. Instead the dump runs unchanged in a throwaway database, where its `public`
schema is renamed; PostgreSQL resolves views, column defaults (sequences), triggers, domains,
the enum type and the payment partitions by OID, so they all follow the rename. That one schema
is then copied into the warehouse with `pg_dump --schema | psql --single-transaction`, which
drops the old copy and creates the new one atomically (readers never see a half-loaded schema).

One edit is made to the dump: its `ALTER ... OWNER TO postgres;` lines are left out, because the
role of the dump's author need not exist on this server (what `pg_restore --no-owner` does).
"""
from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from service.config import Settings
from service.errors import DibenchError, WarehouseError
from service.local import _pg_bin

FILES = ("pagila-schema.sql", "pagila-data.sql")
# Counts of the complete Pagila release (Settings().data_dir README); a mismatch means a
# different or truncated release, on which the pack's dates and rules would not hold.
EXPECTED_ROWS = {"rental": 16044, "payment": 16049, "film": 1000, "customer": 599, "inventory": 4581,
                 "store": 2, "staff": 2, "category": 16, "film_category": 1000}
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
OWNER_LINE = re.compile(rb"^ALTER [A-Z ]+ .+ OWNER TO [^;]+;$")
COPY_START = re.compile(rb"^COPY .+ FROM stdin;$")
COPY_END = b"\\."


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
           "PGDATABASE": database, "PGOPTIONS": "-c client_min_messages=warning"}
    if url.username:
        env["PGUSER"] = url.username
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return env


def _psql(env: dict[str, str], args: list[str], stdin: Any = None, what: str = "psql") -> None:
    argv = [_pg_bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *args]
    res = subprocess.run(argv, env=env, input=stdin if isinstance(stdin, bytes) else None,
                         stdin=None if isinstance(stdin, bytes) else stdin, capture_output=True)
    if res.returncode != 0:
        raise WarehouseError(f"{what} failed (exit {res.returncode}): {res.stderr.decode(errors='replace').strip()}")


@contextmanager
def scratch_database(engine: Engine, quote: Any) -> Iterator[str]:
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


def _copy_schema(engine: Engine, scratch: str, schema: str, quote: Any) -> None:
    """pg_dump the renamed schema out of scratch, replace it in the warehouse in one transaction."""
    target = engine.url.database or "postgres"
    dump = subprocess.Popen([_pg_bin("pg_dump"), "--schema", schema, "--no-owner", "--no-privileges"],
                            env=_libpq_env(engine, scratch), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _psql(_libpq_env(engine, target),
              ["--single-transaction", "-c", f"DROP SCHEMA IF EXISTS {quote(schema)} CASCADE", "-f", "-"],
              stdin=dump.stdout, what=f"restore of schema {schema}")
    finally:
        assert dump.stdout is not None
        dump.stdout.close()
        err = dump.stderr.read().decode(errors="replace") if dump.stderr else ""
        if dump.wait() != 0:
            raise WarehouseError(f"pg_dump of scratch database {scratch} failed: {err.strip()}")


def table_counts(engine: Engine, schema: str) -> dict[str, int]:
    """Rows per top-level table (a partitioned table counts its partitions; they are not listed)."""
    quote = engine.dialect.identifier_preparer.quote_identifier
    with engine.connect() as conn:
        names = conn.execute(text(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = :schema AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1"),
            {"schema": schema}).scalars().all()
        return {t: int(conn.execute(text(f"SELECT count(*) FROM {quote(schema)}.{quote(t)}")).scalar_one())
                for t in names}


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
            _psql(env, ["-f", "-"], stdin=strip_owner_statements(f.read_bytes()), what=f"loading {f}")
        _psql(env, ["-c", f"ALTER SCHEMA public RENAME TO {quote(schema)}",
                    "-c", f"COMMENT ON SCHEMA {quote(schema)} IS 'Pagila DVD-rental sample data (loaded by dibench)'"],
              what="renaming the scratch schema")
        _copy_schema(engine, scratch, schema, quote)
    counts = table_counts(engine, schema)
    wrong = {t: (counts.get(t), n) for t, n in EXPECTED_ROWS.items() if counts.get(t) != n}
    if wrong:
        detail = ", ".join(f"{t}: {got} rows, expected {want}" for t, (got, want) in sorted(wrong.items()))
        raise DibenchError(f"Pagila in {schema_file.parent} is not the complete release: {detail}")
    return {"tables": counts}
