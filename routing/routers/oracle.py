"""The oracle: submits each contract's gold route.

It knows every reading of an interactive task but not which one the user means: it asks (when
allowed) and routes the reading the answer describes; without the turn it can only pick one of
the readings at random. Everything else it routes perfectly, never asking.
"""
from __future__ import annotations

import random

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.execution import gold_branch_route
from dibench.routing.models import Branch, Contract, Route
from dibench.routing.routers import RouterTask


class OracleRouter:
    name = "oracle"

    def __init__(self, contracts: list[Contract], seed: int = 42) -> None:
        self._by_id = {c.task_id: c for c in contracts}
        self.seed = seed

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        c = self._by_id[task.task_id]
        if c.intended is None:
            return env.submit_route(Route(behaviour=c.behaviour, branches=[gold_branch_route(b) for b in c.branches]))
        reading = self._reading(c, env)
        return env.submit_route(Route(behaviour=c.behaviour, branches=[gold_branch_route(reading)]))

    def _reading(self, c: Contract, env: RoutingEnvironment) -> Branch:
        if env.can_clarify:
            answer = env.ask_clarification("Which of the possible readings do you mean?")
            for b in c.branches:
                if b.interpretation and b.interpretation in answer:
                    return b
        return random.Random(f"{self.seed}:{c.task_id}").choice(c.branches)
