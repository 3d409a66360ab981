"""The write path of a large ingest plan (concurrent batch transactions), the domain write lease
and the batch failure report, against the real Neo4j and Postgres of the mini pack."""
from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dibench.core.config import get_settings
from dibench.core.errors import GraphError
from dibench.core.keys import row, table_key
from dibench.core.pack import load_pack
from dibench.ingest.pipeline import ingest_pack
from dibench.stores.graph import Graph
from dibench.stores.lease import DomainLease, domain_lease
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded, snapshot

ONE, BULK, FAIL, LEASED = "mini_tb_one", "mini_tb_bulk", "mini_tb_fail", "mini_tb_leased"


@pytest.fixture(scope="module", autouse=True)
def clean_domains(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    ensure_mini_loaded(warehouse)
    for d in (ONE, BULK, FAIL, LEASED):
        delete_domain(graph, d)
    yield
    for d in (ONE, BULK, FAIL, LEASED):
        delete_domain(graph, d)


@pytest.fixture()
def small_batches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every plan takes the large-plan path, in batches of 3 rows, 3 transactions at a time."""
    monkeypatch.setenv("DIBENCH_INGEST_TX_ROWS", "0")
    monkeypatch.setenv("DIBENCH_WRITE_BATCH", "3")
    monkeypatch.setenv("DIBENCH_WRITE_WORKERS", "3")
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def _normalised(graph: Graph, domain: str) -> str:
    """The domain's snapshot with its name replaced; ingest timestamps and the change-detection
    hashes (over properties that include the domain's name) dropped."""
    nodes, edges = snapshot(graph, domain)
    for props in [*nodes.values(), *edges.values()]:
        props.pop("ingested_at", None)
        props.pop("hash", None)
    data = {"nodes": nodes, "edges": {"|".join(k): v for k, v in edges.items()}}
    return json.dumps(data, sort_keys=True, default=str).replace(domain, "DOMAIN")


def test_large_plan_path_writes_the_same_graph_and_is_idempotent(
        tmp_path: Path, graph: Graph, warehouse: Warehouse, small_batches: None) -> None:
    get_settings.cache_clear()
    one = ingest_pack(load_pack(copy_pack(tmp_path / "one", ONE)), graph, warehouse)
    assert one.failures == []
    assert one.transactions > 1  # DIBENCH_INGEST_TX_ROWS=0: even the mini pack goes in batches
    bulk_path = copy_pack(tmp_path / "bulk", BULK)
    first = ingest_pack(load_pack(bulk_path), graph, warehouse)
    assert first.transactions == one.transactions
    assert first.counters["relationships_created"] == one.counters["relationships_created"]
    assert _normalised(graph, BULK) == _normalised(graph, ONE)  # snapshot() also rejects duplicate edges

    again = ingest_pack(load_pack(bulk_path), graph, warehouse)
    assert again.counters == {}
    assert _normalised(graph, BULK) == _normalised(graph, ONE)


def test_small_plan_is_one_transaction_with_the_same_graph(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    delete_domain(graph, ONE)
    report = ingest_pack(load_pack(copy_pack(tmp_path / "one", ONE)), graph, warehouse)
    assert report.transactions == 1 and report.rows > 0
    if snapshot(graph, BULK)[0]:  # the large-plan test ran first
        assert _normalised(graph, ONE) == _normalised(graph, BULK)


def test_failed_batch_names_the_batches_written(graph: Graph) -> None:
    rows: list[dict[str, Any]] = [
        row(table_key(FAIL, f"t{i}"), {"domain": FAIL, "name": f"t{i}"}) for i in range(12)]
    rows[10]["key"] = None  # MERGE on a null key fails: the fourth batch of three
    with pytest.raises(GraphError, match=r"ingest_tables.cypher: \d of 4 batches written before this failure; "
                                         r"the statement is idempotent"):
        graph.write_concurrently("ingest_tables", rows, batch_size=3, workers=2)
    written = {k for k in snapshot(graph, FAIL)[0]}
    assert written <= {r["key"] for r in rows[:9]}  # only whole batches, never a part of the failed one
    assert rows[9]["key"] not in written and rows[11]["key"] not in written


def test_lease_keeps_a_second_writer_out_until_released(graph: Graph) -> None:
    first = DomainLease(graph, LEASED)
    first.acquire()
    try:
        with pytest.raises(GraphError, match=f"domain '{LEASED}' is being written by {first.token} .*run this "
                                             "again when that write has finished"):
            DomainLease(graph, LEASED).acquire(wait_s=0)
        first.renew()
    finally:
        first.release()
    with domain_lease(graph, LEASED, wait_s=0) as second:
        assert second.token != first.token
    assert not graph.run_raw_read("MATCH (l:DomainLease {key: $k}) RETURN l", {"k": LEASED})


def test_lease_of_a_process_that_exited_is_taken_over(graph: Graph) -> None:
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    dead = DomainLease(graph, LEASED)
    dead.token = f"{socket.gethostname()}:{gone.stdout.strip()}:deadbeef"
    dead.acquire()  # as if that process had taken the lease and then been killed
    with domain_lease(graph, LEASED, wait_s=0):
        pass
    assert not graph.run_raw_read("MATCH (l:DomainLease {key: $k}) RETURN l", {"k": LEASED})


def test_ingest_refuses_a_domain_another_writer_holds(tmp_path: Path, graph: Graph, warehouse: Warehouse,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIBENCH_LEASE_WAIT_S", "0")
    get_settings.cache_clear()
    pack = load_pack(copy_pack(tmp_path / "leased", LEASED))
    try:
        with domain_lease(graph, LEASED, wait_s=30):
            with pytest.raises(GraphError, match="is being written by"):
                ingest_pack(pack, graph, warehouse, verify=False)
            assert snapshot(graph, LEASED) == ({}, {})
    finally:
        monkeypatch.delenv("DIBENCH_LEASE_WAIT_S")
        get_settings.cache_clear()
