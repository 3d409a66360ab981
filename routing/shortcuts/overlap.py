"""What a reviewer brings who reads words, not meaning: overlap of the request's word stems with each
database's table and column names, the top k databases where k is the request's count of asks, or
each ask's own first database; and label lookup through stems (`singers'` finds `singer`, `ratings` finds `rating`).

A request whose wording a word-matching of catalog names can undo is solved by these without being
understood; they are here so that the audit measures it.
"""
from __future__ import annotations

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.lookup import overlap_ranked, stemmed_labels, top_overlap
from dibench.routing.models import Behaviour, Route
from dibench.routing.routers import Router, RouterTask
from dibench.routing.shortcuts import surface
from dibench.routing.shortcuts.build import submit
from dibench.routing.shortcuts.context import ShortcutContext

class WordOverlapTopK:
    """The k databases whose table and column names share most stems with the request, k = asks."""

    def __init__(self, many: Behaviour) -> None:
        self.many = many
        self.name = "word-overlap-top-k" + ("" if many == "parallel" else f"-as-{many}")

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        k = surface.asks(task.request)
        dbs = overlap_ranked(task.request, env.view)[:k] or env.view.ids()[:1]
        return submit(env, "single" if len(dbs) == 1 else self.many, dbs, task.request)


class WordOverlapPerAsk:
    """Each ask's first database by the stems it shares with the database's names, a rarer stem
    counting more (ties by id), together: a lexical router's reading of the request, ask by ask."""

    name = "word-overlap-per-ask"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        firsts = [sorted(top)[0] for top in (top_overlap(a, env.view) for a in surface.ask_clauses(task.request))
                  if top]
        dbs = list(dict.fromkeys(firsts)) or env.view.ids()[:1]
        return submit(env, "single" if len(dbs) == 1 else "parallel", dbs, task.request)


class StemmedLabelLookup:
    def __init__(self, many: Behaviour) -> None:
        self.many = many
        self.name = "stemmed-label-lookup" + ("" if many == "parallel" else f"-as-{many}")

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        dbs = stemmed_labels(task.request, env.view) or env.view.ids()[:1]
        return submit(env, "single" if len(dbs) == 1 else self.many, dbs, task.request)


def routers(ctx: ShortcutContext) -> list[Router]:
    return [WordOverlapTopK("parallel"), WordOverlapTopK("exploratory"), WordOverlapPerAsk(),
            StemmedLabelLookup("parallel"), StemmedLabelLookup("exploratory")]
