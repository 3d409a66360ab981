"""Build or load a pack's database through the loader its pack.yaml names."""
from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine, inspect

from ingest.pack import Pack
from service.config import get_settings
from service.errors import DibenchError
from service.pgroles import ensure_readonly_role
from service.warehouse import Warehouse, admin_cursor

__all__ = ["admin_cursor", "load_database", "replacing_schema", "schema_columns"]


@contextmanager
def replacing_schema(engine: Engine, schema: str, ddl: Path) -> Iterator[psycopg.Cursor[Any]]:
    """One transaction that drops and recreates `schema`, runs the DDL file in it and yields the
    cursor for the loader's COPYs; the old schema survives any failure before the commit. The
    domain's read-only role is granted the new tables in the same transaction, so readers never
    see the schema without its grants."""
    settings = get_settings()
    with admin_cursor(engine) as cur:
        cur.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        cur.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        # Transaction-local, so the pooled connection goes back with its usual search_path.
        cur.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        cur.execute(ddl.read_text())
        yield cur
        ensure_readonly_role(cur, schema, timeout_ms=int(1000 * settings.statement_timeout_s),
                             password=settings.readonly_password)


def _loader(pack: Pack) -> Any:
    """Import the loader: as a module on sys.path, else as `<pack root>/<last module part>.py`
    (so a user's pack outside this repo can carry its own loader)."""
    if pack.spec.loader is None:
        raise DibenchError(f"{pack.root}/pack.yaml: no loader: the pack reads a schema that already exists",
                           hint=f"`dibench domain check {pack.name}` reports what it finds there")
    module_name, func_name = pack.spec.loader.entry.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        local = pack.root / f"{module_name.rsplit('.', 1)[-1]}.py"
        if not local.is_file():
            raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: cannot import {module_name}: {exc}") from exc
        spec = importlib.util.spec_from_file_location(f"dibench_pack_{pack.name}", local)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    if not hasattr(module, func_name):
        raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: {module_name} has no function {func_name!r}")
    return getattr(module, func_name)


def load_database(pack: Pack, wh: Warehouse, **overrides: Any) -> dict[str, Any]:
    """Call `module:function(engine, schema, **options)`; returns the loader's report (row counts)."""
    func = _loader(pack)
    assert pack.spec.loader is not None  # _loader refused a pack without one
    options = {**pack.spec.loader.options, **{k: v for k, v in overrides.items() if v is not None}}
    started = time.perf_counter()
    report = func(wh.admin(), pack.schema, **options) or {}
    # Whatever the loader did (its own DDL, a restore from a dump), the read-only role sees the result.
    wh.ensure_role(pack.schema)
    report = dict(report)
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report


def schema_columns(wh: Warehouse, schema: str) -> dict[str, dict[str, str]]:
    """{table: {column: type}} of a loaded schema (empty when the schema is not loaded)."""
    insp = inspect(wh.admin())
    if schema not in insp.get_schema_names():
        return {}
    return {t: {c["name"]: str(c["type"]) for c in insp.get_columns(t, schema=schema)}
            for t in insp.get_table_names(schema=schema)}
