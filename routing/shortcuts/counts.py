"""How many sources, read off the punctuation: sentences, asks, question marks; random databases."""
from __future__ import annotations

import random
from collections.abc import Callable

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts import surface
from dibench.routing.shortcuts.context import ShortcutContext
from dibench.routing.shortcuts.build import padded, submit

FEATURES: dict[str, Callable[[str], int]] = {
    "sentences": lambda r: len(surface.sentences(r)),
    "asks": surface.asks,
    "question-marks": lambda r: r.count("?"),
}


class CountRouter:
    """k = a count of the request's surface; one database is single, several parallel."""

    def __init__(self, feature: str, seed: int) -> None:
        self.feature, self.seed = feature, seed
        self.name = f"count-{feature}"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        k = max(FEATURES[self.feature](task.request), 1)
        dbs = padded([], k, env, random.Random(f"{self.seed}:{self.name}:{task.task_id}"))
        return submit(env, "single" if k == 1 else "parallel", dbs, task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [CountRouter(f, ctx.seed) for f in FEATURES]
