"""DuckDB as a warehouse read in place: the read-only path refuses what PostgreSQL's refuses
(writes, files, extensions, several statements) on its own tree and again in the engine, keeps the
statement timeout and the result cap, reads its catalog, and the Jaffle Shop built on both engines
from the same CSVs gives the same tasks and gold with the same seed."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dibench.core.errors import DibenchError, QueryTimeout, ReadOnlyViolation, WarehouseError
from dibench.core.pack import Pack, load_pack
from dibench.domains.jaffle.load import load
from dibench.evaluation.harness import evaluate
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.domain_check import check_domain
from dibench.ingest.pipeline import ingest_pack
from dibench.service.drift import run_drift
from dibench.stores.duckdb_warehouse import DuckDBFile, DuckDBWarehouse, _reader
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.pack_data import warehouse_for
from dibench.stores.warehouse import ResultCap, Warehouse, open_warehouse
from dibench.core.config import get_settings

PACK = load_pack("jaffle")
ENV = "DIBENCH_TEST_JAFFLE_DUCKDB_URL"


@pytest.fixture(scope="module")
def duck_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Jaffle Shop in a DuckDB file, built by the pack's own loader through load_database."""
    path = tmp_path_factory.mktemp("duck") / "warehouse.duckdb"
    wh = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{path}"}))
    assert isinstance(wh, DuckDBWarehouse)
    report = load_database(PACK, wh)
    assert report["tables"]["raw_orders"] == 72235
    wh.dispose()
    return path


@pytest.fixture(scope="module")
def duck(duck_file: Path) -> DuckDBWarehouse:
    wh = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{duck_file}"}))
    assert isinstance(wh, DuckDBWarehouse)
    return wh


def test_the_url_picks_the_engine(duck: DuckDBWarehouse, warehouse: Warehouse) -> None:
    assert (duck.engine_name, duck.dialect) == ("duckdb", "duckdb")
    assert (warehouse.engine_name, warehouse.dialect) == ("postgresql", "postgres")


def test_our_postgres_sql_runs_rendered_for_duckdb(duck: DuckDBWarehouse) -> None:
    # PostgreSQL spellings (::, :name, ROUND(numeric)) are rendered for DuckDB from the tree.
    res = duck.execute_readonly(
        "SELECT ROUND(CAST(SUM(product_price) AS NUMERIC) / COUNT(*), 4) AS avg_price, COUNT(*)::int AS n "
        "FROM jaffle.order_items WHERE ordered_at >= :start_date AND ordered_at < :end_date",
        {"start_date": "2018-09-01", "end_date": "2018-10-01", "unused": 1})
    assert res.columns == ["avg_price", "n"] and res.rows[0][1] > 0 and isinstance(res.rows[0][0], float)


def test_integer_division_is_postgresqls_on_both_engines(duck: DuckDBWarehouse, warehouse: Warehouse) -> None:
    # PostgreSQL divides two integers as integers, truncating toward zero; DuckDB's `/` divides as
    # real numbers. Our own SQL (a PostgreSQL tree) is typed from the DuckDB file's catalog and a
    # division of two integers rendered as DuckDB's truncating one: both engines give PostgreSQL's.
    rows = "FROM (VALUES (1), (2), (4)) AS t(x)"
    bare, cast = f"SELECT SUM(x) / COUNT(*) AS v {rows}", f"SELECT CAST(SUM(x) AS NUMERIC) / COUNT(*) AS v {rows}"
    assert warehouse.execute_readonly(bare).rows[0][0] == 2 and duck.execute_readonly(bare).rows[0][0] == 2
    assert float(warehouse.execute_readonly(cast).rows[0][0]) == pytest.approx(duck.execute_readonly(cast).rows[0][0])
    negative = "SELECT -7 / 2 AS v"
    assert (warehouse.execute_readonly(negative).rows[0][0], duck.execute_readonly(negative).rows[0][0]) == (-3, -3)
    # integer columns of the file, qualified or found on the search path; a decimal divides as a real number
    counts = "SELECT SUM(customers.count_lifetime_orders) / COUNT(*) AS v FROM {}customers AS customers"
    real = duck.execute_readonly(counts.format("jaffle."), agent=True).rows[0][0]  # DuckDB's own division
    assert real != int(real)
    for prefix, schema in (("jaffle.", None), ("", "jaffle")):
        assert duck.execute_readonly(counts.format(prefix), schema=schema).rows[0][0] == int(real)
    money = duck.execute_readonly("SELECT SUM(order_total) / COUNT(*) AS v FROM jaffle.orders").rows[0][0]
    assert money != int(money)
    # an agent's SQL on DuckDB is DuckDB's own, as its schema description says
    assert duck.execute_readonly("SELECT 7 / 2 AS v", agent=True).rows[0][0] == 3.5


