"""dibench: verifiable, in-domain benchmarks for enterprise data agents.

The Python API (`load_pack`, `ingest_pack`, `generate`, `export`, `export_lines`, `score`) is
documented in `dibench.service.library`; the CLI (`dibench ...`) and the HTTP API call the same
functions. They are imported on first use, so `import dibench` stays cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "export", "export_lines", "generate", "ingest_pack", "load_pack", "score"]

if TYPE_CHECKING:
    from dibench.service.library import export, export_lines, generate, ingest_pack, load_pack, score


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dibench.service import library

        return getattr(library, name)
    raise AttributeError(f"module 'dibench' has no attribute {name!r}")
