"""Build or load a pack's database through the loader its pack.yaml names."""
from __future__ import annotations

import importlib
import importlib.util
import time
from typing import Any

from dibench.core.errors import DibenchError
from dibench.core.pack import Pack
from dibench.stores.warehouse import Warehouse


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

