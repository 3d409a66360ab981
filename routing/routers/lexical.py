"""The lexical router: BM25 over capability summaries, one source per request segment.

Segments are the request's sentences (a request carries no other structure); each goes to its
top-ranked database, and a sentence that matches nothing in the catalog (a closing "Thanks.") is
left out. Each ask of a routed sentence is one contribution to its database (a source may be asked
more than one thing). One database makes a single-source route, several a parallel one. With the
clarification policy "once" it asks its one question whenever it would route one database and,
if the answer names the reading the user means, routes that reading.
"""
from __future__ import annotations

import re
from typing import Literal

from dibench.routing.ask_split import ask_clauses
from dibench.routing.clarify import MEANT_PREFIX
from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Behaviour, Route, RouteBranch, RouteContribution
from dibench.routing.routers import RouterTask

AskPolicy = Literal["never", "once"]
_SENTENCE_END = re.compile(r"(?<=[.?!:;])\s+")


def segments(request: str) -> list[str]:
    """The request's sentences, each one ask (or a topic line)."""
    return [p.strip() for p in _SENTENCE_END.split(request.strip()) if len(p.strip()) > 3] or [request.strip()]


class LexicalRouter:
    def __init__(self, ask: AskPolicy = "never") -> None:
        self.ask = ask
        self.name = "lexical" if ask == "never" else "lexical+ask"

    @staticmethod
    def _top(env: RoutingEnvironment, text: str) -> str | None:
        hit = env.search(text, "capabilities", 1)[0]
        return str(hit["database"]) if hit["score"] > 0 else None

    def _branch(self, env: RoutingEnvironment, segs: list[str]) -> RouteBranch:
        contribs: list[RouteContribution] = []
        for s in segs:
            db = self._top(env, s)
            if db is not None:
                contribs += [RouteContribution(database=db, request=a) for a in ask_clauses(s) or [s]]
        if not contribs:  # nothing matched: the whole request's best database
            db = str(env.search(" ".join(segs), "capabilities", 1)[0]["database"])
            contribs.append(RouteContribution(database=db, request=" ".join(segs)))
        return RouteBranch(databases=sorted({c.database for c in contribs}), contributions=contribs)

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        segs = segments(task.request)
        branch = self._branch(env, segs)
        if len(branch.databases) == 1 and self.ask == "once" and env.can_clarify:
            answer = env.ask_clarification("Could this request mean more than one thing? If so, which do you mean?")
            if answer.startswith(MEANT_PREFIX):
                reading = answer.removeprefix(MEANT_PREFIX)
                return env.submit_route(Route(behaviour="interactive", branches=[self._branch(env, [reading])]))
        behaviour: Behaviour = "single" if len(branch.databases) == 1 else "parallel"
        return env.submit_route(Route(behaviour=behaviour, branches=[branch]))
