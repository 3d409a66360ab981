"""The lexical router: BM25 over capability summaries, one source per request segment.

It reads the request's surface structure (numbered items, "First: ... Then, using the X found
in the first step: ...", "fewest sources that together cover"), routes each segment to the
top-ranked database, and links a two-step request with one dependency edge. With the
clarification policy "once" it asks its one question on every single-segment request and, if
the answer gives two readings, routes each as its own branch.
"""
from __future__ import annotations

import re
from typing import Literal

from routing.environment import RoutingEnvironment
from routing.models import Behaviour, Route, RouteBranch, RouteContribution, RouteEdge
from routing.routers import RouterTask

AskPolicy = Literal["never", "once"]
_NUMBERED = re.compile(r"\((\d+)\)\s*")
_SEQUENTIAL = re.compile(r"^First:\s*(?P<up>.+?)\s*Then, using the (?P<col>.+?) found in the first step:\s*(?P<down>.+)$",
                         re.DOTALL)
_READINGS = re.compile(r"\(([ab])\)\s*(.+?)(?=\s*\([ab]\)\s|$)", re.DOTALL)


def segments(request: str) -> tuple[Behaviour, list[str], str | None]:
    """(behaviour guess, segments, upstream column of a two-step request)."""
    seq = _SEQUENTIAL.match(request.strip())
    if seq:
        return "sequential", [seq["up"], seq["down"]], seq["col"]
    parts = [p.strip() for p in _NUMBERED.split(request)]
    items = [p for i, p in enumerate(parts) if i % 2 == 0 and i > 0 and p]
    if len(items) >= 2:
        return ("exploratory" if "fewest sources" in request else "parallel"), items, None
    return "single", [request.strip()], None


class LexicalRouter:
    def __init__(self, ask: AskPolicy = "never") -> None:
        self.ask = ask
        self.name = "lexical" if ask == "never" else "lexical+ask"

    @staticmethod
    def _top(env: RoutingEnvironment, text: str) -> str:
        return env.search(text, "capabilities", 1)[0]["database"]

    def _branch(self, env: RoutingEnvironment, segs: list[str], column: str | None) -> RouteBranch:
        contribs: dict[str, RouteContribution] = {}
        order: list[str] = []
        for s in segs:
            db = self._top(env, s)
            order.append(db)
            contribs.setdefault(db, RouteContribution(database=db, request=s))
        edges = []
        if column is not None and len(order) == 2 and order[0] != order[1]:
            edges = [RouteEdge(source=order[0], target=order[1], upstream_column=column)]
        return RouteBranch(databases=sorted(contribs), edges=edges, contributions=list(contribs.values()))

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        behaviour, segs, column = segments(task.request)
        if behaviour == "single" and self.ask == "once" and env.can_clarify:
            answer = env.ask_clarification("Could this request mean more than one thing? If so, what are the readings?")
            readings = [m.group(2).strip() for m in _READINGS.finditer(answer)]
            if len(readings) == 2:
                branches = [self._branch(env, [r], None) for r in readings]
                return env.submit_route(Route(behaviour="interactive", branches=branches))
        return env.submit_route(Route(behaviour=behaviour, branches=[self._branch(env, segs, column)]))
