"""The agents' SQL tool names the engine it runs on (from the engine seam, not a literal) in each
of its forms: the LLM agent's tool spec, the Inspect tool and the MCP server's tools. About 8 s,
nearly all of it importing Inspect and the MCP SDK; no query runs."""
from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from dibench.core.config import get_settings
from dibench.evaluation.agents.tools import Toolbox, sql_tool_spec
from dibench.stores.warehouse import Warehouse, open_warehouse


@pytest.fixture(params=["postgresql", "duckdb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Warehouse, str]:
    if request.param == "postgresql":
        return open_warehouse(get_settings()), "PostgreSQL"
    url = f"duckdb://{tmp_path / 'shop.duckdb'}"
    return open_warehouse(get_settings().model_copy(update={"database_url": url})), "DuckDB"


def test_the_sql_tool_names_the_warehouse_engine(engine: tuple[Warehouse, str]) -> None:
    wh, name = engine
    other = {"PostgreSQL": "DuckDB", "DuckDB": "PostgreSQL"}[name]
    spec = sql_tool_spec(wh)["function"]["description"]
    assert f"on the {name} database" in spec and other not in spec

    from inspect_ai.tool import ToolDef

    from dibench.evaluation.inspect_task import _tools

    tool = next(t for t in _tools(Toolbox(wh, None, schema="shop")) if ToolDef(t).name == "sql_query")  # type: ignore[arg-type]
    assert f"on the {name} database" in ToolDef(tool).description and set(ToolDef(tool).parameters.properties) == \
        {"sql", "params"}

    from dibench.evaluation.mcp_server import build_server

    server = build_server(SimpleNamespace(wh=wh))  # type: ignore[arg-type]  # only its warehouse is read here
    tools = {t.name: t.description or "" for t in asyncio.run(server.list_tools())}
    assert f"on the {name} database" in tools["sql_query"] and f"({name})" in tools["describe_schema"]
    assert other not in tools["sql_query"] + tools["describe_schema"]
    # `dibench mcp` names the engine from the URL before the warehouse is open: the same name
    from dibench.stores.engines import display_name

    assert display_name(wh.settings.database_url) == name
