"""Routing line end to end on 15 real Spider databases: ingest, units, contracts, environment, routers.

The subset holds pairs of databases that share schemas (interactive) and value overlaps
(sequential), dev databases with released questions, and wta_1, whose SQLite file is missing.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage

from dibench.core.config import get_settings
from dibench.routing.catalog_store import counts, delete_catalog, private_locations
from dibench.routing.environment import RoutingEnvironment
from dibench.routing.errors import ContractInvalid
from dibench.routing.evaluate import evaluate, retrieval_audit
from dibench.routing.execution import gold_branch_route
from dibench.routing.ingest import ingest_sqlite_folder
from dibench.routing.models import Contract, Route
from dibench.routing.pipeline import EvalSetup, GenerateSummary, load_eval, run_generate
from dibench.routing.render import TEMPLATE_VERSION, render
from dibench.routing.routers import RouterTask
from dibench.routing.routers.lexical import LexicalRouter
from dibench.routing.routers.llm import LLMRouter
from dibench.routing.routers.oracle import OracleRouter
from dibench.routing.routers.random_router import RandomRouter
from dibench.routing.scoring import UNNEEDED_QUESTION_COST
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.task_store import export_jsonl, import_jsonl, read_contracts, read_units
from dibench.routing.validate import Validator
from dibench.routing.view import CatalogView, Locations
from dibench.stores.graph import Graph

CATALOG = "routing_test_subset"
SUBSET = ["customers_and_invoices", "customers_card_transactions", "flight_2", "flight_4", "climbing",
          "mountain_photos", "college_2", "csu_1", "ship_mission", "party_host", "concert_singer", "singer",
          "world_1", "pets_1", "wta_1"]
N_CONTRACTS = 60


def _root() -> Path:
    return get_settings().data_dir / "spider"


@pytest.fixture(scope="module")
def built(graph: Graph) -> Iterator[GenerateSummary]:
    delete_catalog(graph, CATALOG)
    ingest_sqlite_folder(graph, _root(), catalog=CATALOG, only=SUBSET)
    # lenient: these tests are about every behaviour's contracts, routes and scores; what the strict
    # default refuses is tested in test_routing_small and test_routing_shortcuts
    yield run_generate(graph, catalog=CATALOG, root=_root(), n=N_CONTRACTS, seed=42, strict=False)
    delete_catalog(graph, CATALOG)


@pytest.fixture(scope="module")
def setup(graph: Graph, built: GenerateSummary) -> Iterator[EvalSetup]:
    s = load_eval(graph, CATALOG)
    yield s
    s.executor.close()


@pytest.fixture(scope="module")
def validator(graph: Graph, built: GenerateSummary) -> Iterator[Validator]:
    executor = SqliteExecutor()
    yield Validator(CatalogView.load(graph, CATALOG), Locations.load(graph, CATALOG), executor,
                    {u.unit_id: u for u in built.units.units})
    executor.close()


def _first(contracts: list[Contract], behaviour: str) -> Contract:
    return next(c for c in contracts if c.behaviour == behaviour)


# ------------------------------------------------------------------------------ ingest
def test_ingest_is_idempotent_and_records_the_missing_file(graph: Graph, built: GenerateSummary) -> None:
    before = counts(graph, CATALOG)
    again = ingest_sqlite_folder(graph, _root(), catalog=CATALOG, only=SUBSET)
    assert counts(graph, CATALOG) == before
    assert again.counters.get("nodes_created", 0) == 0
    assert again.counters.get("relationships_created", 0) == 0
    assert before["databases"] == 14
    assert [s.split(":")[0] for s in again.skipped] == ["wta_1"]
    assert before["related"] > 0


def test_public_ids_are_opaque_and_the_mapping_is_private(graph: Graph, built: GenerateSummary) -> None:
    locations = private_locations(graph, CATALOG)
    assert sorted(r["name"] for r in locations.values()) == sorted(n for n in SUBSET if n != "wta_1")
    for pid, row in locations.items():
        assert pid.startswith("db_") and len(pid) == 13
        assert row["name"] not in pid
    # the benchmark names databases by its own ids: routers and contracts never see a catalog id
    published = {d for c in built.published for d in c.required_databases()}
    assert published and not published & set(locations)
    assert {c.benchmark for c in built.published} == {built.benchmark}


def test_evaluation_sees_the_catalog_under_the_benchmark_ids(graph: Graph, built: GenerateSummary,
                                                             setup: EvalSetup) -> None:
    view = setup.indexes.view
    assert len(view.ids()) == 14 and not set(view.ids()) & set(private_locations(graph, CATALOG))
    assert {d for c in setup.contracts for d in c.required_databases()} <= set(view.ids())
    assert all(r["a"] in view.databases and r["b"] in view.databases for r in view.related)
    assert set(setup.route_executor.locations.paths) == set(view.ids())


# ------------------------------------------------------------------------------ units and contracts
def test_units_come_from_gold_sql_and_failures_are_excluded(built: GenerateSummary, graph: Graph) -> None:
    u = built.units
    assert u.read == 5280 and u.merged == 10727 - 5280  # one unit per distinct query of the release
    assert u.by_source["dev"] > 0 and u.by_source["train"] > 0
    kinds = u.failure_counts()
    assert set(kinds) <= {"not-in-catalog", "schema-reference", "execution", "render-mismatch", "unwordable"}
    assert all(x.intent for x in u.units)
    assert {x.intent_source for x in u.units} == {"question", "rendered"}
    assert len(read_units(graph, CATALOG)) == len(u.units)


def test_contracts_cover_all_five_behaviours_and_are_stored(built: GenerateSummary, graph: Graph,
                                                            tmp_path: Path) -> None:
    r = built.report
    assert set(r.produced) == {"single", "parallel", "sequential", "exploratory", "interactive"}
    stored = read_contracts(graph, CATALOG)
    assert {c.task_id for c in stored} == {c.task_id for c in built.published}
    assert [c.request for c in built.published] == [c.request for c in r.contracts]
    out = tmp_path / "contracts.jsonl"
    export_jsonl(built.published, out)
    assert [c.task_id for c in import_jsonl(out)] == [c.task_id for c in built.published]


def test_generation_is_seeded(graph: Graph, built: GenerateSummary, validator: Validator) -> None:
    from dibench.routing.build_common import BuildContext
    from dibench.routing.generate import generate
    from dibench.routing.pool import UnitPool
    import random

    pool = UnitPool.build(validator.view, built.units.units)
    again = generate(BuildContext(CATALOG, pool, validator.locations, validator.executor, random.Random(42), 42),
                     validator, N_CONTRACTS)
    assert [c.task_id for c in again.contracts] == [c.task_id for c in built.report.contracts]


def test_sequential_binding_is_not_in_the_request(built: GenerateSummary, validator: Validator) -> None:
    c = _first(built.report.contracts, "sequential")
    edge = c.branches[0].edges[0]
    down = next(u for u in c.branches[0].units if u.unit_id == edge.target_unit)
    assert f":{edge.binding.parameter}" in down.sql
    validator.validate(c)
    for value in validator.bound_values[c.task_id]:
        assert str(value).lower() not in c.request.lower()


def _broken(c: Contract, **unit_changes: Any) -> Contract:
    data = c.model_dump()
    data["branches"][0]["units"][0].update(unit_changes)
    return Contract.model_validate(data)


def test_validation_rejects_broken_contracts(built: GenerateSummary, validator: Validator) -> None:
    single = _first(built.report.contracts, "single")
    validator.validate(single)
    other_db = next(d for d in validator.view.databases if d != single.branches[0].databases[0])

    wrong_owner = single.model_dump()
    for unit in wrong_owner["branches"][0]["units"]:  # a single task asks its one source once or twice
        unit["database"] = other_db
    wrong_owner["branches"][0]["databases"] = [other_db]
    cases = {
        "ownership": Contract.model_validate(wrong_owner),
        "schema": _broken(single, sql="SELECT no_such_column FROM " +
                          sorted(validator.view.databases[single.branches[0].databases[0]].tables)[0]),
        "read-only": _broken(single, sql="DELETE FROM " +
                             sorted(validator.view.databases[single.branches[0].databases[0]].tables)[0]),
    }
    seq = _first(built.report.contracts, "sequential")
    cyclic = seq.model_dump()
    e = cyclic["branches"][0]["edges"][0]
    cyclic["branches"][0]["edges"].append({**e, "source": e["target"], "target": e["source"],
                                           "source_unit": e["target_unit"], "target_unit": e["source_unit"]})
    cases["acyclic"] = Contract.model_validate(cyclic)
    unbound = seq.model_dump()
    unbound["branches"][0]["edges"][0]["binding"]["parameter"] = "some_other_parameter"
    cases["bindings"] = Contract.model_validate(unbound)
    wrong_type = seq.model_dump()
    wrong_type["branches"][0]["edges"][0]["binding"]["value_type"] = "real"
    cases["bindings (type)"] = Contract.model_validate(wrong_type)
    for expected, contract in cases.items():
        with pytest.raises(ContractInvalid) as err:
            validator.validate(contract)
        assert err.value.check == expected.split(" ")[0], (expected, str(err.value))


def test_exploratory_required_set_is_the_unique_minimum_cover(built: GenerateSummary, validator: Validator) -> None:
    c = _first(built.report.contracts, "exploratory")
    validator.validate(c)
    padded = c.model_dump()
    extra = next(d for d in validator.view.databases if d not in c.branches[0].databases)
    padded["branches"][0]["databases"] = sorted([*c.branches[0].databases, extra])
    with pytest.raises(ContractInvalid):
        validator.validate(Contract.model_validate(padded))


def test_llm_renderer_with_fake_model(built: GenerateSummary, validator: Validator) -> None:
    c = _first(built.report.contracts, "single").model_copy(update={"request": "", "renderer": ""})
    good = render(c, validator, FakeListChatModel(responses=['{"request": "Could you look this up for me: '
                                                             + c.branches[0].units[0].intent.replace('"', "'")
                                                             + '"}']))
    assert good.renderer == "llm:FakeListChatModel"
    assert good.request.startswith("Could you look this up")
    seq = _first(built.report.contracts, "sequential").model_copy(update={"request": ""})
    validator.validate(seq)
    leaked = str(validator.bound_values[seq.task_id][0])
    bad = render(seq, validator, FakeListChatModel(responses=[json.dumps({"request": f"Use {leaked} and go on."})]))
    assert bad.renderer.startswith(f"{TEMPLATE_VERSION} (llm wording rejected")
    assert leaked.lower() not in bad.request.lower()


# ------------------------------------------------------------------------------ environment
def _all_tool_output(env: RoutingEnvironment, contracts: list[Contract]) -> str:
    out: list[Any] = []
    for pid in env.view.ids():
        out.append(env.inspect_database(pid))
        out.append(env.inspect_relationships(pid))
    for c in contracts:
        for kind in ("capabilities", "tables", "columns", "entities"):
            out.append(env.search(c.request, kind, 50))  # type: ignore[arg-type]
    for tool in env.tools():
        out.append(tool.name + tool.description + json.dumps(tool.args))
    return json.dumps(out, default=str)


def test_environment_reveals_no_gold_location_or_required_set(graph: Graph, setup: EvalSetup) -> None:
    env = RoutingEnvironment(setup.indexes)
    text = _all_tool_output(env, setup.contracts)
    lowered = text.lower()
    locations = private_locations(graph, CATALOG)
    for row in locations.values():
        assert row["location"].lower() not in lowered
        assert Path(row["location"]).name.lower() not in lowered
    assert ".sqlite" not in lowered and "/database/" not in lowered
    schema_words = {w.lower() for db in env.view.databases.values() for t in db.tables.values()
                    for w in [t.name, *(c["column"] for c in t.columns)]}
    for row in locations.values():
        if not any(row["name"].lower() in w for w in schema_words):
            assert row["name"].lower() not in lowered, row["name"]
    for c in setup.contracts:
        assert c.task_id not in text
        for u in c.units():
            assert u.sql not in text
            assert u.unit_id.split("~")[0].split("@")[0] not in text
    assert "required" not in lowered and "gold" not in lowered
    forbidden = {"contract", "contracts", "locations", "registry", "units", "bank"}
    assert not forbidden & set(vars(env)), "the environment holds no gold"


# ------------------------------------------------------------------------------ routers and scores
def test_oracle_scores_100_percent_and_random_scores_lower(setup: EvalSetup) -> None:
    oracle = evaluate(setup.contracts, setup.indexes, setup.route_executor, OracleRouter(setup.contracts),
                      clarify=True)
    assert oracle.executor == "oracle-sql"
    s = oracle.summary
    assert (s.ra_set, s.ra_graph, s.ea_micro, s.route_exec_graph) == (1.0, 1.0, 1.0, 1.0)
    assert all(b.route_exec_graph == 1.0 for b in s.by_behaviour.values())
    assert oracle.asked == sum(c.behaviour == "interactive" for c in setup.contracts)
    rnd = evaluate(setup.contracts, setup.indexes, setup.route_executor, RandomRouter(42)).summary
    assert rnd.ra_set < 0.5 and rnd.ra_graph < 0.5 and rnd.ea_micro < 0.5 and rnd.route_exec_graph < 0.5
    lexical = evaluate(setup.contracts, setup.indexes, setup.route_executor, LexicalRouter()).summary
    assert rnd.route_exec_graph < lexical.route_exec_graph <= 1.0


def test_interactive_tasks_need_the_turn_and_needless_questions_cost(setup: EvalSetup) -> None:
    inter = [c for c in setup.contracts if c.behaviour == "interactive"]
    assert inter and all(c.intended in {b.branch_id for b in c.branches} for c in inter)
    # both readings fit: the same SQL runs on each reading's own source with a non-empty, different result
    assert all(len({b.databases[0] for b in c.branches}) == 2 for c in inter)
    told = evaluate(inter, setup.indexes, setup.route_executor, OracleRouter(inter), clarify=True).summary
    assert told.ra_graph == 1.0
    for c in inter:  # without the turn, the route does not depend on which reading is meant: chance at best
        other = next(b.branch_id for b in c.branches if b.branch_id != c.intended)
        flipped = c.model_copy(update={"intended": other})
        routes = [OracleRouter([x]).route(RouterTask(x.task_id, x.request), RoutingEnvironment(setup.indexes))
                  for x in (c, flipped)]
        assert routes[0] == routes[1]
    c = inter[0]
    hedge = Route(behaviour="interactive", branches=[gold_branch_route(b) for b in c.branches])
    assert evaluate([c], setup.indexes, setup.route_executor, _Fixed(hedge)).summary.ra_set == 0.0
    never = evaluate(inter, setup.indexes, setup.route_executor, LexicalRouter("never"))
    once = evaluate(inter, setup.indexes, setup.route_executor, LexicalRouter("once"), clarify=True)
    # it asks wherever it would route one source (a chatty closing may match a second source's words)
    one_source = sum(len(s.selected) == 1 for s in never.scores)
    assert never.asked == 0 and once.asked == one_source > 0
    assert once.summary.ra_graph > never.summary.ra_graph == 0.0  # unasked, it cannot even tell the task is ambiguous
    singles = [c for c in setup.contracts if c.behaviour == "single"]
    quiet = evaluate(singles, setup.indexes, setup.route_executor, OracleRouter(singles), clarify=True).summary
    asking = evaluate(singles, setup.indexes, setup.route_executor, _AskFirst(OracleRouter(singles)),
                      clarify=True).summary
    assert quiet.ra_graph == 1.0 and asking.ra_graph == 1.0 - UNNEEDED_QUESTION_COST


class _AskFirst:
    """Asks its one question on every task, then routes as the wrapped router does."""

    name = "ask-first"

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:
        env.ask_clarification("Is there anything you did not say?")
        return self._inner.route(task, env)  # type: ignore[no-any-return]


def test_retrieval_audit_bounds(setup: EvalSetup) -> None:
    rows = retrieval_audit(setup.contracts, setup.indexes, (1, 10, 50))
    assert [r.k for r in rows] == [1, 10, 50]
    assert rows[0].recall <= rows[1].recall <= rows[2].recall == 1.0  # 14 databases: all within the top 50
    assert rows[2].complete == 1.0


class ScriptedToolModel(GenericFakeChatModel):
    """A fake chat model that 'supports' tool calling: bind_tools returns the model itself."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # noqa: ARG002
        return self


