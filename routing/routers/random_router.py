"""A seeded random router: a floor every other router should clear."""
from __future__ import annotations

import random

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import BEHAVIOURS, Route, RouteBranch, RouteContribution, RouteEdge
from dibench.routing.routers import RouterTask


class RandomRouter:
    name = "random"

    def __init__(self, seed: int = 42) -> None:
        self.seed = seed

    def _branch(self, rng: random.Random, ids: list[str], k: int, request: str, chain: bool) -> RouteBranch:
        dbs = rng.sample(ids, k)
        edges = [RouteEdge(source=dbs[0], target=dbs[1])] if chain and k >= 2 else []
        return RouteBranch(databases=sorted(dbs), edges=edges,
                           contributions=[RouteContribution(database=d, request=request) for d in dbs])

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        rng = random.Random(f"{self.seed}:{task.task_id}")
        ids = env.view.ids()
        behaviour = rng.choice(BEHAVIOURS)
        n_branches = 2 if behaviour == "interactive" else 1
        k = 1 if behaviour in ("single", "interactive") else rng.randint(2, 4)
        branches = [self._branch(rng, ids, k, task.request, behaviour == "sequential") for _ in range(n_branches)]
        return env.submit_route(Route(behaviour=behaviour, branches=branches))
