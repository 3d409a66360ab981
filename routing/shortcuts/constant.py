"""Constants learned from the other tasks of the benchmark: the commonest gold database, and the
commonest gold set with its commonest behaviour (a benchmark whose tasks share one set gives it away)."""
from __future__ import annotations

from collections import Counter

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Contract, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts.context import ShortcutContext
from dibench.routing.shortcuts.build import submit


def _required(c: Contract) -> tuple[str, ...]:
    return tuple(sorted(c.required_databases()))


class OtherTasksDatabases:
    """How many of the other tasks (leave-one-out) require each database."""

    def __init__(self, contracts: tuple[Contract, ...]) -> None:
        self.per_task = {c.task_id: Counter(c.required_databases()) for c in contracts}
        self.total: Counter[str] = sum(self.per_task.values(), Counter())

    def counts(self, task_id: str) -> Counter[str]:
        return self.total - self.per_task.get(task_id, Counter())


class CommonestDatabase(OtherTasksDatabases):
    """One database, always: the one the most other tasks require."""

    name = "constant-database"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        counts = self.counts(task.task_id)
        best = min(counts, key=lambda d: (-counts[d], d)) if counts else sorted(env.view.ids())[0]
        return submit(env, "single", [best], task.request)


class CommonestSet:
    """The gold set (and its behaviour) the most other tasks share."""

    name = "constant-set"

    def __init__(self, contracts: tuple[Contract, ...]) -> None:
        self.of = {c.task_id: (str(c.behaviour), _required(c)) for c in contracts}
        self.total: Counter[tuple[str, tuple[str, ...]]] = Counter(self.of.values())

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        counts = self.total.copy()
        if task.task_id in self.of:
            counts[self.of[task.task_id]] -= 1
        counts = +counts
        if not counts:
            return submit(env, "single", sorted(env.view.ids())[:1], task.request)
        (behaviour, dbs), _ = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        label: Behaviour = behaviour  # type: ignore[assignment]
        return submit(env, label, list(dbs), task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [CommonestDatabase(ctx.contracts), CommonestSet(ctx.contracts)]
