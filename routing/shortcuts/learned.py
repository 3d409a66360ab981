"""A nearest-surface guess learned from the benchmark's other tasks (leave-one-out): the behaviour
and number of sources most common among tasks that open with the same words, or else share the
request's counts of sentences and asks; databases at random, by label lookup, or the top of the
ranking by the stems the request shares with each database's names (a reviewer's word overlap with k
read off the layout, as well as the layout can give it).

This family stands for strategies nobody listed: whatever the surface of a request says about its
contract, tasks with the same surface say it too.
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Contract, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts import surface
from dibench.routing.shortcuts.context import ShortcutContext
from dibench.routing.shortcuts.build import gold_size, padded, submit
from dibench.routing.lookup import looked_up, overlap_ranked
from dibench.routing.view import CatalogView

Key = Callable[[str], Hashable]
KEYS: tuple[Key, ...] = (
    lambda r: ("opening", surface.opening(r, 3), surface.asks(r)),
    lambda r: ("opening", surface.opening(r, 2)),
    lambda r: ("counts", len(surface.sentences(r)), surface.asks(r), r.count("?")),
    lambda r: ("asks", surface.asks(r)),
)
Answer = tuple[str, int]  # (behaviour, number of databases)


class SurfaceTable:
    """Counts of (behaviour, size) per surface key, so each task's guess leaves itself out."""

    def __init__(self, contracts: tuple[Contract, ...], keys: tuple[Key, ...] = KEYS) -> None:
        self.key_fns = keys
        self.answer: dict[str, Answer] = {}
        self.keys: dict[str, list[Hashable]] = {}
        self.table: dict[Hashable, Counter[Answer]] = {}
        for c in contracts:
            a = (str(c.behaviour), gold_size(str(c.behaviour), len(c.required_databases())))
            self.answer[c.task_id] = a
            self.keys[c.task_id] = [key(c.request) for key in keys]
            for k in self.keys[c.task_id]:
                self.table.setdefault(k, Counter())[a] += 1

    def guess(self, task: RouterTask) -> Answer:
        own = self.answer.get(task.task_id)
        for key in self.keys.get(task.task_id) or [k(task.request) for k in self.key_fns]:
            counts = self.table.get(key, Counter()).copy()
            if own is not None:
                counts[own] -= 1
            counts = +counts
            if counts:
                return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        return "single", 1


FIRST: dict[str, Callable[[str, CatalogView], list[str]]] = {
    "": lambda request, view: [],
    "+labels": looked_up,
    "+overlap": overlap_ranked,
}


class LearnedSurface:
    def __init__(self, table: SurfaceTable, seed: int, first: str) -> None:
        self.table, self.seed, self.first = table, seed, FIRST[first]
        self.name = "surface-learned" + first

    def _first(self, request: str, view: CatalogView) -> list[str]:
        return self.first(request, view)

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        behaviour, k = self.table.guess(task)
        dbs = padded(self._first(task.request, env.view), k, env, random.Random(f"{self.seed}:{self.name}:{task.task_id}"))
        label: Behaviour = behaviour  # type: ignore[assignment]
        return submit(env, label, dbs, task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    table = SurfaceTable(ctx.contracts)
    return [LearnedSurface(table, ctx.seed, first) for first in FIRST]
