"""Build or load a pack's database through the loader its pack.yaml names."""
from __future__ import annotations

import importlib
import time
from typing import Any

from sqlalchemy import inspect

from ingest.pack import Pack
from service.errors import DibenchError
from service.warehouse import Warehouse


def load_database(pack: Pack, wh: Warehouse, **overrides: Any) -> dict[str, Any]:
    """Call `module:function(engine, schema, **options)`; returns the loader's report (row counts)."""
    module_name, func_name = pack.spec.loader.entry.split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: cannot import {pack.spec.loader.entry}: {exc}") from exc
    options = {**pack.spec.loader.options, **{k: v for k, v in overrides.items() if v is not None}}
    started = time.perf_counter()
    report = func(wh.admin(), pack.schema, **options) or {}
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
