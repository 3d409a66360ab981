"""docs/graph.md: every example query selects tasks from a generated domain, and every label and
relationship type the page names exists in that graph."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dibench.core.config import REPO_ROOT
from dibench.core.pack import load_pack
from dibench.generation.pipeline import generate
from dibench.ingest.pipeline import ingest_pack
from dibench.service import library
from dibench.service.hints import unknown_names
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

PAGE = (REPO_ROOT / "docs" / "graph.md").read_text()
QUERIES = re.findall(r"```cypher\n(.*?)```", PAGE, re.S)
DOMAIN = "mini_graph_docs"
PARAMS = {"domain": DOMAIN, "metric": "MINI-SAT-001", "rule": "MINI-R-PHONE", "table": "orders"}


@pytest.fixture(scope="module")
def domain(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[str]:
    ensure_mini_loaded(warehouse)
    delete_domain(graph, DOMAIN)
    pack = load_pack(copy_pack(tmp_path_factory.mktemp("docs") / DOMAIN, DOMAIN))
    assert ingest_pack(pack, graph, warehouse).failures == []
    generate(pack, graph, target=12, seed=42, workers=1, min_per_type=0)
    yield DOMAIN
    delete_domain(graph, DOMAIN)


def test_the_page_has_five_example_queries() -> None:
    assert len(QUERIES) == 5


@pytest.mark.parametrize("query", QUERIES, ids=[f"query{i + 1}" for i in range(len(QUERIES))])
def test_example_query_selects_tasks(query: str, domain: str, graph: Graph, tmp_path: Path) -> None:
    assert unknown_names(graph, query) == []
    params = {k: v for k, v in PARAMS.items() if f"${k}" in query}
    manifest = library.export(tmp_path, cypher=query, params=params, domain=domain, audience="private")
    assert manifest["counts"]["tasks"] > 0, query


def test_every_label_and_type_named_exists(domain: str, graph: Graph) -> None:
    named = set(re.findall(r"\| `([A-Z][A-Za-z]+)` \|", PAGE)) | set(re.findall(r"`([A-Z][A-Z_]+)`", PAGE))
    known = {str(r["name"]).strip(":`") for r in graph.read("graph_vocabulary")}
    assert named - known - {"PUBLIC_FIELDS"} == set()
