"""Leased workers sharing one Neo4j and one Postgres: four worker processes process every skeleton
exactly once; a worker killed with SIGKILL while holding claims loses no task and duplicates none
once another worker completes the run (it takes over the expired claims).

Each run works on its own copy of the mini pack (domains `mini_wk4` and `mini_wkill`, schema `mini`). After the kill, the run must hold exactly the tasks its skeletons yield when
computed again in the test's own process. Only those two domains' nodes are touched.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dibench.core.config import REPO_ROOT
from dibench.core.pack import Pack, load_pack
from dibench.generation.executor import Executor
from dibench.generation.pipeline import HEAVY_COST, RunSummary, create_run, generate, metric_costs, plan_rows
from dibench.generation.selection import select
from dibench.generation.skeletons import Skeleton, enumerate_skeletons
from dibench.generation.tasks import NO_RULE_VARIANT, build_candidates, vocabulary
from dibench.generation.workers import claim, work
from dibench.generation.writeback import task_rows
from dibench.ingest.pipeline import ingest_pack
from dibench.stores.graph import Graph
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded

FOUR, KILL, TWO, AFFINE = "mini_wk4", "mini_wkill", "mini_wk2p", "mini_wkaff"
SEED = 42
TARGET = 12
LEASE_S = "3"
VICTIM = "import sys; from generation.workers import work; work(sys.argv[1], sys.argv[2], int(sys.argv[3]), 'victim')"


@pytest.fixture(scope="module", autouse=True)
def clean(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    ensure_mini_loaded(warehouse)
    for d in (FOUR, KILL, TWO, AFFINE):
        delete_domain(graph, d)
    yield
    for d in (FOUR, KILL, TWO, AFFINE):
        delete_domain(graph, d)


def ingested(tmp: Path, name: str, graph: Graph, wh: Warehouse) -> Pack:
    pack = load_pack(copy_pack(tmp / name, name))
    assert ingest_pack(pack, graph, wh).verified == 5
    return pack


COMPARED = ("skeleton_key", "analysis_type", "variant", "status", "question", "gold_answer", "base_answer",
            "gold_sql", "gold_params", "rejections")


def expected_tasks(pack: Pack, skeletons: list[Skeleton], run_key: str, wh: Warehouse) -> dict[str, tuple[Any, ...]]:
    """What the run must hold: every planned skeleton's task rows, computed here in one process."""
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(wh, pack.schema).items()})
    ex, windows = Executor(wh), dict[str, Any]()
    out = {}
    for sk in skeletons:
        for row in task_rows(build_candidates(sk, pack, ex, vocab, seed=SEED, windows=windows), pack, run_key):
            out[row["key"]] = tuple(row["props"].get(k) for k in COMPARED)
    return out


