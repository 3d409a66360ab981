"""A pack's data in the warehouse: the warehouse that holds its schema, the schema's columns,
replacing a schema in one transaction, which schemas dibench created, and a metric's data window."""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine

from dibench.core.config import get_settings
from dibench.core.errors import ConfigError, DibenchError
from dibench.core.models import MetricSpec
from dibench.core.pack import Pack, _rel
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.shape import time_bounds, without_window
from dibench.sqlops.tree import aliased_column
from dibench.stores.pgroles import ensure_readonly_role, readonly_role
from dibench.stores.warehouse import (  # noqa: F401  (CREATED_MARK, schema_origin: where loaders look)
    CREATED_MARK, Warehouse, admin_cursor, get_warehouse, mark_created, open_warehouse, schema_origin,
)

# A window wider than any data: a statement under it keeps every row its time bounds allow.
WIDE = (dt.date(1900, 1, 1), dt.date(2200, 1, 1))


def warehouse_for(pack: Pack) -> Warehouse:
    """The warehouse holding the pack's schema: its own database when pack.yaml names an
    environment variable with the URL (read now, never stored), else the configured one."""
    if pack.spec.database_env is None:
        return get_warehouse()
    url = os.environ.get(pack.spec.database_env)
    if not url:
        raise ConfigError(f"{_rel(pack.root / 'pack.yaml')}: database_env: environment variable "
                          f"{pack.spec.database_env} is not set", hint="export it with the database URL of the pack")
    return _own_warehouse(url)


@lru_cache(maxsize=8)
def _own_warehouse(url: str) -> Warehouse:
    return open_warehouse(get_settings().model_copy(update={"database_url": url}))


def refuse_foreign(wh: Warehouse, schema: str, pack: str) -> None:
    """Raise when `schema` exists and no dibench loader created it: loading would replace a user's data."""
    if wh.schema_origin(schema) == "foreign":
        raise DibenchError(f"pack {pack!r}: schema {schema!r} already exists and was not created by "
                           "`dibench domain load`; dibench never replaces data it did not create",
                           hint="name another schema in pack.yaml, drop the schema yourself, or pass --replace "
                                "if you mean it to be rebuilt")


@contextmanager
def replacing_schema(engine: Engine, schema: str, ddl: Path) -> Iterator[psycopg.Cursor[Any]]:
    """One transaction that drops and recreates `schema`, runs the DDL file in it and yields the
    cursor for the loader's COPYs; the old schema survives any failure before the commit. The
    domain's read-only role is granted the new tables in the same transaction, so readers never
    see the schema without its grants. The new schema carries the mark of a dibench-created one
    (`load_database` refused a foreign schema before the loader ran)."""
    settings = get_settings()
    with admin_cursor(engine) as cur:
        cur.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        cur.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        mark_created(cur, schema)
        # Transaction-local, so the pooled connection goes back with its usual search_path.
        cur.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        cur.execute(ddl.read_text())
        yield cur
        ensure_readonly_role(cur, schema, timeout_ms=int(1000 * settings.statement_timeout_s),
                             password=settings.readonly_password_for(readonly_role(schema)))


def copy_rows(cur: psycopg.Cursor[Any], table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """COPY `rows` into `table` (`columns` in order) on a loader's cursor; the rows written."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns))
    n = 0
    with cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


def schema_columns(wh: Warehouse, schema: str) -> dict[str, dict[str, str]]:
    """{table: {column: type}} of a loaded schema (empty when the schema is not loaded)."""
    shapes = wh.inspect_schema(schema) or {}
    return {t: dict(shape.columns) for t, shape in shapes.items()}


def as_date(v: Any) -> dt.date:
    return v.date() if isinstance(v, dt.datetime) else v


def metric_window(wh: Warehouse, metric: MetricSpec, *, schema: str | None = None) -> tuple[dt.date, dt.date]:
    """[first day, day after last) of the metric's data, from its own FROM clause."""
    template = parse(metric.template, where=f"metric {metric.id}: sql")
    params = {"start_date": WIDE[0], "end_date": WIDE[1], **metric.params}
    lo, hi = wh.execute_readonly(render(time_bounds(template, aliased_column(metric.time_ref))), params,
                                 schema=schema).rows[0]
    if lo is None:  # a window read as of one day of the period: the data of its FROM, whatever the window
        lo, hi = wh.execute_readonly(render(time_bounds(without_window(template), aliased_column(metric.time_ref))),
                                     params, schema=schema).rows[0]
    if lo is None:
        raise DibenchError(f"metric {metric.id}: no rows in its tables; load the domain data first",
                           hint="dibench domain load <pack>")
    return as_date(lo), as_date(hi) + dt.timedelta(days=1)
