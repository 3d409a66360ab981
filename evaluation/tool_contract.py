"""What the task environment's tools promise a caller, apart from the environment itself: a
task's status words and the refusal whose message goes back to the agent as the tool's result.
The MCP server's tool signatures need them before any session is open (`evaluation.mcp_start`)."""
from __future__ import annotations

from typing import Literal

TaskStatus = Literal["open", "answered"]


class ToolRefused(Exception):
    """A call the environment refuses (unknown task, turn budget, a second submission): the
    message goes back to the agent as the tool's result."""
