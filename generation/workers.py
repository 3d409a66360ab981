"""Workers claim skeletons from Neo4j with a lease, process them, and write each skeleton's tasks
and its completion in one transaction. A dead worker's expired leases are taken over; task keys
are deterministic (skeleton, analysis type, variant), so a skeleton processed twice can never
produce duplicate tasks."""
from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from generation.grounding import Executor
from generation.skeletons import Skeleton
from generation.tasks import build_candidates, vocabulary
from generation.writeback import task_rows
from ingest.database import schema_columns
from ingest.pack import load_pack
from service.graph import Graph, Tx
from service.config import get_settings
from service.llm import configured_model, session
from service.warehouse import Warehouse

LEASE_S = 120.0
BATCH = 2
POLL_S = 0.5


def lease_seconds() -> float:
    """The claim lease; `DIBENCH_LEASE_S` shortens it (tests that kill a worker wait for expiry)."""
    raw = os.environ.get("DIBENCH_LEASE_S")
    return float(raw) if raw else LEASE_S


def now_ms() -> int:
    return int(time.time() * 1000)


def claim(graph: Graph, run_key: str, worker: str, limit: int = BATCH, lease_s: float | None = None) -> list[Skeleton]:
    lease = lease_seconds() if lease_s is None else lease_s
    rows = graph.write_returning("skeletons_claim", run=run_key, worker=worker, limit=limit, now=now_ms(),
                                 until=now_ms() + int(lease * 1000), token=uuid.uuid4().hex)
    return [Skeleton.from_row(r["skeleton"]) for r in rows]


def unfinished(graph: Graph, run_key: str) -> int:
    """Skeletons of the run not yet done (pending, or claimed by a worker that may still finish or die)."""
    return sum(int(r["count"]) for r in graph.read("skeletons_pending", run=run_key) if r["state"] != "done")


def work(run_key: str, pack_path: str, seed: int, worker: str | None = None, *, max_skeletons: int | None = None,
         use_llm: bool = True, on_skeleton: Callable[[], None] | None = None) -> dict[str, Any]:
    """Process skeletons of `run_key` until none is left to claim (or max_skeletons processed)."""
    worker = worker or f"{os.uname().nodename}:{os.getpid()}"
    graph, wh = Graph(), Warehouse()
    pack = load_pack(pack_path)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(wh, pack.schema).items()})
    llm = configured_model() if use_llm else None
    llm_before = session().snapshot()
    ex = Executor(wh)
    windows: dict[str, Any] = {}
    done = tasks = 0
    started = time.perf_counter()
    try:
        while max_skeletons is None or done < max_skeletons:
            batch = claim(graph, run_key, worker)
            if not batch:
                # Nothing claimable now. Skeletons still claimed by others are either finished
                # by them or, if their worker died, claimable once the lease expires: wait.
                if unfinished(graph, run_key) == 0:
                    break
                time.sleep(POLL_S)
                continue
            for i, sk in enumerate(batch):
                # Renew the lease of this skeleton and the rest of the batch before each one, so
                # a live worker never loses a claim it is about to work on.
                graph.write("skeletons_renew", run=run_key, keys=[s.key for s in batch[i:]], worker=worker,
                            until=now_ms() + int(lease_seconds() * 1000))
                cands = build_candidates(sk, pack, ex, vocab, seed=seed, llm=llm, windows=windows,
                                         judge=get_settings().llm_judge)
                rows = task_rows(cands, pack, run_key)

                def write(tx: Tx, sk: Skeleton = sk, rows: list[dict[str, Any]] = rows) -> None:
                    tx.run("tasks_write", run=run_key, skeleton=sk.key, worker=worker, now=now_ms(), rows=rows)
                    tx.run("tasks_variant_link", rows=[r for r in rows if r["variant"] != "standard"])

                graph.transaction(write)
                tasks += sum(1 for r in rows if r["props"]["status"] == "admitted")
                done += 1
                if on_skeleton:
                    on_skeleton()
                if max_skeletons is not None and done >= max_skeletons:
                    break
    finally:
        graph.close()
        wh.dispose()
    return {"worker": worker, "skeletons": done, "admitted_rows": tasks, "sql_seconds": ex.sql_seconds,
            "statements": ex.statements, "wall_seconds": time.perf_counter() - started,
            "llm": session().since(llm_before)}


def work_entry(args: tuple[str, str, int, str]) -> dict[str, Any]:
    run_key, pack_path, seed, worker = args
    return work(run_key, pack_path, seed, worker)
