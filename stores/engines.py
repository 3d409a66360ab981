"""Which warehouse engine a database URL names, without importing any engine's client: the
engine seam's table (`stores.warehouse.open_warehouse` opens the engine; `dibench mcp` names it
in its tools before the warehouse is opened)."""
from __future__ import annotations

# scheme -> the engine's class; any other scheme is PostgreSQL's (stores/warehouse.py)
ENGINES = {"duckdb": "dibench.stores.duckdb_warehouse:DuckDBWarehouse"}
DISPLAY_NAMES = {"postgresql": "PostgreSQL", "duckdb": "DuckDB"}  # each engine class's display_name


def engine_scheme(url: str) -> str:
    return url.split(":", 1)[0].split("+", 1)[0].lower()


def display_name(url: str) -> str:
    """The name of the engine `url` names, as its warehouse class says it."""
    return DISPLAY_NAMES.get(engine_scheme(url), DISPLAY_NAMES["postgresql"])
