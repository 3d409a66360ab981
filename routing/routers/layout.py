"""The layout-only router: what the request's layout alone gives away, with no look at the catalog.

It guesses the behaviour and the number of sources from surface features only (sentences, clause
joiners, numbering, cue words such as "first", "then", "fewest") and picks that many databases at
random. On unleaky requests it must score no better than the random router: a leakage probe.
"""
from __future__ import annotations

import random
import re

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Route, RouteBranch, RouteContribution, RouteEdge
from dibench.routing.routers import RouterTask

_SENTENCES = re.compile(r"[.?!:;](?:\s|$)")
_JOINERS = re.compile(r"\b(?:and|also|then|next|plus|besides|separately|first|using)\b", re.IGNORECASE)
_NUMBERED = re.compile(r"\(\d+\)")
CUES: dict[str, Behaviour] = {"fewest": "exploratory", "exploring": "exploratory", "cover": "exploratory",
                              "first": "sequential", "then": "sequential", "found in": "sequential",
                              "using the": "sequential", "several": "parallel", "independent": "parallel"}


def layout_features(request: str) -> tuple[int, int, int, tuple[str, ...]]:
    """(sentences, joiner words, numbered items, cue words present): the layout, not the content."""
    low = request.lower()
    return (len(_SENTENCES.findall(request + " ")), len(_JOINERS.findall(request)), len(_NUMBERED.findall(request)),
            tuple(sorted(c for c in CUES if c in low)))


def layout_guess(request: str) -> tuple[Behaviour, int]:
    sentences, joiners, numbered, cues = layout_features(request)
    k = max(numbered, sentences, 1)
    votes = [CUES[c] for c in cues]
    if votes:
        behaviour = max(set(votes), key=votes.count)
    else:
        behaviour = "single" if k == 1 and joiners == 0 else "parallel"
    if behaviour == "sequential":
        k = 2
    return behaviour, 1 if behaviour == "single" else max(k, 2)


class LayoutRouter:
    name = "layout-only"

    def __init__(self, seed: int = 42) -> None:
        self.seed = seed

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        rng = random.Random(f"{self.seed}:{task.task_id}")
        behaviour, k = layout_guess(task.request)
        ids = env.view.ids()
        dbs = rng.sample(ids, min(k, len(ids)))
        edges = [RouteEdge(source=dbs[0], target=dbs[1])] if behaviour == "sequential" and len(dbs) > 1 else []
        branch = RouteBranch(databases=sorted(dbs), edges=edges,
                             contributions=[RouteContribution(database=d, request=task.request) for d in dbs])
        return env.submit_route(Route(behaviour=behaviour, branches=[branch]))
