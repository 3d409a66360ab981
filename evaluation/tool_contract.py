"""What the task environment's tools promise a caller, apart from the environment itself: a
task's status words and the refusal whose message goes back to the agent as the tool's result.
The MCP server's tools need them before any session is open (`evaluation.mcp_start`)."""
from __future__ import annotations

from typing import Literal

TaskStatus = Literal["open", "answered"]
ROW_LIMIT = 50  # rows a model sees per query; row_count still tells it the full size


def sql_tool_text(engine: str) -> str:
    """What the agents' SQL tool says it runs on: the warehouse's engine (PostgreSQL, DuckDB)."""
    return (f"Run ONE read-only SELECT or WITH query on the {engine} database. Bind values as :name "
            f"placeholders given in `params`. Returns JSON with columns, at most {ROW_LIMIT} rows, the full "
            f"row_count, or an error message.")


class ToolRefused(Exception):
    """A call the environment refuses (unknown task, turn budget, a second submission): the
    message goes back to the agent as the tool's result."""