def test_the_schema_is_the_search_path(duck: DuckDBWarehouse) -> None:
    assert duck.execute_readonly("SELECT COUNT(*) FROM orders", schema="jaffle").rows == [(72235,)]


@pytest.mark.parametrize(("sql", "reason"), [
    ("INSERT INTO jaffle.orders SELECT * FROM jaffle.orders", "INSERT"),
    ("DELETE FROM jaffle.orders", "DELETE"),
    ("CREATE TABLE jaffle.x AS SELECT 1", "CREATE"),
    ("SELECT 1; SELECT 2", "multi-statement"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("SELECT * FROM read_text('/etc/hostname')", "read_text"),
    ("SELECT * FROM '/etc/passwd'", "file named as a table"),
    ("SELECT * FROM 'data.csv'", "file named as a table"),
    ("SELECT * FROM glob('/etc/hostname')", "glob"),
    ("SELECT getenv('HOME')", "getenv"),
    ("SELECT * FROM duckdb_settings()", "duckdb_settings"),
    ("SELECT * FROM duckdb_databases()", "duckdb_databases"),
    ("SELECT * FROM query('SELECT 1')", "query"),
    ("COPY jaffle.orders TO '/tmp/x.csv'", "COPY"),
    ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
    ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "COMMAND"),
    ("SET enable_external_access = true", "SET"),
    ("PRAGMA database_list", "PRAGMA"),
])
@pytest.mark.parametrize("agent", [False, True])
def test_writes_files_and_extensions_are_refused(duck: DuckDBWarehouse, sql: str, reason: str, agent: bool) -> None:
    # Our own SQL is read as PostgreSQL, which reads some DuckDB-only forms otherwise: refused all the same.
    with pytest.raises(ReadOnlyViolation, match=reason if agent else None):
        duck.execute_readonly(sql, agent=agent)


@pytest.mark.parametrize("sql", [
    "INSERT INTO jaffle.orders (order_id) VALUES ('x')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "COPY (SELECT 1) TO '/tmp/dibench-duck-out.csv'",
    "ATTACH '/tmp/dibench-duck-other.duckdb' AS other",
    "SET enable_external_access = true",
])
def test_the_engine_itself_refuses_what_the_check_would_let_through(duck: DuckDBWarehouse, sql: str) -> None:
    """The second wall: the reader connection, asked directly, still refuses."""
    cur = _reader(duck.path).cursor()
    try:
        with pytest.raises(duckdb.Error):
            cur.execute(sql)
    finally:
        cur.close()
    assert not Path("/tmp/dibench-duck-out.csv").exists()


def test_a_statement_past_its_timeout_is_interrupted(duck: DuckDBWarehouse) -> None:
    started = time.perf_counter()
    with pytest.raises(QueryTimeout):
        duck.execute_readonly("SELECT SUM(a.range * b.range) FROM range(100000000) a, range(1000) b", timeout_s=0.3)
    assert time.perf_counter() - started < 10


def test_an_agents_result_is_capped(duck: DuckDBWarehouse) -> None:
    res = duck.execute_readonly("SELECT * FROM jaffle.order_items", cap=ResultCap(rows=100), agent=True)
    assert len(res.rows) == 100 and res.cut is not None and "100 rows" in res.cut


def test_an_agent_writes_duckdb_sql(duck: DuckDBWarehouse) -> None:
    res = duck.execute_readonly("SELECT COUNT(*) AS n FROM jaffle.orders WHERE ordered_at < $end",
                                {"end": "2018-10-01"}, agent=True)
    assert res.rows[0][0] > 0


def test_a_month_period_reads_alike_through_an_agents_tool(duck: DuckDBWarehouse) -> None:
    """The gold SQL's TO_CHAR(..., 'YYYY-MM') gives the period "2018-09" on DuckDB too, read as our
    own SQL or through an agent's tool (DuckDB has no TO_CHAR: it was a cast to text, and a monthly
    series on the window's calendar found none of its months)."""
    sql = ("SELECT TO_CHAR(DATE_TRUNC('month', ordered_at), 'YYYY-MM') AS period, COUNT(*) AS n FROM jaffle.orders "
           "WHERE ordered_at < '2018-10-01' GROUP BY 1")
    assert duck.execute_readonly(sql, agent=True).rows[0][0] == "2018-09"
    assert duck.execute_readonly(sql).rows[0][0] == "2018-09"


def test_an_error_names_no_value(duck: DuckDBWarehouse) -> None:
    with pytest.raises(WarehouseError, match="Binder|Catalog") as info:
        duck.execute_readonly("SELECT no_such_column FROM jaffle.orders WHERE order_id = 'secret-value'")
    assert "secret-value" not in str(info.value)


