"""An LLM router: any langchain-core chat model that supports tool calling.

The model gets the environment's tools (search_catalog, inspect_database, inspect_relationships,
ask_clarification when offered, submit_route) and the request; the loop runs its tool calls
until it submits a route or runs out of turns. A malformed tool call is answered with the error,
so the model can correct itself; no submission gives an empty route, which scores zero.
"""
from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.errors import RouteInvalid
from dibench.routing.models import Route
from dibench.routing.routers import RouterTask

MAX_TURNS = 12
SYSTEM = (
    "You route a data request to the databases of a large catalog. Use the tools to find the databases whose "
    "data the request needs. Then call submit_route once with: behaviour (single: one source; parallel: several "
    "independent sources; sequential: one source's result feeds another's query; exploratory: the fewest sources "
    "covering named capabilities; interactive: the request has two readings, submit one branch per reading), and "
    "per branch the selected databases, dependency edges (source -> target, with the upstream result column) and "
    "one local request per selected database, worded for that database."
)


class LLMRouter:
    def __init__(self, model: BaseChatModel, max_turns: int = MAX_TURNS) -> None:
        self.model = model
        self.max_turns = max_turns
        self.name = f"llm:{type(model).__name__}"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        tools = {t.name: t for t in env.tools()}
        bound = self.model.bind_tools(list(tools.values()))
        messages: list[BaseMessage] = [SystemMessage(SYSTEM), HumanMessage(task.request)]
        for _turn in range(self.max_turns):
            reply = bound.invoke(messages)
            messages.append(reply)
            calls = reply.tool_calls if isinstance(reply, AIMessage) else []
            if not calls:
                break
            for call in calls:
                messages.append(ToolMessage(self._run(tools, dict(call)), tool_call_id=call.get("id") or call["name"]))
            if env.submitted is not None:
                return env.submitted
        return Route(behaviour="single", branches=[])

    @staticmethod
    def _run(tools: dict[str, Any], call: dict[str, Any]) -> str:
        tool = tools.get(call["name"])
        if tool is None:
            return json.dumps({"error": f"no tool named {call['name']!r}; available: {sorted(tools)}"})
        try:
            return json.dumps(tool.invoke(call["args"]), default=str)
        except (RouteInvalid, ValidationError, ValueError) as exc:
            return json.dumps({"error": str(exc).splitlines()[0]})
