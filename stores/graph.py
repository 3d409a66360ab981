"""Neo4j access: one driver per process, named Cypher statements, read/write transactions.

Every statement lives in `cypher/<name>.cypher` with `$named` parameters. A call must pass
exactly the parameters its file uses; anything else is a GraphError before the query runs.
Writes go through the driver's managed transactions, which retry transient errors; the process
counts those retries by error code (`retry_counts`), so that a job can report its deadlocks.
"""
from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from dibench.core.config import REPO_ROOT, Settings, get_settings
from dibench.core.errors import GraphError, ServiceError
from dibench.stores.bolt import (
    READ_ACCESS, WRITE_ACCESS, Driver, GraphDatabase, ManagedTransaction, Neo4jError, ServiceUnavailable,
)

CYPHER_DIR = REPO_ROOT / "cypher"
_PARAM = re.compile(r"(?<![\w$])\$([A-Za-z_][A-Za-z0-9_]*)")
_STRING_OR_COMMENT = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|//[^\n]*")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
T = TypeVar("T")


class _RetryCounter(logging.Filter):
    """Counts the transactions the driver's retry loop runs again, by Neo4j error code. The
    driver says so in one warning per retry, carrying the error, whether it struck in a
    statement or at commit (where Neo4j takes the locks of dense nodes); it has no other hook.
    The warning itself goes on as before."""

    RETRYING = "Transaction failed and will be retried"

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(self.RETRYING) and isinstance(record.args, tuple):
            error = record.args[-1]
            with self.lock:
                self.counts[str(getattr(error, "code", None) or type(error).__name__)] += 1
        return True


_RETRIES = _RetryCounter()
logging.getLogger("neo4j.session").addFilter(_RETRIES)
DEADLOCK = "Neo.TransientError.Transaction.DeadlockDetected"


def retry_counts() -> dict[str, int]:
    """Transactions of this process that the driver ran again after a transient error, by error
    code (a deadlock is DEADLOCK), since the process started: take the difference of two calls."""
    with _RETRIES.lock:
        return dict(_RETRIES.counts)


def retries_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {code: n - before.get(code, 0) for code, n in sorted(after.items()) if n > before.get(code, 0)}


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    params: frozenset[str]


def statement_params(text: str) -> frozenset[str]:
    return frozenset(_PARAM.findall(_STRING_OR_COMMENT.sub("", text)))


@lru_cache(maxsize=None)
def load(name: str) -> Statement:
    """Load `cypher/<name>.cypher` (name may contain one sub-folder, e.g. `schema/task_key`)."""
    if not re.fullmatch(r"[a-z0-9_]+(/[a-z0-9_]+)?", name):
        raise GraphError(f"invalid statement name {name!r}")
    path = CYPHER_DIR / f"{name}.cypher"
    if not path.is_file():
        raise GraphError(f"no Cypher statement named {name!r} (expected {path})")
    text = path.read_text().strip().rstrip(";")
    return Statement(name, text, statement_params(text))


def all_statement_names() -> list[str]:
    return sorted(str(p.relative_to(CYPHER_DIR).with_suffix("")) for p in CYPHER_DIR.rglob("*.cypher"))


def identifier(name: str) -> str:
    """The one gate for labels, relationship types and property keys that enter query text."""
    if not _IDENT.fullmatch(name):
        raise GraphError(f"invalid graph identifier {name!r}")
    return f"`{name}`"


def _check_params(stmt: Statement, params: dict[str, Any]) -> None:
    given = frozenset(params)
    if given != stmt.params:
        missing = sorted(stmt.params - given)
        extra = sorted(given - stmt.params)
        raise GraphError(f"cypher/{stmt.name}.cypher: parameters do not match (missing {missing}, unexpected {extra})")


def add_counters(total: dict[str, int], counters: dict[str, int]) -> dict[str, int]:
    """Add one statement's write counters into `total` (returned, for chaining)."""
    for k, v in counters.items():
        total[k] = total.get(k, 0) + v
    return total


