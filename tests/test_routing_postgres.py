"""A PostgreSQL schema as a catalog source: profiled like a SQLite file, executed read-only."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from dibench.routing.catalog_store import delete_catalog, private_locations
from dibench.routing.environment import CatalogIndexes, RoutingEnvironment
from dibench.routing.evaluate import evaluate
from dibench.routing.ingest import ingest_postgres_schemas, ingest_sqlite_folder
from dibench.routing.models import RouteBranch, RouteContribution
from dibench.routing.pipeline import load_eval, run_generate
from dibench.routing.routers.oracle import OracleRouter
from dibench.routing.view import CatalogView
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse

SCHEMA = "routing_pg_test"
CATALOG = "routing_pg_test"


@pytest.fixture()
def pg_schema(warehouse: Warehouse, graph: Graph) -> Iterator[str]:
    engine = warehouse.admin()
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {SCHEMA}"))
        conn.execute(text(f"CREATE TABLE {SCHEMA}.warehouses (warehouse_id integer PRIMARY KEY, city text NOT NULL)"))
        conn.execute(text(f"CREATE TABLE {SCHEMA}.shipments (shipment_id integer PRIMARY KEY, "
                          f"warehouse_id integer REFERENCES {SCHEMA}.warehouses (warehouse_id), "
                          "weight_kg numeric(8, 2), shipped_on date)"))
        conn.execute(text(f"INSERT INTO {SCHEMA}.warehouses VALUES (:i, :c)"),
                     [{"i": 1, "c": "Lyon"}, {"i": 2, "c": "Porto"}])
        conn.execute(text(f"INSERT INTO {SCHEMA}.shipments VALUES (:i, :w, :kg, CAST(:d AS date))"),
                     [{"i": 1, "w": 1, "kg": 12.5, "d": "2024-01-03"}, {"i": 2, "w": 2, "kg": 3.25, "d": "2024-02-11"}])
    yield SCHEMA
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
    delete_catalog(graph, CATALOG)


def test_postgres_schema_becomes_a_catalog_database(graph: Graph, warehouse: Warehouse, pg_schema: str) -> None:
    report = ingest_postgres_schemas(graph, warehouse.admin(), [pg_schema], catalog=CATALOG)
    assert (report.databases, report.tables, report.columns, report.foreign_keys) == (1, 2, 6, 1)
    again = ingest_postgres_schemas(graph, warehouse.admin(), [pg_schema], catalog=CATALOG)
    assert again.counters.get("nodes_created", 0) == 0

    view = CatalogView.load(graph, CATALOG)
    (pid, db), = view.databases.items()
    assert db.entities == ["shipment", "warehouse"]
    assert "weight kg of shipment" in db.measures
    assert any(r.startswith("shipped on of shipment: 2024-01-03 .. 2024-02-11") for r in db.time_ranges)
    shipped = {c["column"]: c for c in db.tables["shipments"].columns}
    assert (shipped["warehouse_id"]["ref_table"], shipped["warehouse_id"]["ref_column"]) == ("warehouses", "warehouse_id")
    city = next(c for c in db.tables["warehouses"].columns if c["column"] == "city")
    assert sorted(city["samples"]) == ["Lyon", "Porto"]

    loc = private_locations(graph, CATALOG)[pid]
    assert (loc["engine"], loc["name"], loc["db_schema"]) == ("postgresql", SCHEMA, SCHEMA)
    shown = str(RoutingEnvironment(CatalogIndexes(view)).inspect_database(pid))
    assert "postgresql" not in shown and "55432" not in shown


def test_postgres_schema_is_a_first_class_executed_source(graph: Graph, warehouse: Warehouse, pg_schema: str,
                                                          tmp_path: Path) -> None:
    """Units come from gold SQL on the schema, and routes to it run read-only there (search_path = schema)."""
    ingest_postgres_schemas(graph, warehouse.admin(), [pg_schema], catalog=CATALOG)
    (tmp_path / "dev.json").write_text(json.dumps([
        {"db_id": pg_schema, "query": "SELECT city FROM warehouses ORDER BY city", "question": "List warehouse cities."},
        {"db_id": pg_schema, "query": "SELECT sum(weight_kg) FROM shipments",
         "question": "What do all shipments weigh together?"}]))
    built = run_generate(graph, catalog=CATALOG, root=tmp_path, n=4, seed=3, strict=False)  # one schema: all word-matched
    assert len(built.units.units) == 2 and not built.units.failures
    assert built.report.produced.get("single") and "parallel" in built.report.skipped()
    setup = load_eval(graph, CATALOG)
    try:
        result = evaluate(setup.contracts, setup.indexes, setup.route_executor, OracleRouter(setup.contracts))
        assert result.summary.ea_micro == 1.0
        (pid,) = setup.indexes.view.ids()
        write = RouteBranch(databases=[pid], contributions=[RouteContribution(
            database=pid, request="x", sql="DELETE FROM warehouses")])
        assert setup.route_executor.run_branch(write)[pid][0].result is None
        other = RouteBranch(databases=[pid], contributions=[RouteContribution(
            database=pid, request="x", sql="SELECT count(*) FROM shipments")])
        assert setup.route_executor.run_branch(other)[pid][0].result.rows == [(2,)]  # type: ignore[union-attr]
    finally:
        setup.executor.close()


def test_a_domain_schema_source_links_to_the_domains_tables(graph: Graph, warehouse: Warehouse,
                                                            tmp_path: Path) -> None:
    """One graph: catalog tables of schema `mini` point to the Table nodes of the domain on `mini`."""
    from dibench.core.pack import load_pack
    from dibench.ingest.pipeline import ingest_pack
    from dibench.routing.catalog_store import domain_links
    from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

    domain, catalog = f"mini_routing_{os.getpid()}", CATALOG + "_domain"
    ensure_mini_loaded(warehouse)
    delete_domain(graph, domain)
    delete_catalog(graph, catalog)
    try:
        ingest_pack(load_pack(copy_pack(tmp_path / "pack", domain)), graph, warehouse)
        report = ingest_postgres_schemas(graph, warehouse.admin(), ["mini"], catalog=catalog)
        links = [r for r in domain_links(graph, catalog) if r["domain"] == domain]
        assert report.domain_links >= len(links) == report.tables > 0
        assert all(r["table_key"] == f"table:{domain}/{r['table']}" for r in links)
    finally:
        delete_catalog(graph, catalog)
        delete_domain(graph, domain)


def _related(graph: Graph, catalog: str) -> dict[frozenset[str], dict[str, object]]:
    """Relations by the pair of database names they join (ids differ across catalogs)."""
    names = {pid: row["name"] for pid, row in private_locations(graph, catalog).items()}
    return {frozenset((names[r["a"]], names[r["b"]])): {k: r[k] for k in ("kinds", "shared_entities", "shared_columns")}
            for r in CatalogView.load(graph, catalog).related}


def test_sources_of_separate_ingests_are_profiled_together(graph: Graph, warehouse: Warehouse, pg_schema: str,
                                                           tmp_path: Path) -> None:
    """A SQLite folder and a Postgres schema ingested one after the other into one catalog are related just
    as when both come in together; re-ingesting either keeps the relation."""
    import sqlite3

    folder = tmp_path / "database" / "depots"
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "depots.sqlite") as conn:
        conn.execute("CREATE TABLE warehouses (warehouse_id integer PRIMARY KEY, city text, capacity integer)")
        conn.execute("INSERT INTO warehouses VALUES (1, 'Lyon', 500), (2, 'Oslo', 300)")
    pair = frozenset({"depots", pg_schema})
    ingest_postgres_schemas(graph, warehouse.admin(), [pg_schema], catalog=CATALOG)
    assert _related(graph, CATALOG) == {}
    ingest_sqlite_folder(graph, tmp_path, catalog=CATALOG)  # the second ingest relates its database to the first's
    separate = _related(graph, CATALOG)
    assert separate[pair]["shared_entities"] == ["warehouse"] and "city" in separate[pair]["shared_columns"]
    ingest_postgres_schemas(graph, warehouse.admin(), [pg_schema], catalog=CATALOG)
    ingest_sqlite_folder(graph, tmp_path, catalog=CATALOG)
    assert _related(graph, CATALOG) == separate  # re-ingesting either side keeps it
    together = CATALOG + "_together"
    delete_catalog(graph, together)
    try:
        ingest_sqlite_folder(graph, tmp_path, catalog=together)
        assert _related(graph, together) == {}
        delete_catalog(graph, together)
        from dibench.routing.catalog import profile_database, sqlite_engine
        from dibench.routing.ingest import write_profiles

        engine = sqlite_engine(folder / "depots.sqlite")
        both = [profile_database(warehouse.admin(), name=pg_schema, location="pg", schema=pg_schema),
                profile_database(engine, name="depots", location=str(folder / "depots.sqlite"))]
        engine.dispose()
        write_profiles(graph, together, both, kind="mixed", root="test", skipped=[])
        assert _related(graph, together) == separate  # one ingest or two: the same relation
    finally:
        delete_catalog(graph, together)


def test_routing_tasks_reach_rules_through_edges_whatever_the_ingest_order(graph: Graph, warehouse: Warehouse,
                                                                          tmp_path: Path) -> None:
    """Catalog first, domain second: the domain's ingest makes the links. Units point to the catalog
    tables their gold SQL reads, so "routing tasks that read a table a rule modifies" is a path of
    edges, and it agrees with the join on the units' table names."""
    from dibench.core.pack import load_pack
    from dibench.ingest.pipeline import ingest_pack
    from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

    domain, catalog = f"mini_edges_{os.getpid()}", CATALOG + "_edges"
    ensure_mini_loaded(warehouse)
    delete_domain(graph, domain)
    delete_catalog(graph, catalog)
    release = tmp_path / "release"
    release.mkdir()
    questions = [("SELECT count(*) FROM customers WHERE region = 'north'", "How many customers are in the north?"),
                 ("SELECT count(*) FROM orders WHERE channel = 'web'", "How many orders came through the web?"),
                 ("SELECT max(amount) FROM orders", "What is the largest order amount?"),
                 ("SELECT count(*) FROM customers", "How many customers are there?")]
    (release / "dev.json").write_text(json.dumps([{"db_id": "mini", "query": q, "question": t} for q, t in questions]))
    try:
        first = ingest_postgres_schemas(graph, warehouse.admin(), ["mini"], catalog=catalog)
        # No link to this domain yet (other domains of the shared graph may read `mini` too).
        assert graph.run_raw_read(
            "MATCH (:CatalogTable)-[:CatalogIsDomainTable]->(tab:Table {domain: $d}) "
            "RETURN count(tab) AS n", {"d": domain})[0]["n"] == 0
        report = ingest_pack(load_pack(copy_pack(tmp_path / "pack", domain)), graph, warehouse)
        assert report.catalog_links >= first.tables == 2
        run_generate(graph, catalog=catalog, root=release, n=4, seed=1, strict=False)
        reads = graph.run_raw_read(
            "MATCH (u:RoutingUnit {catalog: $c, status: 'ok'})-[:RoutingReadsTable]->(ct:CatalogTable) "
            "RETURN u.unit_id AS unit, collect(ct.name) AS tables", {"c": catalog})
        assert len(reads) == len(questions)
        assert all(len(r["tables"]) == 1 for r in reads)
        by_edges = graph.run_raw_read(
            "MATCH (t:RoutingTask {catalog: $c})-[:RoutingUsesUnit]->(:RoutingUnit)-[:RoutingReadsTable]->"
            "(:CatalogTable)-[:CatalogIsDomainTable]->(tab:Table {domain: $d})<-[:READS]-(:Metric)<-[:MODIFIES]-(:Rule) "
            "RETURN count(DISTINCT t) AS n", {"c": catalog, "d": domain})[0]["n"]
        by_names = graph.run_raw_read(
            "MATCH (:Rule {domain: $d})-[:MODIFIES]->(:Metric)-[:READS]->(tab:Table {domain: $d}) "
            "WITH collect(DISTINCT toLower(tab.name)) AS names "
            "MATCH (t:RoutingTask {catalog: $c})-[:RoutingUsesUnit]->(u:RoutingUnit) "
            "WHERE any(x IN u.tables WHERE toLower(x) IN names) RETURN count(DISTINCT t) AS n",
            {"c": catalog, "d": domain})[0]["n"]
        assert by_edges == by_names > 0
    finally:
        delete_catalog(graph, catalog)
        delete_domain(graph, domain)
