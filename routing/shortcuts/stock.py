"""The stock chance routers: random (with the benchmark's behaviour mix and gold set sizes), select-all, layout-only."""
from __future__ import annotations

from dibench.routing.evaluate import random_router
from dibench.routing.routers import Router
from dibench.routing.routers.layout import LayoutRouter
from dibench.routing.routers.select_all import SelectAllRouter
from dibench.routing.shortcuts.context import ShortcutContext


def routers(ctx: ShortcutContext) -> list[Router]:
    return [random_router(ctx.seed, list(ctx.contracts)), SelectAllRouter(), LayoutRouter(ctx.seed)]
