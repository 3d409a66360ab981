"""Routers that read no request semantics: the library every routing benchmark audits itself with.

Each family is one small module; SHORTCUTS lists them. A shortcut may read the request's surface
(punctuation, counts, openings, strings that appear verbatim in the public catalog), the public
catalog's sizes, and the other tasks of the same benchmark (leave-one-out, as "the most common
answer" does), but never what the request means. The best of them, per metric, is the benchmark's
chance level (routing/audit.py).
"""
from __future__ import annotations

from collections.abc import Callable

from dibench.routing.routers import Router
from dibench.routing.shortcuts import constant, counts, labels, learned, overlap, popularity, sizes, stock
from dibench.routing.shortcuts.context import ShortcutContext

FAMILIES: tuple[Callable[[ShortcutContext], list[Router]], ...] = (
    stock.routers, constant.routers, sizes.routers, counts.routers, labels.routers, overlap.routers,
    learned.routers, popularity.routers)


def shortcut_routers(ctx: ShortcutContext) -> list[Router]:
    """One router of every registered shortcut family, in registry order."""
    return [r for make in FAMILIES for r in make(ctx)]


def n_routers() -> int:
    """How many routers the library runs (for progress bars)."""
    return len(shortcut_routers(ShortcutContext(0, ())))