def written(tasks: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {t["key"]: tuple(t["props"].get(k) for k in COMPARED) for t in tasks}


def assert_no_duplicates(tasks: list[dict[str, Any]]) -> None:
    keys = [t["key"] for t in tasks]
    assert len(keys) == len(set(keys))
    per_slot = [(t["props"]["skeleton_key"], t["props"]["analysis_type"], t["props"]["variant"]) for t in tasks]
    assert len(per_slot) == len(set(per_slot)), "two tasks for one (skeleton, analysis type, variant)"
    for t in tasks:
        assert len(t["skeletons"]) == 1 and len(t["runs"]) == 1, t["key"]


@dataclass
class FourWorkers:
    summary: RunSummary
    plans: list[dict[str, Any]]
    tasks: list[dict[str, Any]]


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> FourWorkers:
    pack = ingested(tmp_path_factory.mktemp("wk4"), FOUR, graph, warehouse)
    # min_per_type=0: no augmentation round, so one pool of four processes does the whole run
    summary = generate(pack, graph, target=TARGET, seed=SEED, workers=4, min_per_type=0)
    return FourWorkers(summary, graph.read("test_run_plans", run=summary.run_key),
                       graph.read("test_run_tasks", run=summary.run_key))


def test_four_workers_process_every_skeleton_exactly_once(four: FourWorkers, graph: Graph) -> None:
    n = four.summary.skeletons
    assert len(four.plans) == n >= TARGET
    assert {p["state"] for p in four.plans} == {"done"}
    assert [p["claims"] for p in four.plans] == [1] * n, "a skeleton was claimed twice"
    # pool workers are named after their slot and their process: w<i>@host:pid
    owners = {p["owner"].split("@")[0] for p in four.plans}
    assert owners <= {"w0", "w1", "w2", "w3"}
    assert len(owners) >= 2, f"four workers, but only {owners} did any work"
    assert four.summary.admitted > 0


def test_four_workers_write_no_duplicate_tasks(four: FourWorkers) -> None:
    assert four.tasks
    assert_no_duplicates(four.tasks)
    # every task comes from a planned skeleton, and every admitted rule task has its variants (a
    # counterfactual one has no no-rule variant: it asks about the policy itself)
    planned = {p["skeleton"] for p in four.plans}
    assert {t["props"]["skeleton_key"] for t in four.tasks} <= planned
    keys = {t["key"] for t in four.tasks}
    for t in four.tasks:
        p = t["props"]
        if p["variant"] == "standard" and p["status"] == "admitted" and p["tier"] == "K+A+R":
            assert f"{t['key']}:oracle" in keys
            assert (f"{t['key']}:no_rule" in keys) == (p["analysis_type"] in NO_RULE_VARIANT), t["key"]


def wait_for(graph: Graph, run_key: str, ready: Any, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        plans = graph.read("test_run_plans", run=run_key)
        if ready(plans):
            return plans
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting on run {run_key}")


def kill_mid_run(graph: Graph, run_key: str, pack: Pack, attempts: int = 3) -> list[dict[str, Any]]:
    """Start a worker process and SIGKILL it once it has finished a skeleton and holds the claim of
    another; returns the plan as the kill left it. The kill can land in the few milliseconds
    between a skeleton's write and the next claim, leaving no orphaned claim to take over: then
    another victim is started (claims are what this test is about)."""
    env = {**os.environ, "DIBENCH_LEASE_S": LEASE_S, "PYTHONPATH": str(REPO_ROOT)}
    for _ in range(attempts):
        victim = subprocess.Popen([sys.executable, "-c", VICTIM, run_key, str(pack.root), str(SEED)],
                                  cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_for(graph, run_key, lambda ps: any(p["owner"] == "victim" and p["state"] == "done" for p in ps)
                     and any(p["owner"] == "victim" and p["state"] == "claimed" for p in ps))
            os.kill(victim.pid, signal.SIGKILL)
        finally:
            victim.wait(timeout=30)
            output = victim.stdout.read().decode() if victim.stdout else ""
        assert victim.returncode == -signal.SIGKILL, output
        plans = graph.read("test_run_plans", run=run_key)
        if any(p["owner"] == "victim" and p["state"] == "claimed" for p in plans):
            return plans
    raise AssertionError(f"no kill in {attempts} attempts left an orphaned claim")


def test_a_killed_worker_loses_and_duplicates_nothing(tmp_path_factory: pytest.TempPathFactory, graph: Graph,
                                                      warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = ingested(tmp_path_factory.mktemp("wkill"), KILL, graph, warehouse)
    # The plan generate() makes, without its workers (and without augmentation).
    sel = select(enumerate_skeletons(graph, KILL, seed=SEED), TARGET, seed=SEED)
    planned = list(sel.picked) + list(sel.coverage_added)
    run_key = create_run(graph, pack, SEED, TARGET)
    graph.write("skeletons_plan", run=run_key, rows=plan_rows(planned, "mmr", 0))

    plans = kill_mid_run(graph, run_key, pack)
    orphaned = {p["skeleton"] for p in plans if p["owner"] == "victim" and p["state"] == "claimed"}
    done_by_victim = {p["skeleton"] for p in plans if p["owner"] == "victim" and p["state"] == "done"}
    assert orphaned and done_by_victim
    assert any(p["state"] == "pending" for p in plans), "the victim was killed too late to prove anything"

    # Another worker completes the run: it waits for the victim's lease to expire and takes over.
    monkeypatch.setenv("DIBENCH_LEASE_S", LEASE_S)
    started = time.monotonic()
    stats = work(run_key, str(pack.root), SEED, "rescuer")
    assert time.monotonic() - started < 120
    assert stats["skeletons"] == len(plans) - len(done_by_victim)

    plans = graph.read("test_run_plans", run=run_key)
    assert {p["state"] for p in plans} == {"done"}
    for p in plans:
        if p["skeleton"] in orphaned:
            assert (p["owner"], p["claims"]) == ("rescuer", 2), p
        elif p["skeleton"] in done_by_victim:
            assert (p["owner"], p["claims"]) == ("victim", 1), p
        else:
            assert (p["owner"], p["claims"]) == ("rescuer", 1), p

    tasks = graph.read("test_run_tasks", run=run_key)
    assert_no_duplicates(tasks)
    # no lost task, none extra: exactly what every planned skeleton yields
    want = expected_tasks(pack, planned, run_key, warehouse)
    got = written(tasks)
    assert sorted(got) == sorted(want)
    assert got == want


WORKER_CLI = "import sys; from cli.main import main; main(sys.argv[1:])"


def test_worker_processes_named_as_on_two_machines_claim_disjoint_skeletons(
        tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> None:
    """`dibench worker RUN --worker-id ...` in two separate processes, as on two hosts that
    reach the same Neo4j and PostgreSQL, on a run another process planned."""
    pack = ingested(tmp_path_factory.mktemp("wk2p"), TWO, graph, warehouse)
    sel = select(enumerate_skeletons(graph, TWO, seed=SEED), TARGET, seed=SEED)
    planned = {s.key for s in list(sel.picked) + list(sel.coverage_added)}
    run_key = create_run(graph, pack, SEED, TARGET)
    graph.write("skeletons_plan", run=run_key, rows=plan_rows(list(sel.picked) + list(sel.coverage_added), "mmr", 0))

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = {wid: subprocess.Popen([sys.executable, "-c", WORKER_CLI, "worker", run_key, "--pack", str(pack.root),
                                    "--worker-id", wid], cwd=REPO_ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for wid in ("host-a:worker-1", "host-b:worker-1")}
    stats = {}
    for wid, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        stats[wid] = json.loads(out)
    assert {w: s["worker"] for w, s in stats.items()} == {w: w for w in procs}

    plans = graph.read("test_run_plans", run=run_key)
    assert {p["skeleton"] for p in plans} == planned
    assert {p["state"] for p in plans} == {"done"}
    assert [p["claims"] for p in plans] == [1] * len(plans), "a skeleton was claimed twice"
    mine = {w: {p["skeleton"] for p in plans if p["owner"] == w} for w in procs}
    assert set().union(*mine.values()) == planned and sum(len(m) for m in mine.values()) == len(planned)
    assert all(mine.values()), f"one worker did all the work: {mine}"
    assert {w: s["skeletons"] for w, s in stats.items()} == {w: len(m) for w, m in mine.items()}

    tasks = graph.read("test_run_tasks", run=run_key)
    assert tasks
    assert_no_duplicates(tasks)
    assert {t["props"]["skeleton_key"] for t in tasks} == planned


def test_workers_claim_the_metrics_they_have_worked_on_and_avoid_each_others(
        tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> None:
    """Metric affinity: a worker's partials cube of a metric stays useful (its own metrics come
    first) and two workers rarely scan one metric (a metric another holds comes last)."""
    pack = ingested(tmp_path_factory.mktemp("wkaff"), AFFINE, graph, warehouse)
    sks = list(select(enumerate_skeletons(graph, AFFINE, seed=SEED), 40, seed=SEED).picked)
    run_key = create_run(graph, pack, SEED, 40)
    graph.write("skeletons_plan", run=run_key, rows=plan_rows(sks, "mmr", 0))
    per_metric = Counter(s.metric for s in sks)
    assert len([m for m, n in per_metric.items() if n >= 3]) >= 2, per_metric

    first = claim(graph, run_key, "a")
    assert len({s.metric for s in first}) == 1, "one batch, one metric"
    mine = first[0].metric
    other = claim(graph, run_key, "b")
    assert mine not in {s.metric for s in other}, "b took the metric a is working on"
    again = claim(graph, run_key, "a", metrics=[mine])
    left = per_metric[mine] - len(first)
    assert [s.metric for s in again] == [mine] * min(left, len(again))


def test_workers_claim_the_metric_with_most_planned_work_first(
        tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> None:
    """The longest work first, so that a run ends on small metrics: a metric's planned work is the
    sum of its skeletons' costs (generation.pipeline.metric_costs), so a few heavy skeletons come
    before many light ones; without costs, the metric with most skeletons."""
    pack = ingested(tmp_path_factory.mktemp("wkcost"), AFFINE, graph, warehouse)
    sks = list(select(enumerate_skeletons(graph, AFFINE, seed=SEED), 40, seed=SEED).picked)
    per_metric = Counter(s.metric for s in sks).most_common()
    most, fewest = per_metric[0], per_metric[-1]
    assert most[1] > fewest[1], per_metric
    for costs, first in ((None, most[0]), ({fewest[0]: most[1] + 1}, fewest[0])):
        run_key = create_run(graph, pack, SEED, 40)
        graph.write("skeletons_plan", run=run_key, rows=plan_rows(sks, "mmr", 0, costs))
        assert {s.metric for s in claim(graph, run_key, "a")} == {first}, (costs, per_metric)


def test_metrics_whose_value_no_partials_answer_weigh_more() -> None:
    """A distinct count in the metric's SQL, a percentile in a rule's formula, or a derived metric
    (its components joined, one statement per answer) weighs three."""
    costs = metric_costs(load_pack("demo"))
    assert costs["MV-PROD-001"] == costs["MV-WAIT-001"] == HEAVY_COST  # COUNT(DISTINCT ...); the median rule
    assert costs["MV-VOL-001"] == costs["MV-CSAT-001"] == 1  # a HAVING COUNT(DISTINCT ...) is decided by cells


def test_a_worker_refuses_a_run_that_does_not_exist() -> None:
    from click.testing import CliRunner

    from dibench.cli.main import main

    result = CliRunner().invoke(main, ["worker", "run:nowhere/1"])
    assert result.exit_code != 0
    assert "no run 'run:nowhere/1' in the graph" in result.output


def test_a_worker_joining_a_finished_run_has_nothing_to_do(tmp_path_factory: pytest.TempPathFactory, graph: Graph,
                                                            warehouse: Warehouse) -> None:
    """`dibench worker RUN` after `generate` finished RUN (the README's order) says so and exits 0."""
    from click.testing import CliRunner

    from dibench.cli.main import main
    from dibench.generation.runs import finish, take_over

    pack = ingested(tmp_path_factory.mktemp("wkfin"), TWO, graph, warehouse)
    run_key = create_run(graph, pack, SEED, TARGET)
    take_over(graph, run_key, None, resumed=False)
    finish(graph, run_key)
    result = CliRunner().invoke(main, ["worker", run_key, "--pack", str(pack.root)])
    assert result.exit_code == 0, result.output
    assert "nothing is left to work on" in result.output


def test_a_pool_worker_keeps_its_executor_for_the_next_round_of_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The augmentation rounds after the planned skeletons read the cubes of the earlier rounds."""
    from dibench.generation import workers
    monkeypatch.setattr(workers, "_warm", None)
    pack = load_pack(str(REPO_ROOT / "tests" / "fixtures" / "minipack"))
    root = str(pack.root)
    first = workers.warm("run:a", pack, root, 2, keep=True)
    try:
        assert workers.warm("run:a", pack, root, 2, keep=True) is first
        alone = workers.warm("run:a", pack, root, 2, keep=False)  # a worker outside a pool
        assert alone is not first and workers._warm is first
        alone.wh.dispose()
        other = workers.warm("run:b", pack, root, 2, keep=True)  # another run's: the first is let go
        assert other is not first and workers._warm is other
    finally:
        if workers._warm is not None:
            workers._warm.wh.dispose()
