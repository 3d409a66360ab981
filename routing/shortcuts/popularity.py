"""Guesses a reviewer brings that read neither words nor meaning: the databases most often in the
other tasks' gold sets (leave-one-out), k from the count of asks; the first or the last k databases
of the catalog's listed order; and the behaviour and size most common among the other tasks of about
the same length, databases at random."""
from __future__ import annotations

import random

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Contract, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts import surface
from dibench.routing.shortcuts.build import padded, submit
from dibench.routing.shortcuts.constant import OtherTasksDatabases
from dibench.routing.shortcuts.context import ShortcutContext
from dibench.routing.shortcuts.learned import SurfaceTable

LENGTH_BUCKET = 40  # characters: requests of about the same length share a bucket


class Popular(OtherTasksDatabases):
    """The k databases the most other tasks require, k = the count of asks."""

    name = "popular-databases"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        counts = self.counts(task.task_id)
        k = surface.asks(task.request)
        dbs = sorted(counts, key=lambda d: (-counts[d], d))[:k] or env.view.ids()[:1]
        return submit(env, "single" if len(dbs) == 1 else "parallel", dbs, task.request)


class Position:
    """The first (or last) k databases in the order the catalog lists them, k = the count of asks."""

    def __init__(self, last: bool) -> None:
        self.last = last
        self.name = "listed-last" if last else "listed-first"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        ids = env.view.ids()
        k = min(surface.asks(task.request), len(ids))
        dbs = ids[-k:] if self.last else ids[:k]
        return submit(env, "single" if len(dbs) == 1 else "parallel", dbs, task.request)


class Length:
    """The behaviour and size most common among the other tasks of about the same length."""

    name = "length-learned"

    def __init__(self, contracts: tuple[Contract, ...], seed: int) -> None:
        self.table = SurfaceTable(contracts, (lambda r: ("length", len(r) // LENGTH_BUCKET),))
        self.seed = seed

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        behaviour, k = self.table.guess(task)
        dbs = padded([], k, env, random.Random(f"{self.seed}:{self.name}:{task.task_id}"))
        label: Behaviour = behaviour  # type: ignore[assignment]
        return submit(env, label, dbs, task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [Popular(ctx.contracts), Position(False), Position(True), Length(ctx.contracts, ctx.seed)]
