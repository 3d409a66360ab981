"""User Cypher under its limits, on the real Neo4j: the three runaway queries of the hostile
corpus (a huge `collect`, a `reduce` over a billion numbers, a string doubled forty times) each
end within the limit plus 2 s with one line, directly and over HTTP, while reads on other
connections keep being answered (within READ_S: a string the memory pools do not track runs the
JVM's heap out, and its full collection pauses every thread for a moment). The wall times, and
the slowest concurrent read, go to bench/results/cypher_limits.json.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dibench.core.config import REPO_ROOT, Settings
from dibench.core.pack import load_pack
from dibench.ingest.pipeline import ingest_pack
from dibench.service.api import create_app
from dibench.stores.cypher_guard import USER_QUERY_TIMEOUT_S, CypherRefused, run_user_query, slots_free
from dibench.stores.graph import Graph
from dibench.stores.local import transaction_memory
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

RUNAWAY = {
    "collect": "UNWIND range(1, 150000000) AS x WITH collect(x) AS xs RETURN toString(size(xs)) AS key",
    "reduce": "RETURN toString(reduce(a = 0, x IN range(1, 1000000000) | a + x)) AS key",
    "string_doubling": "RETURN reduce(s = 'x', i IN range(1, 40) | s + s) AS key",
}
LIMIT_S = USER_QUERY_TIMEOUT_S
READ_S = 5.0
RESULTS = REPO_ROOT / "bench" / "results" / "cypher_limits.json"
WRITE = "limits-write"
DOMAIN = "mini_limits"


@pytest.fixture(scope="module")
def domain(graph: Graph, warehouse: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A domain of its own for the HTTP exports, which name one: the graph may hold any number."""
    ensure_mini_loaded(warehouse)
    delete_domain(graph, DOMAIN)
    root: Path = tmp_path_factory.mktemp("limits")
    assert ingest_pack(load_pack(copy_pack(root / DOMAIN, DOMAIN)), graph, warehouse).failures == []
    yield DOMAIN
    delete_domain(graph, DOMAIN)


class Reader:
    """Reads on their own connections while a runaway query runs: each must be answered fast."""

    def __init__(self, graph: Graph) -> None:
        self.graph, self.stop, self.times = graph, threading.Event(), []  # type: list[float]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            self.graph.read("export_clock")
            self.times.append(time.perf_counter() - started)
            time.sleep(0.2)

    def __enter__(self) -> "Reader":
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def _record(name: str, path: str, wall: float, line: str, reads: list[float]) -> None:
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data[f"{name} ({path})"] = {"wall_s": round(wall, 2), "limit_s": LIMIT_S, "error": line,
                                "concurrent_reads": len(reads), "slowest_read_s": round(max(reads), 2)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def test_the_generated_configuration_bounds_every_transaction() -> None:
    assert transaction_memory("2g") == ("256m", "512m")
    assert transaction_memory("1g") == ("128m", "256m")
    compose = (REPO_ROOT / "docker-compose.yml").read_text()
    assert "NEO4J_db_memory_transaction_max" in compose and "NEO4J_dbms_memory_transaction_total_max" in compose


def test_three_concurrent_http_exports_of_the_string_doubling_end_in_time(graph: Graph, domain: str) -> None:
    c = TestClient(create_app(Settings(api_token=WRITE)), base_url="http://127.0.0.1")
    body = {"cypher": RUNAWAY["string_doubling"], "view": "private", "domain": domain}

    def export() -> tuple[float, Any]:
        started = time.perf_counter()
        r = c.post("/export", json=body, headers={"Authorization": f"Bearer {WRITE}"})
        return time.perf_counter() - started, r

    with Reader(graph) as reader, ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: export(), range(3)))
    for i, (wall, r) in enumerate(results):
        _record("string_doubling", f"HTTP export {i + 1} of 3 at once", wall, r.json()["detail"], reader.times)
        assert r.status_code == 400 and r.json()["error"] in ("CypherRefused", "Deadline"), r.text
        assert wall <= LIMIT_S + 2, wall
    details = sorted(r.json()["detail"] for _, r in results)
    assert sum("memory" in d for d in details) >= 1 and sum("still running" in d for d in details) >= 1, details
    assert len(reader.times) >= 3 and max(reader.times) < READ_S, reader.times


# `reduce` last: the server goes on computing it after dibench stops waiting, and its slot stays
# taken until then (the test waits for it, so later tests find the slot free).
@pytest.mark.parametrize("name", ["collect", "string_doubling", "reduce"])
def test_a_runaway_query_ends_within_the_limit_with_one_line(graph: Graph, name: str) -> None:
    with Reader(graph) as reader:
        started = time.perf_counter()
        with pytest.raises(CypherRefused) as caught:
            run_user_query(graph, RUNAWAY[name], {})
        wall = time.perf_counter() - started
    line = str(caught.value)
    _record(name, "run_user_query", wall, line, reader.times)
    assert wall <= LIMIT_S + 2, (name, wall)
    assert "\n" not in line and len(line) < 200 and ("limit" in line or "memory" in line), line
    assert len(reader.times) >= 3 and max(reader.times) < READ_S, (name, reader.times)
    if name == "reduce":
        assert not slots_free(), "the slot of a query the server still runs must stay taken"
        with pytest.raises(CypherRefused, match="still running on the server"):
            run_user_query(graph, "RETURN 'task:x' AS key", {})
        assert slots_free(wait_s=180), "the slot was never released"
    assert run_user_query(graph, "RETURN 'task:x' AS key", {}) == [{"key": "task:x"}]
