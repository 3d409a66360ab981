"""The one full-catalog routing test: all 163 Spider databases give at least 800 contracts of all five behaviours."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from routing.catalog_store import delete_catalog
from routing.generate import DEFAULT_N, targets
from routing.ingest import ingest_sqlite_folder
from routing.intents import hides_needed_value
from routing.pipeline import run_generate
from service.config import get_settings
from service.graph import Graph

CATALOG = "routing_test_full"


@pytest.fixture()
def full_catalog(graph: Graph) -> Iterator[str]:
    delete_catalog(graph, CATALOG)
    yield CATALOG
    delete_catalog(graph, CATALOG)


def test_full_catalog_meets_the_published_mix(graph: Graph, full_catalog: str) -> None:
    root = get_settings().data_dir / "spider"
    ingest = ingest_sqlite_folder(graph, root, catalog=full_catalog)
    assert ingest.databases == 163
    assert sorted(s.split(":")[0] for s in ingest.skipped) == ["baseball_1", "soccer_1", "wta_1"]
    s = run_generate(graph, catalog=full_catalog, root=root, seed=42)
    # 868 train queries render only to text hiding a needed value ("the result of a nested lookup"): dropped
    assert len(s.units.units) == 8664
    assert s.units.failure_counts() == {"not-in-catalog": 158, "execution": 2, "schema-reference": 1,
                                        "unwordable": 868}
    assert s.report.produced == targets(DEFAULT_N)
    assert len(s.report.contracts) >= 800
    requests = [" ".join(c.request.lower().split()) for c in s.report.contracts]
    assert len(set(requests)) == len(requests)
    assert not any(hides_needed_value(u.intent) for c in s.report.contracts for u in c.units())
