"""The biggest database of the catalog, by rows or by tables, whatever is asked."""
from __future__ import annotations

from typing import Literal

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts.context import ShortcutContext
from dibench.routing.shortcuts.build import submit


class Largest:
    def __init__(self, by: Literal["rows", "tables"]) -> None:
        self.by = by
        self.name = f"largest-by-{by}"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        dbs = env.view.databases
        size = (lambda d: dbs[d].n_rows) if self.by == "rows" else (lambda d: len(dbs[d].tables))
        return submit(env, "single", [max(sorted(dbs), key=size)], task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [Largest("rows"), Largest("tables")]
