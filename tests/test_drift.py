"""`dibench drift` on real Neo4j and Postgres: the shop pack over its own schema, generated, then
rows inserted, updated and deleted in the warehouse.

Expectations come from the tasks' own stored parameters, not from the drift code: a task whose
time window holds the changed rows must move, every other task on orders must re-execute to
its stored answers, and the visit tasks (another table) must be skipped by fingerprint. Each
change is undone afterwards; the fingerprint is a checksum of the rows' multiset, so the
restored table has its recorded fingerprint again.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import text

from dibench.cli.main import main
from dibench.core.config import Settings
from dibench.core.pack import Pack, load_pack
from dibench.evaluation.rederive import derive_answer, needs_base_rows
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.pipeline import ingest_pack
from dibench.service.api import create_app
from dibench.service.drift import latest_check, plan_drift, run_drift
from dibench.service.export import export, preset_query
from dibench.service.report import domain_data, render_drift
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, snapshot
from tests.fixtures.shop import create_shop, shop_pack

DOMAIN = "drift_t"
SCHEMA = "drift_t"
SALES = ("MINI-REV-001", "MINI-AOV-001")
MOVING = ("point_query", "decomposition", "comparison", "ranking")


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    create_shop(warehouse.admin(), SCHEMA)
    delete_domain(graph, DOMAIN)
    pk = load_pack(shop_pack(tmp_path_factory.mktemp("drift") / "pack", DOMAIN, SCHEMA))
    assert ingest_pack(pk, graph, warehouse).failures == []
    generate(pk, graph, target=10, seed=42, workers=1, min_per_type=0)
    yield pk
    delete_domain(graph, DOMAIN)


def sql(wh: Warehouse, statement: str, **params: Any) -> None:
    with wh.admin().begin() as c:
        c.execute(text(statement), params)


def tasks(graph: Graph) -> dict[str, dict[str, Any]]:
    nodes, _ = snapshot(graph, DOMAIN)
    return {k: v for k, v in nodes.items() if "Task" in v["labels"] and v.get("gold_sql")
            and v["status"] == "admitted"}


def window(task: dict[str, Any]) -> tuple[str, str]:
    p = json.loads(task["gold_params"])
    return p["start_date"], p["end_date"]


def target_task(graph: Graph) -> tuple[str, str]:
    """A sales task whose answer must move when every customer orders on its first day."""
    found = sorted(k for k, t in tasks(graph).items() if t["metric_id"] in SALES and t["analysis_type"] in MOVING
                   and t["variant"] == "standard")
    assert found, "the run has no sales task of a moving type"
    return found[0], window(tasks(graph)[found[0]])[0]


def outcomes(plan: Any) -> dict[str, str]:
    return {t.key: t.outcome for t in plan.tasks}


def assert_localised(graph: Graph, plan: Any, day: str, must_move: str) -> None:
    """The task with rows changed in its window moved; sales tasks outside kept their answers;
    visit tasks were skipped by fingerprint."""
    got = outcomes(plan)
    assert got[must_move] == "drifted", plan.changelog()["tasks"]
    seen = {"visits": 0, "outside": 0, "inside": 0}
    for key, t in tasks(graph).items():
        start, end = window(t)
        if t["metric_id"] == "MINI-VIS-001":
            assert got[key] == "skipped", (key, got[key])
            seen["visits"] += 1
        elif not start <= day < end:
            assert got[key] == "unchanged", (key, got[key], start, end)
            seen["outside"] += 1
        else:
            assert got[key] in ("unchanged", "drifted"), (key, got[key])
            seen["inside"] += 1
    assert min(seen.values()) > 0, seen


def assert_reported(graph: Graph, plan: Any) -> None:
    """The written check, as the HTTP API and the HTML report's drift panel show it."""
    drifted = [t for t in plan.tasks if t.outcome == "drifted"]
    api = TestClient(create_app(Settings(api_token="w-token")), base_url="http://127.0.0.1")
    got = api.get(f"/domains/{DOMAIN}/drift")
    assert got.status_code == 200 and got.json()["key"] == plan.key
    assert got.json()["counts"] == plan.counts() and "old" not in got.json()["tasks"][0]
    html = render_drift(domain_data(graph, DOMAIN))
    assert "Data drift" in html and f"<td>orders</td><td>{drifted[0].metric_id}</td>" in html
    assert api.post(f"/domains/{DOMAIN}/drift").status_code in (401, 403)
    posted = api.post(f"/domains/{DOMAIN}/drift", headers={"Authorization": "Bearer w-token"})
    assert posted.status_code == 200 and posted.json()["counts"] == plan.counts()