def test_llm_router_through_tool_calls(setup: EvalSetup) -> None:
    c = _first(setup.contracts, "sequential")
    gold = gold_branch_route(c.branches[0])
    route_args = {"behaviour": c.behaviour, "branches": [json.loads(gold.model_dump_json())]}
    script = iter([
        AIMessage(content="", tool_calls=[{"name": "search_catalog", "args": {"query": c.request}, "id": "1"}]),
        AIMessage(content="", tool_calls=[{"name": "inspect_database", "args": {"database": c.branches[0].databases[0]},
                                           "id": "2"},
                                          {"name": "no_such_tool", "args": {}, "id": "3"}]),
        AIMessage(content="", tool_calls=[{"name": "submit_route", "args": route_args, "id": "4"}]),
    ])
    router = LLMRouter(ScriptedToolModel(messages=script))
    env = RoutingEnvironment(setup.indexes)
    route = router.route(RouterTask(c.task_id, c.request), env)
    assert env.submitted == route
    assert route.branches[0].databases == c.branches[0].databases
    res = evaluate([c], setup.indexes, setup.route_executor, _Fixed(route)).summary
    assert res.route_exec_graph == 1.0

    silent = LLMRouter(ScriptedToolModel(messages=iter([AIMessage(content="I cannot tell.")])))
    empty = silent.route(RouterTask(c.task_id, c.request), RoutingEnvironment(setup.indexes))
    assert empty.branches == []


