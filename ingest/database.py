"""Build or load a pack's database through the loader its pack.yaml names."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import time
from typing import Any

from dibench.core.errors import DibenchError
from dibench.core.pack import Pack, remember_pack
from dibench.stores.pack_data import refuse_foreign
from dibench.stores.warehouse import Warehouse


def _loader(pack: Pack) -> Any:
    """Import the loader: as a module on sys.path, else as `<pack root>/<last module part>.py`
    (so a user's pack outside this repo can carry its own loader)."""
    if pack.spec.loader is None:
        raise DibenchError(f"{pack.root}/pack.yaml: no loader: the pack reads a schema that already exists",
                           hint=f"`dibench domain check {pack.name}` reports what it finds there")
    module_name, func_name = pack.spec.loader.entry.split(":")
    try:
        if module_name.endswith(".py"):  # "load.py:load": the pack's own file, never a module elsewhere
            raise ImportError(f"no module named {module_name!r}")
        module = importlib.import_module(module_name)
    except ImportError as exc:
        local = pack.root / (module_name if module_name.endswith(".py") else f"{module_name.rsplit('.', 1)[-1]}.py")
        if not local.is_file():
            raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: cannot import {module_name}: {exc}") from exc
        spec = importlib.util.spec_from_file_location(f"dibench_pack_{pack.name}", local)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    if not hasattr(module, func_name):
        raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: {module_name} has no function {func_name!r}")
    func = getattr(module, func_name)
    if not inspect.isfunction(func):  # a builtin (os:system), a class, a value: never called
        raise DibenchError(f"{pack.root}/pack.yaml: loader.entry: {pack.spec.loader.entry} is not a loader "
                           f"function (a Python def taking engine, schema, **options)")
    return func


def load_database(pack: Pack, wh: Warehouse, *, replace: bool = False, **overrides: Any) -> dict[str, Any]:
    """Call `module:function(engine, schema, **options)`; returns the loader's report (row counts).

    Refused when the schema exists and no dibench loader created it, unless `replace`: a schema
    someone else made is never replaced by accident. The loaded schema is marked as dibench's."""
    func = _loader(pack)
    assert pack.spec.loader is not None  # _loader refused a pack without one
    options = {**pack.spec.loader.options, **{k: v for k, v in overrides.items() if v is not None}}
    if not replace:
        refuse_foreign(wh, pack.schema, pack.name)
    started = time.perf_counter()
    report = func(wh.loader_target(), pack.schema, **options) or {}
    # Whatever the loader did (its own DDL, a restore from a dump), the schema is ours now, and the
    # read-only role sees the result.
    wh.mark_created(pack.schema)
    wh.ensure_role(pack.schema)
    remember_pack(pack)
    report = dict(report)
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report

