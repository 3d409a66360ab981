"""The select-everything router: every database of the catalog, never reading the request. A probe:
its EA-Micro shows what over-selection can buy (it must stay near its RA-Set)."""
from __future__ import annotations

from dibench.routing.environment import RoutingEnvironment
from dibench.routing.models import Route, RouteBranch, RouteContribution
from dibench.routing.routers import RouterTask


class SelectAllRouter:
    name = "select-all"

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        ids = sorted(env.view.ids())
        branch = RouteBranch(databases=ids, contributions=[RouteContribution(database=d, request=task.request)
                                                           for d in ids])
        return env.submit_route(Route(behaviour="parallel", branches=[branch]))
