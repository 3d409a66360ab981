"""A seeded random router: a floor every other router should clear. It never reads the request; its
behaviour label is drawn with the weights of a behaviour mix (the stratified chance level: always
naming the commonest label would beat a uniform draw without reading anything), by default the
published one, or the mix of the benchmark evaluated (a benchmark publishes its counts); and, given
the benchmark's gold set sizes per behaviour, its number of databases is drawn with those weights
too (a constant "two sources" would otherwise beat it on a small catalog without reading anything)."""
from __future__ import annotations

import random
from collections.abc import Mapping

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.generate import REFERENCE_MIX
from dibench.routing.models import BEHAVIOURS, Route, RouteBranch, RouteContribution, RouteEdge
from dibench.routing.routers import RouterTask


class RandomRouter:
    name = "random"

    def __init__(self, seed: int = 42, mix: Mapping[str, int] | None = None,
                 sizes: Mapping[str, Mapping[int, int]] | None = None) -> None:
        self.seed = seed
        self.weights = [(mix or REFERENCE_MIX).get(b, 0) for b in BEHAVIOURS]
        self.sizes = {b: sorted(s.items()) for b, s in (sizes or {}).items() if s}

    def _size(self, rng: random.Random, behaviour: str) -> int:
        """Databases per branch: drawn with the benchmark's own gold sizes of this behaviour when known."""
        if behaviour in self.sizes:
            ks, ws = zip(*self.sizes[behaviour])
            return int(rng.choices(ks, weights=ws)[0])
        return 1 if behaviour in ("single", "interactive") else rng.randint(2, 4)

    def _branch(self, rng: random.Random, ids: list[str], k: int, request: str, chain: bool) -> RouteBranch:
        dbs = rng.sample(ids, min(k, len(ids)))  # a catalog smaller than the draw gives what it has
        edges = [RouteEdge(source=dbs[0], target=dbs[1])] if chain and len(dbs) >= 2 else []
        return RouteBranch(databases=sorted(dbs), edges=edges,
                           contributions=[RouteContribution(database=d, request=request) for d in dbs])

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        rng = random.Random(f"{self.seed}:{task.task_id}")
        ids = env.view.ids()
        behaviour = rng.choices(BEHAVIOURS, weights=self.weights)[0]
        n_branches = 2 if behaviour == "interactive" else 1
        k = self._size(rng, behaviour)
        branches = [self._branch(rng, ids, k, task.request, behaviour == "sequential") for _ in range(n_branches)]
        return env.submit_route(Route(behaviour=behaviour, branches=branches))