def test_nothing_changed_everything_skipped(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    plan = run_drift(graph, warehouse, DOMAIN)
    c = plan.counts()
    assert c["skipped"] == len(tasks(graph)) > 0 and plan.not_computed > 0, c
    assert plan.sql_statements == 0
    assert latest_check(graph, DOMAIN)["counts"] == c


def test_update_of_unread_column_is_not_a_change(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    sql(warehouse, f"UPDATE {SCHEMA}.orders SET note = :n", n="re-keyed by the CRM")
    assert set(outcomes(plan_drift(graph, warehouse, DOMAIN)).values()) == {"skipped"}


def test_insert(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    key, day = target_task(graph)
    sql(warehouse, f"INSERT INTO {SCHEMA}.orders (order_id, customer_id, ordered_at, amount, channel, rating) "
                   f"SELECT 100000 + c.customer_id, c.customer_id, CAST(:day AS timestamp) + interval '1 hour', 1500, "
                   f"'web', 1 FROM {SCHEMA}.customers c", day=day)
    try:
        plan = run_drift(graph, warehouse, DOMAIN)
        assert_localised(graph, plan, day, key)
        assert_reported(graph, plan)
    finally:
        sql(warehouse, f"DELETE FROM {SCHEMA}.orders WHERE order_id >= 100000")
    assert set(outcomes(plan_drift(graph, warehouse, DOMAIN)).values()) == {"skipped"}


def test_update(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    key, day = target_task(graph)
    first_week = "ordered_at >= CAST(:day AS timestamp) AND ordered_at < CAST(:day AS timestamp) + interval '7 days'"
    sql(warehouse, f"UPDATE {SCHEMA}.orders SET amount = amount + :d WHERE {first_week}", day=day, d=400)
    try:
        assert_localised(graph, plan_drift(graph, warehouse, DOMAIN), day, key)
    finally:
        sql(warehouse, f"UPDATE {SCHEMA}.orders SET amount = amount - :d WHERE {first_week}", day=day, d=400)
    assert set(outcomes(plan_drift(graph, warehouse, DOMAIN)).values()) == {"skipped"}


def test_delete(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    key, day = target_task(graph)
    first_week = "ordered_at >= CAST(:day AS timestamp) AND ordered_at < CAST(:day AS timestamp) + interval '7 days'"
    sql(warehouse, f"CREATE TABLE {SCHEMA}.orders_kept AS SELECT * FROM {SCHEMA}.orders WHERE {first_week}", day=day)
    sql(warehouse, f"DELETE FROM {SCHEMA}.orders WHERE {first_week}", day=day)
    try:
        assert_localised(graph, plan_drift(graph, warehouse, DOMAIN), day, key)
    finally:
        sql(warehouse, f"INSERT INTO {SCHEMA}.orders SELECT * FROM {SCHEMA}.orders_kept")
        sql(warehouse, f"DROP TABLE {SCHEMA}.orders_kept")
    assert set(outcomes(plan_drift(graph, warehouse, DOMAIN)).values()) == {"skipped"}


def test_export_carries_fingerprint_and_dialects(pack: Pack, graph: Graph, warehouse: Warehouse,
                                                 tmp_path: Path) -> None:
    q = preset_query("domain", {"domain": DOMAIN})
    manifest = export(graph, warehouse, q, "jsonl", tmp_path, domain=DOMAIN, audience="private",
                      dialects=["duckdb", "trino"])
    fps = [t["data_fingerprint"] for t in manifest["tasks"].values()]
    assert all(fp and fp["schema"] == SCHEMA and "orders" in fp["tables"] for fp in fps)
    records = [json.loads(line) for line in (tmp_path / "private.jsonl").read_text().splitlines()]
    computed = [r for r in records if r["gold_sql"]]
    assert computed and all("$start_date" in r["gold_sql_dialects"]["duckdb"]["sql"] for r in computed)
    trino = computed[0]["gold_sql_dialects"]["trino"]
    assert ":" not in trino["sql"].replace("::", "") and trino["param_order"][0] in computed[0]["params"]
    api = TestClient(create_app(Settings(api_token="w-token")), base_url="http://127.0.0.1")
    body = {"preset": "domain", "params": {"domain": DOMAIN}, "view": "private", "dialects": ["bigquery"]}
    got = api.post("/export", json=body, headers={"Authorization": "Bearer w-token"})
    assert got.status_code == 200 and "@start_date" in got.text
    assert api.post("/export", json={**body, "dialects": ["oracle"]},
                    headers={"Authorization": "Bearer w-token"}).status_code == 400


def test_sql_that_fails_now_is_reported_in_one_line(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    sql(warehouse, f"ALTER TABLE {SCHEMA}.orders RENAME COLUMN rating TO stars")
    try:
        plan = plan_drift(graph, warehouse, DOMAIN)
    finally:
        sql(warehouse, f"ALTER TABLE {SCHEMA}.orders RENAME COLUMN stars TO rating")
    by_metric: dict[str, set[str]] = {}
    for t in plan.tasks:
        by_metric.setdefault(t.metric_id, set()).add(t.outcome)
        if t.outcome == "failed":
            assert "rating" in t.reason and "\n" not in t.reason and "SELECT" not in t.reason, t.reason
    assert by_metric["MINI-SAT-001"] == {"failed"}  # reads the rating
    assert by_metric["MINI-REV-001"] == {"unchanged"}  # does not: re-executed, same answers
    assert by_metric["MINI-VIS-001"] == {"skipped"}


def test_apply_versions_drifted_tasks(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    key, day = target_task(graph)
    before = tasks(graph)
    sql(warehouse, f"INSERT INTO {SCHEMA}.orders (order_id, customer_id, ordered_at, amount, channel, rating) "
                   f"SELECT 200000 + c.customer_id, c.customer_id, CAST(:day AS timestamp), 900, 'store', 2 "
                   f"FROM {SCHEMA}.customers c", day=day)
    result = CliRunner().invoke(main, ["drift", DOMAIN, "--apply", "--json", "--pack", str(pack.root)])
    assert result.exit_code == 0, result.output
    log = json.loads(result.output)
    assert log["applied"] and log["counts"]["drifted"] >= 1
    nodes, edges = snapshot(graph, DOMAIN)
    for t in log["tasks"]:
        if t["outcome"] != "drifted":
            continue
        node = nodes[t["key"]]
        assert node["version"] == before[t["key"]]["version"] + 1 and node["updated_by"] == log["check_key"]
        old = nodes[f"taskver:{t['key']}@v{before[t['key']]['version']}"]
        assert old["gold_answer"] == before[t["key"]]["gold_answer"] and old["superseded_by"] == log["check_key"]
        assert ("PREVIOUS", t["key"], old["key"]) in edges
        assert json.loads(node["gold_answer"]) == t["new"]["gold_answer"]
    assert nodes[key]["version"] == before[key]["version"] + 1
    # The new gold is what the stored SQL gives today (as the oracle agent would compute it).
    for rec in load_tasks(graph, DOMAIN):
        if rec.gold_sql and rec.task_id == key:
            rows = warehouse.execute_readonly(rec.gold_sql, rec.params).rows
            base = warehouse.execute_readonly(rec.base_sql, rec.base_params).rows \
                if needs_base_rows(rec) and rec.base_sql else None
            assert derive_answer(rec, rows, base) == rec.gold_answer
    # Every re-executed task recorded today's fingerprint: the next check skips them all.
    again = run_drift(graph, warehouse, DOMAIN)
    assert set(outcomes(again).values()) == {"skipped"}, again.counts()
    checked = latest_check(graph, DOMAIN)
    assert checked["key"] == again.key and {t["outcome"] for t in checked["tasks"]} == {"skipped"}
