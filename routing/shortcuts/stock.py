"""The stock chance routers: random (with the benchmark's behaviour mix), select-all, layout-only."""
from __future__ import annotations

from collections import Counter

from dibench.routing.routers import Router
from dibench.routing.routers.layout import LayoutRouter
from dibench.routing.routers.random_router import RandomRouter
from dibench.routing.routers.select_all import SelectAllRouter
from dibench.routing.shortcuts.context import ShortcutContext


def routers(ctx: ShortcutContext) -> list[Router]:
    mix = dict(Counter(str(c.behaviour) for c in ctx.contracts))
    return [RandomRouter(ctx.seed, mix), SelectAllRouter(), LayoutRouter(ctx.seed)]
