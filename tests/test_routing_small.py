"""The routing line on a small catalog written by the test: three (and two) SQLite databases.

music_a and music_b share a `singer` table with different rows (an ambiguous question), music_a's
label table yields a single value that geo_c's city filter uses (a sequential binding).
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from dibench.routing.catalog_store import counts, delete_catalog, private_locations
from dibench.routing.evaluate import evaluate
from dibench.routing.execution import gold_branch_route
from dibench.routing.ingest import ingest_sqlite_folder
from dibench.routing.models import Contract, Route, RouteBranch, RouteContribution, RouteEdge
from dibench.routing.pipeline import GenerateSummary, load_eval, run_generate
from dibench.routing.routers.oracle import OracleRouter
from dibench.stores.graph import Graph

CATALOG = "routing_test_small"
DATABASES = {
    "music_a": ["CREATE TABLE singer (singer_id integer PRIMARY KEY, name text, country text, age integer)",
                "CREATE TABLE label (label_id integer PRIMARY KEY, label_name text, home_country text)",
                "INSERT INTO singer VALUES (1, 'Ann Lee', 'France', 34), (2, 'Bo Diaz', 'Spain', 25), "
                "(3, 'Cy Moor', 'Chile', 41)",
                "INSERT INTO label VALUES (1, 'Blue Note', 'France'), (2, 'Red Sun', 'Japan')"],
    "music_b": ["CREATE TABLE singer (singer_id integer PRIMARY KEY, name text, country text, age integer)",
                "CREATE TABLE venue (venue_id integer PRIMARY KEY, venue_name text, capacity integer)",
                "INSERT INTO singer VALUES (1, 'Dee Park', 'Korea', 52), (2, 'Eli Stone', 'Peru', 19)",
                "INSERT INTO venue VALUES (1, 'Arena One', 20000), (2, 'Small Hall', 300)"],
    "geo_c": ["CREATE TABLE city (city_id integer PRIMARY KEY, city_name text, country text, population integer)",
              "INSERT INTO city VALUES (1, 'Lyon', 'France', 500000), (2, 'Nice', 'France', 340000), "
              "(3, 'Osaka', 'Japan', 2700000)"],
}
QUESTIONS = [
    ("music_a", "SELECT home_country FROM label WHERE label_name = 'Blue Note'",
     "Which country is the Blue Note label based in?"),
    ("music_a", "SELECT count(*) FROM label", "How many record labels are there?"),
    ("music_a", "SELECT name FROM singer WHERE age > 30", "Which singers are older than 30?"),
    ("music_b", "SELECT venue_name FROM venue WHERE capacity > 1000", "Which venues hold more than 1000 people?"),
    ("music_b", "SELECT max(capacity) FROM venue", "What is the largest venue capacity?"),
    ("geo_c", "SELECT city_name FROM city WHERE country = 'France'", "Which cities are in France?"),
    ("geo_c", "SELECT sum(population) FROM city", "What is the total population of all cities?"),
    ("geo_c", "SELECT count(*) FROM city WHERE population > 400000", "How many cities have over 400000 people?"),
]


def write_release(root: Path, names: list[str]) -> Path:
    for name in names:
        folder = root / "database" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.sqlite").unlink(missing_ok=True)
        with sqlite3.connect(folder / f"{name}.sqlite") as conn:
            for statement in DATABASES[name]:
                conn.execute(statement)
    dev = [{"db_id": db, "query": sql, "question": q} for db, sql, q in QUESTIONS if db in names]
    (root / "dev.json").write_text(json.dumps(dev))
    return root


@pytest.fixture(scope="module")
def small(graph: Graph, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, GenerateSummary]]:
    root = write_release(tmp_path_factory.mktemp("small"), list(DATABASES))
    delete_catalog(graph, CATALOG)
    ingest_sqlite_folder(graph, root, catalog=CATALOG)
    # lenient: every question of this catalog names its table, so a strict benchmark (the default)
    # keeps almost none of them (test_a_strict_default_refuses_word_matched_requests_and_says_so); the
    # tests here are about building and evaluating the five behaviours
    yield root, run_generate(graph, catalog=CATALOG, root=root, n=40, seed=7, strict=False)
    delete_catalog(graph, CATALOG)


def _of(contracts: list[Contract], behaviour: str) -> list[Contract]:
    return [c for c in contracts if c.behaviour == behaviour]


def test_small_catalog_generates_what_it_can_and_says_what_it_skipped(small: tuple[Path, GenerateSummary]) -> None:
    report = small[1].report
    assert {"single", "parallel", "sequential", "interactive"} <= set(report.produced)
    assert set(report.skipped()) == set(report.targets) - set(report.produced)


def test_two_database_catalog_does_not_crash(graph: Graph, tmp_path: Path) -> None:
    root = write_release(tmp_path, ["music_a", "geo_c"])
    name = CATALOG + "_two"
    delete_catalog(graph, name)
    try:
        ingest_sqlite_folder(graph, root, catalog=name)
        report = run_generate(graph, catalog=name, root=root, n=30, seed=1, strict=False).report
        assert "interactive" in report.skipped()  # no question two databases answer differently
        assert "parallel" in report.produced and "sequential" in report.produced
    finally:
        delete_catalog(graph, name)


def test_requests_are_human_questions_without_layout_cues(small: tuple[Path, GenerateSummary]) -> None:
    contracts = small[1].report.contracts
    questions = {q for _, _, q in QUESTIONS}
    for c in contracts:
        assert not re.search(r"\(\d\)|fewest|First:|found in the first step|previous step|db_[0-9a-f]{10}", c.request)
        for u in c.units():  # a bound downstream unit states its question without the bound value
            assert u.intent in questions or u.unit_id.endswith("~bound_value"), u.intent
    seq = _of(contracts, "sequential")[0]
    assert "France" not in seq.request and "home country" not in seq.request
    texts = [" ".join(re.findall(r"[a-z0-9]+", c.request.lower())) for c in contracts]
    assert len(texts) == len(set(texts))


def test_catalog_ids_are_random_per_catalog_and_stable_on_reingest(graph: Graph,
                                                                   small: tuple[Path, GenerateSummary]) -> None:
    root = small[0]
    first = {r["name"]: pid for pid, r in private_locations(graph, CATALOG).items()}
    ingest_sqlite_folder(graph, root, catalog=CATALOG)
    assert {r["name"]: pid for pid, r in private_locations(graph, CATALOG).items()} == first
    other = CATALOG + "_ids"
    try:
        ingest_sqlite_folder(graph, root, catalog=other)
        again = {r["name"]: pid for pid, r in private_locations(graph, other).items()}
        assert not set(again.values()) & set(first.values())  # same files, fresh random ids
    finally:
        delete_catalog(graph, other)


def test_each_generation_is_a_new_benchmark_with_fresh_public_ids(graph: Graph, small: tuple[Path, GenerateSummary],
                                                                  tmp_path: Path) -> None:
    root = small[0]
    name = CATALOG + "_bench"
    delete_catalog(graph, name)
    try:
        ingest_sqlite_folder(graph, root, catalog=name)
        catalog_ids = set(private_locations(graph, name))
        runs = [run_generate(graph, catalog=name, root=root, n=20, seed=7, strict=False, out=tmp_path / f"c{i}.jsonl",
                             public_dir=tmp_path / f"public{i}") for i in (1, 2)]
        first, second = ({d for c in r.published for d in c.required_databases()} for r in runs)
        assert runs[0].benchmark != runs[1].benchmark
        assert first and second and not first & second  # the same catalog, drawn twice: no id in common
        assert not (first | second) & catalog_ids  # the catalog's own ids never leave the private side
        assert not {c.task_id for c in runs[0].published} & {c.task_id for c in runs[1].published}
        assert [c.request for c in runs[0].published] == [c.request for c in runs[1].published]  # same seed
        for i in (1, 2):
            public = "".join(p.read_text() for p in sorted((tmp_path / f"public{i}").iterdir()))
            for row in private_locations(graph, name).values():
                assert row["name"] not in public and row["location"] not in public
            assert not any(cid in public for cid in catalog_ids)
            assert "SELECT" not in public and "intended" not in public and runs[i - 1].published[0].request in public
        # the first benchmark stays evaluable after the second replaced it in the graph
        setup = load_eval(graph, name, tmp_path / "c1.jsonl")
        try:
            assert first <= set(setup.indexes.view.ids()) and not set(setup.indexes.view.ids()) & catalog_ids
            told = evaluate(setup.contracts, setup.indexes, setup.route_executor, OracleRouter(setup.contracts),
                            clarify=True).summary
            assert told.route_exec_graph == 1.0
        finally:
            setup.executor.close()
        from dibench.cli.main import main

        res = CliRunner().invoke(main, ["routing", "generate", "--catalog", name, "--path", str(root), "--n", "10",
                                        "--lenient", "-o", str(tmp_path / "c3.jsonl"), "--public-dir",
                                        str(tmp_path / "public3")])
        assert res.exit_code == 0, res.output
        assert "benchmark bm_" in res.output and (tmp_path / "public3" / "catalog.json").is_file()
        tasks = [json.loads(line) for line in (tmp_path / "public3" / "tasks.jsonl").read_text().splitlines()]
        assert tasks and all(set(t) == {"task_id", "benchmark", "request"} for t in tasks)
    finally:
        delete_catalog(graph, name)


def test_oracle_executor_runs_gold_sql_on_the_right_route_only(graph: Graph,
                                                               small: tuple[Path, GenerateSummary]) -> None:
    setup = load_eval(graph, CATALOG)
    try:
        c = _of(setup.contracts, "sequential")[0]
        gold = gold_branch_route(c.branches[0])
        # no SQL and a meaningless request: the oracle executor never reads the text
        blind = gold.model_copy(update={"contributions": [RouteContribution(database=x.database, request="show me")
                                                          for x in gold.contributions]})
        route = Route(behaviour="sequential", branches=[blind])
        assert _ea(setup, c, route) == 1.0
        no_edge = Route(behaviour="sequential", branches=[blind.model_copy(update={"edges": []})])
        assert _ea(setup, c, no_edge) < 1.0  # the downstream SQL needs the bound value
        others = sorted(set(setup.indexes.view.ids()) - set(gold.databases))
        wrong = RouteBranch(databases=[gold.databases[0], others[0]],
                            edges=[RouteEdge(source=gold.databases[0], target=others[0])],
                            contributions=[RouteContribution(database=d, request="x")
                                           for d in (gold.databases[0], others[0])])
        assert _ea(setup, c, Route(behaviour="sequential", branches=[wrong])) < 1.0
    finally:
        setup.executor.close()


def _ea(setup: object, c: Contract, route: Route) -> float:
    from dibench.routing.evaluate import EvalResult

    class Fixed:
        name = "fixed"

        def route(self, task: object, env: object) -> Route:  # noqa: ARG002
            return env.submit_route(route)  # type: ignore[attr-defined, no-any-return]

    result: EvalResult = evaluate([c], setup.indexes, setup.route_executor, Fixed())  # type: ignore[attr-defined]
    return result.summary.ea_micro


def test_llm_executor_writes_the_sql(graph: Graph, small: tuple[Path, GenerateSummary]) -> None:
    setup0 = load_eval(graph, CATALOG)
    c = _of(setup0.contracts, "single")[0]
    setup0.executor.close()
    units = c.units()  # one ask or two: the model is asked once per contribution, in order
    model = FakeListChatModel(responses=[json.dumps({"sql": u.sql}) for u in units])
    setup = load_eval(graph, CATALOG, llm=model)
    try:
        branch = gold_branch_route(c.branches[0])
        route = Route(behaviour="single", branches=[branch.model_copy(update={"contributions": [
            RouteContribution(database=u.database, request=c.request) for u in units]})])
        assert setup.route_executor.writer.name == "llm:FakeListChatModel"
        assert _ea(setup, c, route) == 1.0
        model.responses = [json.dumps({"sql": "SELECT 1"})] * 4
        model.i = 0
        assert _ea(setup, c, route) == 0.0
    finally:
        setup.executor.close()


def test_oracle_needs_the_turn_on_ambiguous_tasks(graph: Graph, small: tuple[Path, GenerateSummary]) -> None:
    setup = load_eval(graph, CATALOG)
    try:
        inter = _of(setup.contracts, "interactive")
        told = evaluate(inter, setup.indexes, setup.route_executor, OracleRouter(inter), clarify=True).summary
        assert told.ra_graph == 1.0
        for c in inter:
            assert len(c.branches) == 2 and c.intended in {"a", "b"}
    finally:
        setup.executor.close()


def test_reingest_prunes_removed_databases_and_delete_command(graph: Graph, tmp_path: Path) -> None:
    from dibench.cli.main import main

    name = CATALOG + "_prune"
    root = write_release(tmp_path, list(DATABASES))
    delete_catalog(graph, name)
    ingest_sqlite_folder(graph, root, catalog=name)
    assert counts(graph, name)["databases"] == 3
    (root / "database" / "music_b" / "music_b.sqlite").unlink()
    (root / "database" / "music_b").rmdir()
    ingest_sqlite_folder(graph, root, catalog=name)
    assert counts(graph, name)["databases"] == 2
    assert {r["name"] for r in private_locations(graph, name).values()} == {"music_a", "geo_c"}
    runner = CliRunner()
    res = runner.invoke(main, ["catalog", "delete", name])
    assert res.exit_code == 0, res.output
    assert counts(graph, name)["databases"] == 0
    res = runner.invoke(main, ["catalog", "delete", name])
    assert res.exit_code != 0 and name in res.output


def test_a_strict_default_refuses_word_matched_requests_and_says_so(graph: Graph,
                                                                    small: tuple[Path, GenerateSummary],
                                                                    tmp_path: Path) -> None:
    """`routing generate` is strict by default: on this catalog, whose every question names its
    table, what a word-matching routes is refused and counted, and a behaviour left empty makes it
    exit 1 naming --allow-missing, unless that is passed."""
    from dibench.cli.main import main

    root, lenient = small[0], small[1].report
    name = CATALOG + "_strict"
    delete_catalog(graph, name)
    try:
        ingest_sqlite_folder(graph, root, catalog=name)
        args = ["routing", "generate", "--catalog", name, "--path", str(root), "--n", "40", "-o",
                str(tmp_path / "c.jsonl"), "--public-dir", str(tmp_path / "public")]
        res = CliRunner().invoke(main, args)
        assert "word-match" in res.output, res.output
        built = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
        assert len(built) < len(lenient.contracts)
        missing = sorted(set(lenient.targets) - {c["behaviour"] for c in built})
        assert missing and res.exit_code == 1 and "--allow-missing" in res.output
        res = CliRunner().invoke(main, [*args, *(a for b in missing for a in ("--allow-missing", b))])
        assert res.exit_code == 0, res.output
    finally:
        delete_catalog(graph, name)
