"""Exact lookup of the public catalog's labels that appear verbatim in the request (entity labels
and table names in words, or column names in words), and the smallest set of databases holding
all of them."""
from __future__ import annotations

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.lookup import Source, looked_up, looked_up_words
from dibench.routing.models import Behaviour, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts.build import submit
from dibench.routing.shortcuts.context import ShortcutContext


class LabelLookup:
    def __init__(self, cover_label: Behaviour | None, source: Source = "tables") -> None:
        self.cover_label, self.source = cover_label, source
        self.name = ("label-lookup" if source == "tables" else "column-lookup") + (
            f"-as-{cover_label}" if cover_label else "")

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        dbs = looked_up(task.request, env.view, self.source) or sorted(env.view.ids())[:1]
        behaviour: Behaviour = "single" if len(dbs) == 1 else (self.cover_label or "parallel")
        return submit(env, behaviour, dbs, task.request)


class ColumnWords:
    """Columns whose words all occur in the request, in any form or order, and their smallest cover."""

    name = "column-words-as-exploratory"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        dbs = looked_up_words(task.request, env.view) or sorted(env.view.ids())[:1]
        return submit(env, "single" if len(dbs) == 1 else "exploratory", dbs, task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [LabelLookup(None), LabelLookup("exploratory"), LabelLookup("exploratory", "columns"), ColumnWords()]
