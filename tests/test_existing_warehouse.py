"""A data team's own warehouse, read in place: a pack with no loader, over a schema that already
exists in a database of its own, whose URL the pack names only by an environment variable.

The schema is created by the test with the admin engine of that database (as the team's
warehouse would already exist); the pack is then checked, ingested, generated and drift-checked
without dibench ever building or replacing it, and the URL appears nowhere in the graph.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, make_url, text

from dibench.cli.main import main
from dibench.core.config import get_settings
from dibench.core.errors import ConfigError, DibenchError
from dibench.core.pack import Pack, load_pack
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.drift import run_drift
from dibench.stores.graph import Graph
from dibench.stores.pack_data import warehouse_for
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, snapshot
from tests.fixtures.shop import create_shop, shop_pack

DOMAIN = SCHEMA = "own_t"
DATABASE = "dibench_own_t"
ENV = "DIBENCH_TEST_OWN_WAREHOUSE_URL"


@pytest.fixture(scope="module")
def own_url(warehouse: Warehouse) -> Iterator[str]:
    """A second database in the local cluster, holding the team's schema."""
    with warehouse.admin().connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
        c.execute(text(f"CREATE DATABASE {DATABASE}"))
    url = make_url(get_settings().database_url).set(database=DATABASE).render_as_string(hide_password=False)
    engine = create_engine(url)
    create_shop(engine, SCHEMA)
    engine.dispose()
    yield url
    with warehouse.admin().connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, own_url: str) -> Iterator[Pack]:
    mp = pytest.MonkeyPatch()
    mp.setenv(ENV, own_url)
    root = shop_pack(tmp_path_factory.mktemp("own") / "pack", DOMAIN, SCHEMA, database_env=ENV)
    short = root / "rules" / "short.md"
    short.write_text("---\nid: MINI-R-SHORT\ntitle: Web orders only, one paragraph\nversion: '1'\n"
                     "effective_date: 2024-01-01\nowner: Finance\nrule_type: exclusionary\neffects:\n"
                     "  - {metric: MINI-AOV-001, op: exclude, predicate: \"o.channel = 'phone'\"}\n---\n"
                     "Phone orders are excluded from the average order value because they are priced by hand.\n")
    yield load_pack(root)
    mp.undo()


def test_short_rule_is_a_warning(pack: Pack) -> None:
    assert any("short.md" in w and "shorter than 50" in w for w in pack.warnings), pack.warnings
    assert "MINI-R-SHORT" in {r.id for r in pack.rules}


def test_no_loader_means_the_schema_is_never_rebuilt(pack: Pack, warehouse: Warehouse) -> None:
    assert pack.spec.loader is None
    with pytest.raises(DibenchError, match="no loader"):
        load_database(pack, warehouse)


def test_domain_check_reports_counts_and_missing_columns(pack: Pack, own_url: str) -> None:
    result = CliRunner().invoke(main, ["domain", "check", str(pack.root), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert own_url not in result.output and report["database"] == f"from ${ENV}"
    by_table = {t["table"]: t for t in report["tables"]}
    assert by_table["orders"]["rows"] == 3800 and by_table["visits"]["rows"] == 3000
    assert {"amount", "rating", "channel", "ordered_at"} <= set(by_table["orders"]["needed"])
    assert report["missing"] == 0 and any("short.md" in w for w in report["warnings"])
    engine = create_engine(own_url)
    with engine.begin() as c:
        c.execute(text(f"ALTER TABLE {SCHEMA}.orders RENAME COLUMN rating TO stars"))
    try:
        result = CliRunner().invoke(main, ["domain", "check", str(pack.root), "--json"])
        assert result.exit_code == 1
        assert {t["table"]: t["missing"] for t in json.loads(result.output)["tables"]}["orders"] == ["rating"]
    finally:
        with engine.begin() as c:
            c.execute(text(f"ALTER TABLE {SCHEMA}.orders RENAME COLUMN stars TO rating"))
        engine.dispose()


def test_unset_variable_is_one_clear_error(pack: Pack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV)
    with pytest.raises(ConfigError, match=ENV):
        warehouse_for(pack)


def test_ingest_generate_drift_in_place(pack: Pack, graph: Graph, own_url: str) -> None:
    wh = warehouse_for(pack)
    assert wh.settings.database_url == own_url
    delete_domain(graph, DOMAIN)
    try:
        assert ingest_pack(pack, graph, wh).failures == []
        summary = generate(pack, graph, target=8, seed=42, workers=1, min_per_type=0)
        assert summary.admitted > 0
        plan = run_drift(graph, wh, DOMAIN)
        assert plan.counts()["skipped"] == len(plan.tasks) > 0, plan.counts()
        nodes, edges = snapshot(graph, DOMAIN)
        stored = json.dumps([nodes, [list(k) + [v] for k, v in edges.items()]], default=str)
        assert own_url not in stored and DATABASE not in stored
    finally:
        delete_domain(graph, DOMAIN)