def test_the_catalog_matches_postgres(duck: DuckDBWarehouse, warehouse: Warehouse) -> None:
    load_database(PACK, warehouse)
    pg, dk = warehouse.inspect_schema("jaffle"), duck.inspect_schema("jaffle")
    assert pg is not None and dk is not None
    assert sorted(pg) == sorted(dk)
    for table in pg:
        assert [c for c, _ in pg[table].columns] == [c for c, _ in dk[table].columns], table
        assert pg[table].primary_key == dk[table].primary_key, table
    assert duck.inspect_schema("no_such_schema") is None
    assert duck.schema_origin("jaffle") == "dibench" and duck.schema_origin("no_such_schema") == "absent"


def test_domain_check_reads_the_file_and_gives_no_index_advice(duck: DuckDBWarehouse) -> None:
    report = check_domain(PACK, duck)
    assert report["schema_exists"] and report["missing"] == 0 and report["indexes"] == []
    assert (report["engine"], report["index_advice"]) == ("DuckDB", False)
    assert {t["table"]: t["rows"] for t in report["tables"]}["orders"] == 72235


def test_a_file_not_built_by_dibench_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE SCHEMA jaffle; CREATE TABLE jaffle.mine (a INT)")
    wh = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{path}"}))
    with pytest.raises(DibenchError, match="was not created by"):
        load_database(PACK, wh)
    wh.dispose()
    with duckdb.connect(str(path), read_only=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM jaffle.mine").fetchone() == (0,)


def test_a_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    wh = open_warehouse(get_settings().model_copy(update={"database_url": f"duckdb://{tmp_path}/none.duckdb"}))
    with pytest.raises(WarehouseError, match="none.duckdb does not exist"):
        wh.execute_readonly("SELECT 1")


def _tasks(graph: Graph, pack: Pack, wh: Warehouse) -> tuple[list[dict[str, Any]], float, float]:
    delete_domain(graph, pack.name)
    started = time.perf_counter()
    assert ingest_pack(pack, graph, wh).failures == []
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    summary = generate(pack, graph, target=6, seed=42, workers=1, min_per_type=0)
    generate_s = time.perf_counter() - started
    assert summary.admitted > 0
    tasks = [{"id": r.task_id, "question": r.question, "gold": r.gold_answer, "base": r.base_answer,
              "lifted": r.lifted_answer, "tier": r.tier, "variant": r.variant}
             for r in load_tasks(graph, pack.name)]
    return tasks, ingest_s, generate_s


def test_jaffle_gives_the_same_tasks_and_gold_on_both_engines(duck_file: Path, graph: Graph, warehouse: Warehouse,
                                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Then, on DuckDB, the oracle agent (gold SQL through the agents' SQL tool) scores 100% and
    drift finds every stored answer as it is."""
    load_database(PACK, warehouse)
    monkeypatch.setenv(ENV, f"duckdb://{duck_file}")
    on_duck = dataclasses.replace(PACK, spec=PACK.spec.model_copy(update={"database_env": ENV}))
    assert isinstance(warehouse_for(on_duck), DuckDBWarehouse)
    try:
        pg_tasks, pg_ingest, pg_generate = _tasks(graph, PACK, warehouse)
        duck_tasks, duck_ingest, duck_generate = _tasks(graph, on_duck, warehouse_for(on_duck))
        oracle = evaluate(graph, warehouse_for(on_duck), domain=PACK.name, agent_name="oracle",
                          out_dir=tmp_path / "oracle", chance=False)
        drift = run_drift(graph, warehouse_for(on_duck), PACK.name)
    finally:
        delete_domain(graph, PACK.name)
    print(f"\njaffle ingest: PostgreSQL {pg_ingest:.1f} s, DuckDB {duck_ingest:.1f} s; generate (target 6): "
          f"PostgreSQL {pg_generate:.1f} s, DuckDB {duck_generate:.1f} s; tasks {len(pg_tasks)} / {len(duck_tasks)}")
    assert len(pg_tasks) > 0
    assert duck_tasks == pg_tasks
    assert [(t.verdict.task_id, t.verdict.reason) for t in oracle.report.tasks if not t.verdict.passed] == []
    assert oracle.summary.answered == len(duck_tasks)
    # drift re-executes SQL: a knowledge task (its gold is what a document states) has none to run
    knowledge = sum(t.analysis_type == "knowledge_retrieval" for t in oracle.report.tasks)
    assert drift.tasks and {t.outcome for t in drift.tasks} <= {"skipped", "unchanged"}
    assert drift.not_computed == knowledge, (drift.not_computed, knowledge)
