"""Asks drawn apart from sources, on three real Spider databases: a single, parallel or exploratory
request may ask one source several different questions, so counting its asks does not give its number of sources;
execution and scoring credit each of a source's questions once, whatever the order of the asks."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from dibench.routing.audit import audit as shortcut_audit
from dibench.routing.build_common import ASKS, SINGLE_ASKS
from dibench.routing.catalog_store import delete_catalog
from dibench.routing.environment import RoutingEnvironment
from dibench.routing.evaluate import EvalResult, evaluate
from dibench.routing.execution import gold_branch_route
from dibench.routing.ingest import ingest_sqlite_folder
from dibench.routing.models import Contract, Route, RouteBranch, RouteContribution
from dibench.routing.pipeline import EvalSetup, load_eval, run_generate
from dibench.routing.routers import Router, RouterTask
from dibench.routing.routers.lexical import LexicalRouter
from dibench.routing.routers.oracle import OracleRouter
from dibench.routing.shortcuts import ShortcutContext, shortcut_routers, surface
from dibench.stores.graph import Graph
from tests.fixtures.routing_catalogs import SMALL_SPIDER, spider_subset_folder

CATALOG = "routing_test_asks"


@pytest.fixture(scope="module")
def asks_eval(graph: Graph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvalSetup]:
    root = spider_subset_folder(tmp_path_factory.mktemp("asks"), SMALL_SPIDER)
    delete_catalog(graph, CATALOG)
    ingest_sqlite_folder(graph, root, catalog=CATALOG)
    # lenient, and the default target: on three databases a set may repeat only 10% of a behaviour's
    # target, so a small n leaves two or three single tasks, and whether one asks twice is a coin
    # (catalog and public ids are drawn afresh each run); what strict keeps is measured in docs/routing.md
    run_generate(graph, catalog=CATALOG, root=root, seed=42, strict=False, shortcuts=False)
    s = load_eval(graph, CATALOG)
    yield s
    s.executor.close()
    delete_catalog(graph, CATALOG)


class Fixed:
    """Submits one given route, whatever the task."""

    name = "fixed"

    def __init__(self, route: Route) -> None:
        self._route = route

    def route(self, task: RouterTask, env: object) -> Route:  # noqa: ARG002
        return env.submit_route(self._route)  # type: ignore[attr-defined, no-any-return]


def _twice(setup: EvalSetup, behaviour: str) -> list[Contract]:
    """Contracts of behaviour that ask some source more than once."""
    return [c for c in setup.contracts if c.behaviour == behaviour and len(c.units()) > len(c.required_databases())]


def _run(setup: EvalSetup, c: Contract, route: Route) -> EvalResult:
    return evaluate([c], setup.indexes, setup.route_executor, Fixed(route))


def test_asks_are_not_the_number_of_sources(asks_eval: EvalSetup) -> None:
    for behaviour in ("single", "parallel", "exploratory"):
        of = [c for c in asks_eval.contracts if c.behaviour == behaviour]
        twice = _twice(asks_eval, behaviour)
        assert twice, behaviour
        for c in twice:
            by_db: dict[str, list[str]] = {}
            for u in c.units():
                by_db.setdefault(u.database, []).append(u.fingerprint)
            asks = len(c.units()) + (behaviour == "exploratory")
            assert asks <= max(ASKS) or len(c.units()) == len(c.required_databases()) + 1
            assert all(len(set(f)) == len(f) for f in by_db.values())  # different questions, different results
            assert len({u.intent for u in c.units()}) == len(c.units())
    # on three databases every fan-out and cover is a pair: the number of asks is drawn alike for
    # each behaviour (a single request may also ask once), so four asks are no longer always
    # exploratory, nor two always single
    counts = {b: {len(c.units()) + (b == "exploratory") for c in asks_eval.contracts if c.behaviour == b}
              for b in ("single", "parallel", "exploratory")}
    assert counts["single"] <= set(SINGLE_ASKS) and counts["parallel"] <= set(ASKS), counts
    assert counts["exploratory"] <= set(ASKS) - {min(ASKS)}, counts
    assert counts["exploratory"] <= counts["parallel"] and counts["parallel"] - counts["single"] <= {max(ASKS)}, counts
    for behaviour in ("sequential", "interactive"):  # these ask each source once
        assert all(len(c.branches[0].units) == len(c.branches[0].databases) for c in asks_eval.contracts
                   if c.behaviour == behaviour)
    # the surface count of asks reads the extra question as an ask: it overcounts the sources
    over = [c for c in asks_eval.contracts if c.behaviour in ("single", "parallel")
            and surface.asks(c.request) > len(c.required_databases())]
    assert {c.behaviour for c in over} == {"single", "parallel"}


def test_each_of_a_sources_questions_is_credited_once(asks_eval: EvalSetup) -> None:
    c = next(c for c in _twice(asks_eval, "single") if len(c.units()) == 2)
    db = c.branches[0].databases[0]
    first, second = c.branches[0].units

    def route(*sqls: str | None) -> Route:
        return Route(behaviour="single", branches=[RouteBranch(databases=[db], contributions=[
            RouteContribution(database=db, request="x", sql=sql) for sql in sqls])])

    one_right = _run(asks_eval, c, route(first.sql, first.sql)).summary  # the same answer twice counts once
    assert (one_right.ra_graph, one_right.ea_micro, one_right.route_exec_graph) == (1.0, 0.5, 0.0)
    assert _run(asks_eval, c, route(second.sql, first.sql)).summary.route_exec_graph == 1.0  # any order
    assert _run(asks_eval, c, route(second.sql)).summary.ea_micro == 0.5
    # the oracle executor writes the source's gold SQL per contribution, in order: one ask, one answer
    assert _run(asks_eval, c, route(None)).summary.ea_micro == 0.5
    assert _run(asks_eval, c, route(None, None)).summary.ea_micro == 1.0
    # past the source's number of questions a contribution is not read: many guesses buy nothing
    assert _run(asks_eval, c, route(first.sql, first.sql, second.sql)).summary.ea_micro == 0.5


def test_a_parallel_task_asking_one_source_twice(asks_eval: EvalSetup) -> None:
    c = _twice(asks_eval, "parallel")[0]
    gold = gold_branch_route(c.branches[0])
    assert _run(asks_eval, c, Route(behaviour="parallel", branches=[gold])).summary.route_exec_graph == 1.0
    # one contribution per database (a router that dedupes sources) misses every second question
    once = gold.model_copy(update={"contributions": [RouteContribution(database=d, request="x")
                                                     for d in gold.databases]})
    got = _run(asks_eval, c, Route(behaviour="parallel", branches=[once])).summary
    assert got.ra_graph == 1.0 and got.ea_micro == pytest.approx(len(c.required_databases()) / len(c.units()))


def test_oracle_is_perfect_and_lexical_asks_each_ask(asks_eval: EvalSetup) -> None:
    told = evaluate(asks_eval.contracts, asks_eval.indexes, asks_eval.route_executor,
                    OracleRouter(asks_eval.contracts), clarify=True).summary
    assert (told.ra_graph, told.ea_micro, told.route_exec_graph) == (1.0, 1.0, 1.0)
    lexical = LexicalRouter()
    seen = []
    for c in _twice(asks_eval, "single") + _twice(asks_eval, "parallel"):
        r = lexical.route(RouterTask(c.task_id, c.request), RoutingEnvironment(asks_eval.indexes))
        seen.append(len(r.branches[0].contributions) - len(r.branches[0].databases))
    assert max(seen) >= 1  # a source asked twice gets two contributions


def test_the_shortcut_audit_runs_on_asks_apart_from_sources(asks_eval: EvalSetup) -> None:
    found = shortcut_audit(asks_eval.contracts, asks_eval.indexes, asks_eval.route_executor, 42)
    assert {"random", "count-asks", "count-sentences", "surface-learned"} <= set(found.routers)
    # count-asks routes a single request whose two questions it counts as two sources: it fails each
    overcounted = [c for c in _twice(asks_eval, "single") if surface.asks(c.request) > 1]
    count_asks = next(r for r in _shortcuts(asks_eval) if r.name == "count-asks")
    counted = evaluate(overcounted, asks_eval.indexes, asks_eval.route_executor, count_asks).summary
    assert overcounted
    assert counted.ra_set == 0.0


def _shortcuts(setup: EvalSetup) -> list[Router]:
    return shortcut_routers(ShortcutContext(42, tuple(setup.contracts)))
