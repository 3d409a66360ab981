"""The Jaffle Shop domain: its pack is the import of the shared semantic manifest, its loader
builds the dbt project's tables from the shared CSVs, its rule-free answers equal MetricFlow's
spot values, every rule effect changes an answer, and it ingests and generates end to end."""
from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlglot import exp

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.core.pack import load_pack
from dibench.domains.jaffle.load import load
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.dbt.pack import import_manifest
from dibench.ingest.indexes import missing_indexes
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.validate import validate_pack
from dibench.ingest.verify import verify_effect
from dibench.sqlops.dialect import parse, render
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.warehouse import Warehouse

import bench.metricflow_agreement as agreement_tool


PACK = load_pack("jaffle")
MANIFEST = Settings().data_dir / "jaffle" / "target" / "semantic_manifest.json"
TEXT_DIMENSIONS = {"stg_locations.location_name", "stg_products.product_name", "stg_products.product_type",
                   "customers.customer_name", "customers.customer_type"}
EFFECTS = [(doc.id, i, eff) for doc in PACK.rules for i, eff in enumerate(doc.front.effects or [])]


@pytest.fixture(scope="module")
def loaded(warehouse: Warehouse) -> dict[str, Any]:
    return load_database(PACK, warehouse)


def value(wh: Warehouse, metric: str, start: str, end: str) -> Any:
    with wh.admin().connect() as conn:
        return conn.execute(text(PACK.metric_by_id[metric].template),
                            {"start_date": dt.date.fromisoformat(start), "end_date": dt.date.fromisoformat(end)}).scalar()


def test_the_pack_is_the_import_of_the_shared_manifest(tmp_path: Path) -> None:
    report = import_manifest(MANIFEST, tmp_path / "jaffle", name="jaffle", schema="jaffle")
    assert len(report.imported) == 17
    assert (tmp_path / "jaffle" / "metrics.yaml").read_text() == (PACK.root / "metrics.yaml").read_text()
    # Importing again onto (a copy of) the domain's folder changes nothing and keeps its loader.
    copy = shutil.copytree(PACK.root, tmp_path / "domain", ignore=shutil.ignore_patterns("__pycache__"))
    again = import_manifest(MANIFEST, copy, name="jaffle", schema="jaffle")
    assert again.added == again.changed == again.removed == []
    assert (copy / "pack.yaml").read_text() == (PACK.root / "pack.yaml").read_text()


def test_the_loader_reads_the_shared_csvs(loaded: dict[str, Any]) -> None:
    assert loaded["tables"] == {"raw_customers": 927, "raw_orders": 72235, "raw_items": 107414, "raw_products": 10,
                                "raw_stores": 6, "raw_supplies": 65}
    assert not (PACK.root / "jaffle-data").exists()


def test_a_missing_folder_is_one_clear_error(warehouse: Warehouse) -> None:
    with pytest.raises(DibenchError, match="/no/such/jaffle lacks raw_customers.csv"):
        load(warehouse.admin(), "jaffle_loadtest", path="/no/such/jaffle")


def test_validate_passes_and_the_loader_indexes_what_metrics_filter_on(loaded: dict[str, Any],
                                                                        warehouse: Warehouse) -> None:
    pack, problems = validate_pack(PACK.root, warehouse)
    assert problems == [] and pack is not None and len(pack.rules) == 4
    assert [n.line(PACK.schema) for n in missing_indexes(PACK, warehouse)] == []


@pytest.mark.parametrize(("metric", "start", "end", "expected"), [
    ("mf.revenue", "2018-07-01", "2018-10-01", Decimal(17096)),
    ("mf.revenue", "2018-10-01", "2019-01-01", Decimal(91560)),
    ("mf.revenue", "2019-01-01", "2019-04-01", Decimal(160340)),
    ("mf.orders", "2018-09-01", "2018-10-01", 1666),
])
def test_rule_free_answers_equal_metricflow(loaded: dict[str, Any], warehouse: Warehouse, metric: str, start: str,
                                            end: str, expected: Any) -> None:
    assert value(warehouse, metric, start, end) == expected


def test_food_revenue_share_equals_metricflow(loaded: dict[str, Any], warehouse: Warehouse) -> None:
    m = PACK.metric_by_id["mf.food_revenue_pct"]
    assert m.derived is not None
    share = value(warehouse, m.derived.inputs["numerator"], "2018-09-01", "2018-10-01") / \
        value(warehouse, m.derived.inputs["denominator"], "2018-09-01", "2018-10-01")
    assert round(float(share), 6) == 0.374825


@pytest.mark.parametrize(("rule_id", "index", "eff"), EFFECTS, ids=[f"{r}-{i}" for r, i, _ in EFFECTS])
def test_every_rule_effect_changes_an_answer(loaded: dict[str, Any], warehouse: Warehouse, rule_id: str, index: int,
                                             eff: Any) -> None:
    check = verify_effect(warehouse, PACK.metric_by_id[eff.metric], rule_id, eff)
    assert check.verified, check


def test_ingest_and_generate_end_to_end(loaded: dict[str, Any], graph: Graph, warehouse: Warehouse) -> None:
    delete_domain(graph, PACK.name)
    try:
        report = ingest_pack(PACK, graph, warehouse)
        assert report.failures == []
        summary = generate(PACK, graph, target=12, seed=42, workers=1, min_per_type=0)
        assert summary.admitted > 0 and summary.by_tier.get("K+A+R", 0) > 0, summary
        # The no-rule answer of a task is the catalog's definition, MetricFlow's: the imported
        # template alone, on the task's window and slice.
        checked = 0
        for rec in load_tasks(graph, PACK.name):
            metric = PACK.metric_by_id[rec.metric_ids[0]]
            if rec.variant != "no_rule" or rec.analysis_type not in agreement_tool.VALUE_TYPES or \
                    len(rec.metric_ids) != 1 or metric.derived is not None:
                continue
            for group, value in agreement_tool.task_values(rec):
                if group is not None and rec.dimension not in TEXT_DIMENSIONS:
                    continue
                tree = parse(metric.template)
                assert isinstance(tree, exp.Select)
                params = {"start_date": rec.facts["start"], "end_date": rec.facts["end"]}
                if group is not None:
                    table, column = rec.dimension.split(".")
                    tree = tree.where(exp.EQ(this=exp.column(column, table=table),
                                             expression=exp.Placeholder(this="slice")))
                    params["slice"] = group
                with warehouse.admin().connect() as conn:
                    direct = conn.execute(text(render(tree)), params).scalar()
                assert value == pytest.approx(float(direct or 0), abs=0.01), rec.task_id
                checked += 1
        assert checked > 0
    finally:
        delete_domain(graph, PACK.name)
