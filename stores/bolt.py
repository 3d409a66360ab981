"""The Neo4j driver, imported without the data-frame libraries it would load with it.

At import the driver loads numpy, pandas and pyarrow when they are installed, only for
`Result.to_df()`, which dibench never calls; with the dev extra installed (it brings pandas), that
was most of a command's start-up CPU. They are hidden from the driver's import and stay importable
for everyone else afterwards.
"""
from __future__ import annotations

import sys

_HIDDEN = ("numpy", "pandas", "pyarrow")


def _import_driver() -> None:
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import neo4j  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


_import_driver()

from neo4j import (  # noqa: E402
    READ_ACCESS, WRITE_ACCESS, AsyncGraphDatabase, Driver, GraphDatabase, ManagedTransaction,
)
from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable  # noqa: E402

__all__ = ["READ_ACCESS", "WRITE_ACCESS", "AsyncGraphDatabase", "AuthError", "Driver", "GraphDatabase",
           "ManagedTransaction", "Neo4jError", "ServiceUnavailable"]