class _Fixed:
    name = "fixed"

    def __init__(self, route: Route) -> None:
        self._route = route

    def route(self, task: RouterTask, env: RoutingEnvironment) -> Route:  # noqa: ARG002
        return env.submit_route(self._route)


# ------------------------------------------------------------------------------ CLI
def test_cli_commands_have_help_and_run(built: GenerateSummary, tmp_path: Path) -> None:
    from dibench.cli.main import main

    runner = CliRunner()
    for args in (["catalog"], ["catalog", "ingest"], ["catalog", "status"], ["catalog", "delete"], ["routing"],
                 ["routing", "generate"],
                 ["routing", "eval"], ["routing", "report"]):
        res = runner.invoke(main, [*args, "--help"])
        assert res.exit_code == 0, res.output
        assert len(res.output.split("Usage:")[1].strip().splitlines()) > 2
    out = tmp_path / "oracle.json"
    res = runner.invoke(main, ["routing", "eval", "--router", "oracle", "--ask", "once", "--catalog", CATALOG,
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "RA-Set" in res.output and "Recall@K" in res.output
    data = json.loads(out.read_text())
    assert data["summary"]["route_exec_graph"] == 1.0 and data["executor"] == "oracle-sql"
    # the chance levels, from the same run, beside the evaluated router, with intervals
    assert sorted(data["chance"]) == ["layout-only", "random"]
    chance = res.output.split("against chance")[1]
    assert all(name in chance for name in ("oracle", "random", "layout-only"))
    lo, hi = data["intervals"]["ra_graph"]
    assert lo < 1.0 == hi
    from dibench.service.report import routing_section
    from dibench.routing.report import results_dir

    kept = results_dir() / f"{CATALOG}__oracle.json"
    try:
        section = routing_section()
        assert section is not None and CATALOG in section and "oracle-sql" in section  # dibench report shows it
    finally:
        kept.unlink()
    html = tmp_path / "routing.html"
    res = runner.invoke(main, ["routing", "report", str(out), "-o", str(html)])
    assert res.exit_code == 0, res.output
    assert "Route+Exec-Graph" in html.read_text() and "Recall@K" in html.read_text()
    res = runner.invoke(main, ["routing", "eval", "--router", "oracle", "--catalog", "no_such_catalog"])
    assert res.exit_code != 0 and "no_such_catalog" in res.output


# ------------------------------------------------------------------------------ leakage
def _layout_accuracy(samples: list[tuple[int, tuple[Any, ...], str]], with_layout: bool) -> float:
    """Fit behaviour ~ unit count (+ layout) by majority on one half of the contracts, score on the other.

    Samples come contract by contract (same order under every seed), so even/odd positions split
    by contract when the number of contracts is even; an unseen (count, layout) key backs off to the
    count alone, so sparse layouts are not penalised.
    """
    from collections import Counter, defaultdict

    by_count: dict[int, Counter[str]] = defaultdict(Counter)
    by_layout: dict[tuple[int, tuple[Any, ...]], Counter[str]] = defaultdict(Counter)
    for k, layout, behaviour in samples[0::2]:
        by_count[k][behaviour] += 1
        by_layout[(k, layout)][behaviour] += 1

    def guess(k: int, layout: tuple[Any, ...]) -> str | None:
        table = by_layout.get((k, layout)) if with_layout else None
        table = table or by_count.get(k)
        return table.most_common(1)[0][0] if table else None

    test = samples[1::2]
    return sum(guess(k, layout) == b for k, layout, b in test) / len(test)


def test_layout_says_nothing_beyond_what_is_asked(built: GenerateSummary, validator: Validator) -> None:
    """Reworded under many seeds, a request's layout (sentences, joiners, numbering, cue words) predicts
    the behaviour no better than the number of asks alone; no fixed cue phrase ever appears."""
    import random

    from dibench.routing.build_common import BuildContext
    from dibench.routing.generate import generate
    from dibench.routing.pool import UnitPool
    from dibench.routing.routers.layout import layout_features

    pool = UnitPool.build(validator.view, built.units.units)
    many = generate(BuildContext(CATALOG, pool, validator.locations, validator.executor, random.Random(5), 5),
                    validator, 240).contracts
    samples = []
    multi = [c for c in many if len(c.branches[0].units) > 1]
    multi = multi[:len(multi) // 2 * 2]  # an even count: even/odd positions are disjoint contract halves
    for seed in range(10):
        for c in multi:
            worded = render(c.model_copy(update={"seed": seed}), validator)
            assert not re.search(r"\(\d\)|fewest sources|First:|found in the first step|previous step|"
                                 r"independent answers", worded.request)
            for e in c.branches[0].edges:
                assert f"the {e.binding.upstream_column} found" not in worded.request
            samples.append((len(c.branches[0].units), layout_features(worded.request), c.behaviour))
    base, layout = _layout_accuracy(samples, False), _layout_accuracy(samples, True)
    assert layout <= base + 2 * (0.25 / (len(multi) / 2)) ** 0.5, (base, layout)  # two standard errors


def test_layout_only_router_scores_no_better_than_random(setup: EvalSetup) -> None:
    from dibench.routing.routers.layout import LayoutRouter

    layout = evaluate(setup.contracts, setup.indexes, setup.route_executor, LayoutRouter(42)).summary
    rnd = evaluate(setup.contracts, setup.indexes, setup.route_executor, RandomRouter(42)).summary
    n = len(setup.contracts)
    assert layout.ra_graph <= rnd.ra_graph + 2 * (0.25 / n) ** 0.5, (layout.ra_graph, rnd.ra_graph)


def test_selecting_every_database_buys_no_execution_accuracy(setup: EvalSetup) -> None:
    from dibench.routing.routers.select_all import SelectAllRouter

    everything = evaluate(setup.contracts, setup.indexes, setup.route_executor, SelectAllRouter()).summary
    assert everything.ea_micro <= everything.ra_set + 0.10, (everything.ea_micro, everything.ra_set)
    assert everything.recall == 1.0
