"""Workers claim skeletons from Neo4j with a lease, process them, and write each skeleton's tasks
and its completion in one transaction, whose edges to shared nodes are created at commit in
a fixed lock order (cypher/tasks_write.cypher), so concurrent write-backs neither queue on nor
deadlock over the Run, Metric and Table nodes they share. A dead worker's expired leases are
taken over; task keys
are deterministic (skeleton, analysis type, variant), so a skeleton processed twice can never
produce duplicate tasks.

Worker processes die with the process that started them (`die_with_parent`): on Linux the
kernel kills them when it exits (PR_SET_PDEATHSIG), and every worker also checks its parent
before each claim, while it waits and before each write, so an orphan never writes. Its claims
name its process (`owner_proc`), so a resumed run takes them over at once (generation/runs.py)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError, GraphError, NotFound
from dibench.core.pack import Pack, load_pack
from dibench.generation.executor import Executor
from dibench.generation.skeletons import Skeleton
from dibench.generation.tasks import build_candidates, vocabulary
from dibench.generation.writeback import link_variants, task_rows
from dibench.stores.graph import Graph, Tx, retries_between, retry_counts
from dibench.stores.lease import process_id
from dibench.stores.llm import configured_model, new_session, session
from dibench.stores.pack_data import schema_columns, warehouse_for
from dibench.stores.warehouse import Warehouse, open_warehouse

LEASE_S = 120.0
# Skeletons per claim. One: a worker claims its next skeleton when it is free, so at the end of
# a run neither worker holds a second long skeleton while the other waits (one claim costs a
# few milliseconds; a skeleton of a metric that no partials answer, seconds).
BATCH = 1
POLL_S = 0.5


def lease_seconds() -> float:
    """The claim lease; `DIBENCH_LEASE_S` shortens it (tests that kill a worker wait for expiry)."""
    raw = os.environ.get("DIBENCH_LEASE_S")
    return float(raw) if raw else LEASE_S


def now_ms() -> int:
    return int(time.time() * 1000)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Pool initializer: the kernel SIGKILLs this worker when its parent exits (Linux), and a
    parent already gone before that was set ends it now. Other systems rely on `orphaned`."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if orphaned(parent_pid):
        os._exit(1)


def orphaned(parent_pid: int | None) -> bool:
    """True when this worker's parent has exited (it was re-parented)."""
    return parent_pid is not None and os.getppid() != parent_pid


def claim(graph: Graph, run_key: str, worker: str, limit: int = BATCH, lease_s: float | None = None,
          metrics: list[str] | None = None) -> list[Skeleton]:
    """Claim skeletons, those of `metrics` (the ones this worker has worked on) first."""
    lease = lease_seconds() if lease_s is None else lease_s
    rows = graph.write_returning("skeletons_claim", run=run_key, worker=worker, limit=limit, now=now_ms(),
                                 metrics=metrics or [],
                                 until=now_ms() + int(lease * 1000), token=uuid.uuid4().hex, proc=process_id())
    return [Skeleton.from_row(r["skeleton"]) for r in rows]


class RulesChanged(GraphError):
    """A rule of the domain changed after the run planned its skeletons: a task computed now would
    be admitted under a superseded version."""

    hint = "run `dibench generate` again: it resumes the run with its skeletons under the current rules"


def rules_unchanged(tx: Tx, run_key: str, sk: Skeleton) -> None:
    """In the transaction that writes `sk`'s tasks: refuse (and so write nothing) if the domain's
    rules are no longer those the run was planned under (`run_rules_state`). A driver holds the
    domain's lease, so this guards workers of a run whose driver is gone (`dibench worker`)."""
    row = tx.run("run_rules_current", run=run_key)[0]
    if row["planned"] is not None and list(row["planned"]) != list(row["now"]):
        raise RulesChanged(f"the rules of domain {sk.domain!r} changed after run {run_key} planned its skeletons; "
                           f"the tasks of {sk.key} were not written")


def give_back(graph: Graph, run_key: str, worker: str, keys: list[str]) -> None:
    """Return the skeletons a failing worker claimed and did not write to pending at once, so a
    resumed run (or another worker) does not wait for their leases. Best effort, on the way out
    of an error that is raised anyway: if the graph is out of reach too, the leases expire."""
    if keys:
        with contextlib.suppress(DibenchError):
            graph.write("skeletons_release", run=run_key, keys=keys, worker=worker)


def unfinished(graph: Graph, run_key: str) -> int:
    """Skeletons of the run not yet done (pending, or claimed by a worker that may still finish or die)."""
    return sum(int(r["count"]) for r in graph.read("skeletons_pending", run=run_key) if r["state"] != "done")


