"""A route from a guess: the behaviour label and an ordered list of databases."""
from __future__ import annotations

import random

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Route, RouteBranch, RouteContribution, RouteEdge


def branch(dbs: list[str], request: str, chain: bool = False) -> RouteBranch:
    edges = [RouteEdge(source=a, target=b) for a, b in zip(dbs, dbs[1:])] if chain else []
    return RouteBranch(databases=sorted(dbs), edges=edges,
                       contributions=[RouteContribution(database=d, request=request) for d in dbs])


def submit(env: RoutingEnvironment, behaviour: Behaviour, dbs: list[str], request: str) -> Route:
    """Submit dbs (in order: a sequential guess chains them) under behaviour; an interactive guess
    splits them over two one-database branches."""
    if behaviour == "interactive" and len(dbs) >= 2:
        return env.submit_route(Route(behaviour=behaviour, branches=[branch([d], request) for d in dbs[:2]]))
    if behaviour == "single":
        dbs = dbs[:1]
    return env.submit_route(Route(behaviour=behaviour, branches=[branch(dbs, request, behaviour == "sequential")]))


def padded(first: list[str], k: int, env: RoutingEnvironment, rng: random.Random) -> list[str]:
    """first, then random other databases, to k (never fewer than one)."""
    out = list(dict.fromkeys(first))[:max(k, 1)]
    rest = [d for d in env.view.ids() if d not in out]
    rng.shuffle(rest)
    return out + rest[:max(k, 1) - len(out)]


def gold_size(behaviour: str, n_databases: int) -> int:
    """How many databases a guess of this behaviour routes (interactive: two one-database readings)."""
    return 2 if behaviour == "interactive" else n_databases
