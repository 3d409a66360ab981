"""The driver's retries of transient errors are counted by error code (stores.graph.retry_counts),
so that generation can report its deadlocks: two transactions that lock two nodes in opposite
orders deadlock for real on the real Neo4j, one is retried, and the count says so."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dibench.stores.graph import DEADLOCK, Graph, Tx, retries_between, retry_counts

KEYS = ["lock-a", "lock-b"]


@pytest.fixture
def locks(graph: Graph) -> Iterator[None]:
    graph.write("test_lock_nodes", keys=KEYS)
    yield
    graph.write("test_lock_delete", keys=KEYS)


def test_a_deadlock_the_driver_retries_is_counted(graph: Graph, locks: None) -> None:
    both_hold_one = threading.Barrier(2, timeout=20)
    errors: list[BaseException] = []

    def lock_in_order(first: str, second: str) -> None:
        attempts = 0

        def work(tx: Tx) -> None:
            nonlocal attempts
            attempts += 1
            tx.run("test_lock_node", key=first, holder=first)
            if attempts == 1:  # the retry of the victim runs alone
                both_hold_one.wait()
            tx.run("test_lock_node", key=second, holder=first)

        try:
            graph.transaction(work)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread below
            errors.append(exc)

    before = retry_counts()
    threads = [threading.Thread(target=lock_in_order, args=order) for order in (KEYS, KEYS[::-1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    retried = retries_between(before, retry_counts())
    assert retried.get(DEADLOCK, 0) >= 1, retried