def statement_parallelism(workers: int | None) -> int | None:
    """Parallel workers per generated statement when `workers` generation workers run on this
    machine (None: not known, as for a worker that joins a run): DIBENCH_SQL_PARALLEL_WORKERS, else
    the CPUs each worker has beyond the one its statement runs on: with 2 workers on 2 CPUs,
    PostgreSQL's default of 2 per statement runs 6 processes on 2 CPUs, and the parallel plans'
    start-up and gathering are pure overhead."""
    configured = get_settings().sql_parallel_workers
    if configured is not None or workers is None:
        return configured
    return max(0, (os.cpu_count() or 1) // max(1, workers) - 1)


@dataclass
class Warm:
    """What a pool worker keeps between the rounds of one run (the planned skeletons, then each
    augmentation round): its warehouse and executor, whose cache holds the cubes and partials of
    the metrics it worked on, those metrics, and their data windows."""

    key: tuple[str, str]  # (run, pack path)
    wh: Warehouse
    ex: Executor
    metrics: list[str] = field(default_factory=list)
    windows: dict[str, Any] = field(default_factory=dict)


_warm: Warm | None = None


def warm(run_key: str, pack: Pack, pack_path: str, workers: int | None, keep: bool) -> Warm:
    """This round's warehouse and executor: with `keep` (a pool worker), those of the run's earlier
    rounds in this process, kept for the next; else new ones."""
    global _warm
    if keep and _warm is not None and _warm.key == (run_key, pack_path):
        return _warm
    wh = open_warehouse(warehouse_for(pack).settings)  # the pack's own database, if it names one
    wh.parallel_workers = statement_parallelism(workers)
    state = Warm((run_key, pack_path), wh, Executor(wh, schema=pack.schema))
    if keep:
        if _warm is not None:
            _warm.wh.dispose()
        _warm = state
    return state


def work(run_key: str, pack_path: str, seed: int, worker: str | None = None, *, max_skeletons: int | None = None,
         use_llm: bool = True, on_skeleton: Callable[[], None] | None = None,
         parent: int | None = None, workers: int | None = None, keep: bool = False) -> dict[str, Any]:
    """Process skeletons of `run_key` until none is left to claim (or max_skeletons processed).
    With `parent` (a pool worker), stop without writing as soon as that process is gone;
    `workers`: how many workers of the run this machine runs (statement_parallelism); `keep`:
    keep the executor and its cache for the run's next round in this process (`warm`)."""
    worker = worker or f"{os.uname().nodename}:{os.getpid()}"
    pack = load_pack(pack_path)
    state = warm(run_key, pack, pack_path, workers, keep)
    graph, wh, ex = Graph(), state.wh, state.ex
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(wh, pack.schema).items()})
    llm = configured_model() if use_llm else None
    llm_before = session().snapshot()
    windows, metrics = state.windows, state.metrics  # metrics worked on: their partials are in `ex`'s cache
    sql_before, statements_before = ex.sql_seconds, ex.statements
    done = tasks = 0
    started = time.perf_counter()
    retries_before = retry_counts()
    releasing: list[str] = []  # claimed and not yet written: given back if this worker fails
    try:
        while (max_skeletons is None or done < max_skeletons) and not orphaned(parent):
            batch = claim(graph, run_key, worker, metrics=metrics)
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
                releasing = [s.key for s in batch[i:]]
                cands = build_candidates(sk, pack, ex, vocab, seed=seed, llm=llm, windows=windows,
                                         judge=get_settings().llm_judge)
                if sk.metric not in metrics:
                    metrics.append(sk.metric)
                rows = task_rows(cands, pack, run_key)

                def write(tx: Tx, sk: Skeleton = sk, rows: list[dict[str, Any]] = rows) -> None:
                    rules_unchanged(tx, run_key, sk)
                    tx.run("tasks_write", run=run_key, skeleton=sk.key, worker=worker, now=now_ms(), rows=rows)
                    link_variants(tx, rows, run_key)

                if orphaned(parent):
                    break
                graph.transaction(write)
                releasing = []
                tasks += sum(1 for r in rows if r["props"]["status"] == "admitted")
                done += 1
                if on_skeleton:
                    on_skeleton()
                if max_skeletons is not None and done >= max_skeletons:
                    break
    except BaseException:
        give_back(graph, run_key, worker, releasing)
        raise
    finally:
        graph.close()
        if not keep:
            wh.dispose()
    return {"worker": worker, "skeletons": done, "admitted_rows": tasks, "sql_seconds": ex.sql_seconds - sql_before,
            "statements": ex.statements - statements_before, "wall_seconds": time.perf_counter() - started,
            "write_retries": retries_between(retries_before, retry_counts()), "pid": os.getpid(),
            "llm": session().since(llm_before)}


class RunFinished(DibenchError):
    """The run a worker would join has finished: the worker has nothing to do (not a failure)."""


def join(run_key: str, pack_path: str | None = None, worker: str | None = None, *,
         max_skeletons: int | None = None) -> dict[str, Any]:
    """Work on a run another process drives (`dibench worker`), e.g. from another machine that
    reaches the same Neo4j and PostgreSQL: claims are leases in the graph, so workers anywhere
    take disjoint skeletons. The run's domain and seed come from its Run node; `pack_path` is
    needed when the pack is not a built-in domain of that name."""
    graph = Graph()
    try:
        rows = graph.read("run_state", run=run_key)
    finally:
        graph.close()
    if not rows:
        raise NotFound(f"no run {run_key!r} in the graph", hint="the summary of `dibench generate` prints run keys")
    run = rows[0]
    if run["finished_at"] is not None:
        raise RunFinished(f"run {run_key} finished at {run['finished_at']}: nothing is left to work on")
    pack = load_pack(pack_path or str(run["domain"]))
    if pack.name != run["domain"]:
        raise DibenchError(f"run {run_key} belongs to domain {run['domain']!r}, not to pack {pack.name!r}")
    return work(run_key, str(pack.root), int(run["seed"]), worker, max_skeletons=max_skeletons)


def work_entry(args: tuple[str, str, int, str, int, int, int | None]) -> dict[str, Any]:
    """A pool worker's round: named after its slot and its own process, so that a worker of a
    resumed run never shares a claim owner with a worker of the run's previous driver; with its
    share of the LLM calls the run has left (`llm_calls`, None: no budget) in a fresh session."""
    run_key, pack_path, seed, worker, parent, workers, llm_calls = args
    if llm_calls is None:
        os.environ.pop("DIBENCH_LLM_MAX_CALLS", None)
    else:
        os.environ["DIBENCH_LLM_MAX_CALLS"] = str(llm_calls)
    get_settings.cache_clear()
    new_session()
    return work(run_key, pack_path, seed, f"{worker}@{process_id()}", parent=parent, workers=workers, keep=True)
