"""Berka and Pagila end to end at small scale: a copy of each pack (its own graph domain, the
pack's own schema) is ingested and generated, and every admitted task's stored gold SQL
re-executes, with its stored parameters, to its stored gold answer."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.rederive import derive_answer, needs_base_rows
from evaluation.tasks import TaskRecord, load_tasks
from generation.pipeline import generate
from ingest.database import load_database, schema_columns
from ingest.pack import DOMAINS_DIR, load_pack
from ingest.pipeline import ingest_pack
from service.graph import Graph
from service.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain


@pytest.fixture(scope="module", params=["berka", "pagila"])
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, graph: Graph,
              warehouse: Warehouse) -> Iterator[list[TaskRecord]]:
    name = request.param
    original = load_pack(name)
    if not schema_columns(warehouse, original.schema):
        load_database(original, warehouse)
    domain = f"{name}_gen_t"
    delete_domain(graph, domain)
    root: Path = copy_pack(tmp_path_factory.mktemp(domain) / "pack", domain, src=DOMAINS_DIR / name)
    pack = load_pack(root)
    report = ingest_pack(pack, graph, warehouse)
    assert report.unverified == 0 and not report.failures
    generate(pack, graph, target=6, seed=42, min_per_type=0)
    yield load_tasks(graph, domain)
    delete_domain(graph, domain)


def test_gold_answers_reexecute(generated: list[TaskRecord], warehouse: Warehouse) -> None:
    checked: Counter[str] = Counter()
    for task in generated:
        if task.analysis_type == "knowledge_retrieval" or task.variant != "standard":
            continue
        assert task.gold_sql is not None
        rows = warehouse.execute_readonly(task.gold_sql, task.params).rows
        base = warehouse.execute_readonly(task.base_sql, task.base_params).rows \
            if needs_base_rows(task) and task.base_sql else None
        assert derive_answer(task, rows, base) == task.gold_answer, task.task_id
        checked[task.analysis_type] += 1
    assert sum(checked.values()) >= 10, checked
    assert len(checked) >= 5, checked
