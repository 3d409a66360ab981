"""The oracle: submits each contract's gold route. It must score 100% on every metric."""
from __future__ import annotations

from routing.environment import RoutingEnvironment
from routing.execution import gold_branch_route
from routing.models import Contract, Route
from routing.routers import RouterTask


class OracleRouter:
    name = "oracle"

    def __init__(self, contracts: list[Contract]) -> None:
        self._by_id = {c.task_id: c for c in contracts}

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        c = self._by_id[task.task_id]
        return env.submit_route(Route(behaviour=c.behaviour, branches=[gold_branch_route(b) for b in c.branches]))
