"""Index advice (ingest/indexes.py): the time and dimension columns a pack's metrics filter on
that no index leads with, read from PostgreSQL's catalog, in `dibench domain check` and as an
ingest warning; the built-in loaders create the indexes their metrics need.

The mini pack is loaded into its own schema `mini_idx` (dropped afterwards), so creating an
index there changes nothing another test reads.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from sqlalchemy import text

from dibench.cli.main import main
from dibench.core.pack import Pack, load_pack
from dibench.ingest import indexes
from dibench.ingest.database import load_database
from dibench.ingest.indexes import IndexNeed, missing_indexes, needed_indexes
from dibench.ingest.pipeline import ingest_pack
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, ensure_mini_loaded

SCHEMA = "mini_idx"
MINI_METRICS = ("MINI-AOV-001", "MINI-HEALTH-001", "MINI-REV-001", "MINI-SAT-001")


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, warehouse: Warehouse) -> Iterator[Pack]:
    root = copy_pack(tmp_path_factory.mktemp("idx") / SCHEMA, SCHEMA)
    spec = yaml.safe_load((root / "pack.yaml").read_text())
    spec["schema"] = SCHEMA  # the loader builds the schema it is given; advice reads only pack.schema
    (root / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    loaded = load_pack(root)
    load_database(loaded, warehouse)
    yield loaded
    with warehouse.admin().begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))


def by_column(needs: list[IndexNeed]) -> dict[str, IndexNeed]:
    return {f"{n.table}.{n.column}": n for n in needs}


def test_needs_are_the_time_columns_and_the_dimensions_of_the_metrics(pack: Pack) -> None:
    needs = by_column(needed_indexes(pack))
    assert sorted(needs) == ["customers.plan", "customers.region", "orders.channel", "orders.ordered_at"]
    assert needs["orders.ordered_at"].kind == "time"
    assert needs["orders.ordered_at"].metrics == MINI_METRICS
    assert needs["customers.region"].kind == "dimension"
    # a dimension of the table the metrics window on is advised with that time column
    assert needs["orders.channel"].index_columns == ("channel", "ordered_at")
    assert needs["customers.plan"].index_columns == ("plan",)
    assert needs["orders.channel"].create_sql(SCHEMA) == "CREATE INDEX ON mini_idx.orders(channel, ordered_at);"


def test_the_catalog_says_which_columns_lack_an_index(pack: Pack, warehouse: Warehouse) -> None:
    # the mini tables are far below MIN_ROWS: PostgreSQL would scan them anyway, no advice
    assert missing_indexes(pack, warehouse) == []
    advice = by_column(missing_indexes(pack, warehouse, min_rows=0))
    assert sorted(advice) == ["customers.plan", "customers.region", "orders.channel", "orders.ordered_at"]
    with warehouse.admin().begin() as conn:
        conn.execute(text(advice["orders.ordered_at"].create_sql(SCHEMA)))
        # an index led by another column does not serve `region`
        conn.execute(text(f"CREATE INDEX ON {SCHEMA}.customers (plan, region)"))
    assert sorted(by_column(missing_indexes(pack, warehouse, min_rows=0))) == ["customers.region", "orders.channel"]


def test_domain_check_prints_one_create_index_line_per_column(pack: Pack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexes, "MIN_ROWS", 0)
    result = CliRunner().invoke(main, ["domain", "check", str(pack.root)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("no index on ")]
    assert lines and all(line.endswith(";") and "CREATE INDEX ON mini_idx." in line for line in lines), lines
    assert any("orders.channel (dimension column of" in line for line in lines), lines
    report = json.loads(CliRunner().invoke(main, ["domain", "check", str(pack.root), "--json"]).output)
    assert {(i["table"], i["column"]) for i in report["indexes"]} == {
        (line.split()[3].split(".")[0], line.split()[3].split(".")[1]) for line in lines}


def test_domain_check_names_the_small_tables_it_skipped(pack: Pack) -> None:
    """Under MIN_ROWS rows a table gets no advice, and the check says so: never 'has an index'."""
    result = CliRunner().invoke(main, ["domain", "check", str(pack.root)])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("not checked for indexes: ")]
    assert any(line.startswith("not checked for indexes: orders (") and "under 10,000" in line
               and "channel" in line for line in skipped), result.output
    assert "has an index" not in result.output
    report = json.loads(CliRunner().invoke(main, ["domain", "check", str(pack.root), "--json"]).output)
    assert report["indexes"] == []
    assert {t["table"] for t in report["indexes_skipped"]} >= {"orders"}


def test_ingest_warns_about_a_missing_index(tmp_path: Path, warehouse: Warehouse, graph: Graph,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_mini_loaded(warehouse)
    mini = load_pack(copy_pack(tmp_path / "pack", "mini_idx_ingest"))  # reads schema `mini`, indexes untouched
    monkeypatch.setattr(indexes, "MIN_ROWS", 0)
    try:
        report = ingest_pack(mini, graph, warehouse)
        advice = [w for w in report.warnings if w.startswith("no index on ")]
        assert advice == [n.line("mini") for n in missing_indexes(mini, warehouse)]
        assert any("orders.ordered_at (time column of" in w for w in advice), advice
    finally:
        delete_domain(graph, mini.name)


def test_the_demo_loader_indexes_what_its_metrics_filter_on(warehouse: Warehouse) -> None:
    demo = load_pack("demo")
    if "tickets" not in indexes.read_catalog(warehouse, demo.schema).rows:
        load_database(demo, warehouse)
    # every table of fact rows, whatever its size here; the lookup tables stay small
    facts = {"tickets", "ticket_status_history", "surveys", "refunds"}
    assert [n.line(demo.schema) for n in missing_indexes(demo, warehouse, min_rows=0) if n.table in facts] == []