def batched(rows: Sequence[T] | Iterable[T], size: int, weight: Callable[[T], int] | None = None) -> Iterator[list[T]]:
    """Consecutive batches of `size` rows or, with `weight`, batches closed as soon as their rows
    weigh `size` or more together."""
    batch: list[T] = []
    load = 0
    for row in rows:
        batch.append(row)
        load += weight(row) if weight else 1
        if load >= size:
            yield batch
            batch, load = [], 0
    if batch:
        yield batch


class Graph:
    """Thin wrapper over one neo4j Driver."""

    def __init__(self, settings: Settings | None = None, driver: Driver | None = None) -> None:
        self.settings = settings or get_settings()
        self.database = self.settings.neo4j_database
        self.driver = driver or GraphDatabase.driver(
            self.settings.neo4j_uri,
            auth=(self.settings.neo4j_user, self.settings.neo4j_password),
            max_connection_pool_size=50,
            # Notifications (e.g. "property does not exist yet" on a fresh graph) are not errors.
            notifications_min_severity="OFF",
        )

    def close(self) -> None:
        self.driver.close()

    # -- named statements -------------------------------------------------------------
    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        stmt = load(name)
        _check_params(stmt, params)
        return self._session_call(READ_ACCESS, lambda tx: [r.data() for r in tx.run(stmt.text, params)], stmt)

    def write(self, name: str, /, **params: Any) -> dict[str, int]:
        stmt = load(name)
        _check_params(stmt, params)

        def work(tx: ManagedTransaction) -> dict[str, int]:
            return _counters(tx.run(stmt.text, params).consume().counters)

        return self._session_call(WRITE_ACCESS, work, stmt)

    def write_returning(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """A write statement whose records are needed (e.g. an atomic claim)."""
        stmt = load(name)
        _check_params(stmt, params)
        return self._session_call(WRITE_ACCESS, lambda tx: [r.data() for r in tx.run(stmt.text, params)], stmt)

    def write_rows(self, name: str, rows: Sequence[dict[str, Any]], *, batch_size: int = 2000,
                   extra: dict[str, Any] | None = None) -> dict[str, int]:
        """Run `UNWIND $rows AS row ...` statement `name` over rows in batches of batch_size."""
        total: dict[str, int] = {}
        for batch in batched(rows, batch_size):
            add_counters(total, self.write(name, rows=batch, **(extra or {})))
        return total

    def write_concurrently(self, name: str, rows: Sequence[dict[str, Any]], *, batch_size: int, workers: int,
                           weight: Callable[[dict[str, Any]], int] | None = None) -> dict[str, int]:
        """Run `UNWIND $rows AS row ...` statement `name` over rows in batches of batch_size (rows,
        or weight: see `batched`), each batch its own transaction, up to `workers` transactions
        at a time (one session each).

        Each batch is all or nothing, the whole call is not: the statement must be idempotent, so
        that running it again after a failure completes the write, and safe to run concurrently
        on different rows (see "Concurrent batches" in ingest/pipeline.py). The first failure
        stops the batches not yet started and is raised with how many were written."""
        batches = list(batched(rows, batch_size, weight))
        total: dict[str, int] = {}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"write-{name}") as pool:
            futures = [pool.submit(self.write, name, rows=b) for b in batches]
            try:
                for fut in as_completed(futures):
                    add_counters(total, fut.result())
            except Exception as exc:
                for f in futures:
                    f.cancel()
                wait(futures)
                written = sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)
                raise GraphError(f"cypher/{name}.cypher: {written} of {len(batches)} batches written before "
                                 f"this failure; the statement is idempotent, so running the same write "
                                 f"again completes it: {exc}") from exc
        return total

    def transaction(self, work: Callable[["Tx"], T]) -> T:
        """Run several named statements in one write transaction: all or nothing."""
        return self._session_call(WRITE_ACCESS, lambda tx: work(Tx(tx)), None)

    def read_transaction(self, work: Callable[["Tx"], T]) -> T:
        return self._session_call(READ_ACCESS, lambda tx: work(Tx(tx)), None)

    def run_raw_read(self, text: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run user-supplied Cypher in a READ access-mode session (used by export; checked there)."""
        return self._session_call(READ_ACCESS, lambda tx: [r.data() for r in tx.run(text, params)], None)

    def clock(self) -> str:
        """Where the graph stands: the bookmark of a trivial read, Neo4j's position in its
        transaction log. Equal clocks mean no write committed in between (any write, any domain:
        a cache keyed on it is conservative)."""
        stmt = load("graph_clock")
        bookmarks: list[str] = []

        def work(tx: ManagedTransaction) -> None:
            tx.run(stmt.text).consume()

        self._session_call(READ_ACCESS, work, stmt, bookmarks)
        return ",".join(bookmarks)

    def _session_call(self, mode: str, work: Callable[[ManagedTransaction], T], stmt: Statement | None,
                      bookmarks: list[str] | None = None) -> T:
        """Run `work` in a managed transaction of a fresh session; `bookmarks`, when given,
        receives the session's bookmarks after it."""
        try:
            with self.driver.session(database=self.database, default_access_mode=mode) as session:
                result = session.execute_read(work) if mode == READ_ACCESS else session.execute_write(work)
                if bookmarks is not None:
                    bookmarks.extend(sorted(session.last_bookmarks().raw_values))
                return result
        except ServiceUnavailable as exc:
            raise ServiceError(f"Neo4j at {self.settings.neo4j_uri} is not reachable: {exc}",
                               hint="run `dibench services up`") from exc
        except Neo4jError as exc:
            where = f"cypher/{stmt.name}.cypher: " if stmt else ""
            raise GraphError(f"{where}{exc.code}: {exc.message}") from exc


class Tx:
    """A write transaction that runs named statements (for multi-statement atomic changes)."""

    def __init__(self, tx: ManagedTransaction) -> None:
        self.tx = tx
        self.counters: dict[str, int] = {}

    def run(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        stmt = load(name)
        _check_params(stmt, params)
        result = self.tx.run(stmt.text, params)
        records = [r.data() for r in result]
        add_counters(self.counters, _counters(result.consume().counters))
        return records

    def run_rows(self, name: str, rows: Sequence[dict[str, Any]], /, batch_size: int = 2000,
                 **extra: Any) -> None:
        for batch in batched(rows, batch_size):
            self.run(name, rows=batch, **extra)


_COUNTER_FIELDS = (
    "nodes_created", "nodes_deleted", "relationships_created", "relationships_deleted",
    "properties_set", "labels_added", "labels_removed", "indexes_added", "constraints_added",
)


def _counters(c: Any) -> dict[str, int]:
    return {f: getattr(c, f) for f in _COUNTER_FIELDS if getattr(c, f, 0)}


def delete_domain(graph: Graph, domain: str, batch: int = 10_000) -> int:
    """Delete every node of `domain` (and its Domain node) in batches; returns nodes deleted.
    Batched because one transaction over a large domain would hold its whole footprint in heap:
    relationships first, so that a batch of nodes does not drag in all their edges."""
    while graph.write("delete_domain_edges_batch", domain=domain, limit=batch).get("relationships_deleted", 0):
        pass
    total = 0
    while True:
        deleted = graph.write("delete_domain_batch", domain=domain, limit=batch).get("nodes_deleted", 0)
        total += deleted
        if deleted == 0:
            return total


def apply_schema(graph: Graph) -> dict[str, int]:
    """Create constraints and indexes (cypher/schema/*.cypher); idempotent (IF NOT EXISTS)."""
    total: dict[str, int] = {}
    for name in all_statement_names():
        if name.startswith("schema/"):
            add_counters(total, graph.write(name))
    return total


_GLOBAL: dict[str, Graph] = {}
_LOCK = threading.Lock()


def get_graph() -> Graph:
    """One driver per process; the driver pools connections and is thread-safe."""
    with _LOCK:
        if "graph" not in _GLOBAL:
            _GLOBAL["graph"] = Graph()
        return _GLOBAL["graph"]


def cypher_path(name: str) -> Path:
    return CYPHER_DIR / f"{name}.cypher"
