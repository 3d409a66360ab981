"""Reference routers: oracle, random, lexical (BM25) and an LLM router through langchain-core tools."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Route


@dataclass(frozen=True)
class RouterTask:
    """All a router is told about a task: its id and the request text."""

    task_id: str
    request: str


class Router(Protocol):
    name: str

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        """Return the route; a router submits it through env.submit_route."""
        ...
