"""Crash recovery on real Neo4j and Postgres (copies of the mini pack, each under its own domain):
a killed `dibench generate` takes its workers with it and is resumed, never duplicated; a
regenerated domain holds each task once (one GENERATED_BY, one exported row); a killed
update's lease is released by takeover and by `dibench domain unlock`; `dibench domain remove`
removes one domain (and with --data its schema) and nothing else.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT
from dibench.core.pack import Pack, load_pack
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.export import export, preset_query
from dibench.service.update_write import KILL_ENV
from dibench.stores.graph import Graph
from dibench.stores.lease import DomainLease, unlock
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, edit_front, fresh_domains, on_schema, snapshot

KILLED, REGEN, LEASED, RM_A, RM_B, RM_DATA = ("mini_rec_kill", "mini_rec_regen", "mini_rec_lease", "mini_rec_rma",
                                              "mini_rec_rmb", "mini_rec_data")
DOMAINS = (KILLED, REGEN, LEASED, RM_A, RM_B, RM_DATA)
DATA_SCHEMA = "mini_rec_data"
SEED = 42


@pytest.fixture(scope="module", autouse=True)
def clean(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    yield from fresh_domains(graph, warehouse, DOMAINS)


def ingested(root: Path, name: str, graph: Graph, wh: Warehouse) -> Pack:
    pack = load_pack(copy_pack(root / name, name))
    assert ingest_pack(pack, graph, wh).failures == []
    return pack


def runs_of(graph: Graph, domain: str) -> list[str]:
    return sorted(k for k, n in snapshot(graph, domain)[0].items() if "Run" in n["labels"])


def tasks_of(graph: Graph, domain: str) -> dict[str, dict[str, Any]]:
    return {k: n for k, n in snapshot(graph, domain)[0].items() if "Task" in n["labels"]}


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dibench.cli.main", *args], cwd=REPO_ROOT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_until(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# ------------------------------------------------------------------------------ kill -9 of generate
def test_killed_generate_takes_its_workers_and_is_resumed(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, KILLED, graph, warehouse)
    proc = cli("generate", str(pack.root), "--target", "12", "--workers", "2", "--min-per-type", "0", "--json")
    try:
        def mid_run() -> list[dict[str, Any]] | None:
            runs = runs_of(graph, KILLED)
            plans = graph.read("test_run_plans", run=runs[0]) if runs else []
            states = {p["state"] for p in plans}
            return plans if "done" in states and states & {"pending", "claimed"} else None

        plans = wait_until(mid_run, 240, "the workers to finish a skeleton")
        workers = [c for c in children(proc.pid) if running(c)]
        assert len(workers) >= 2, workers
        os.kill(proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
    finally:
        proc.wait(timeout=30)
    wait_until(lambda: not any(running(w) for w in workers), 10, f"workers {workers} to exit")
    exited_after = time.monotonic() - killed_at
    left = tasks_of(graph, KILLED)
    time.sleep(2)
    assert tasks_of(graph, KILLED) == left, "a task was written after the workers' parent was killed"
    assert exited_after < 10

    [run_key] = runs_of(graph, KILLED)
    summary = generate(pack, graph, target=12, seed=SEED, workers=2, min_per_type=0)
    assert summary.resumed and summary.run_key == run_key
    assert runs_of(graph, KILLED) == [run_key], "the rerun started a second run"
    after = graph.read("test_run_plans", run=run_key)
    assert len(after) == len(plans) and {p["state"] for p in after} == {"done"}
    done_before = {p["skeleton"]: p for p in plans if p["state"] == "done"}
    for p in after:
        if p["skeleton"] in done_before:  # not redone
            assert (p["owner"], p["claims"]) == (done_before[p["skeleton"]]["owner"], 1), p
    tasks = graph.read("test_run_tasks", run=run_key)
    assert len({t["key"] for t in tasks}) == len(tasks) and all(len(t["runs"]) == 1 for t in tasks)
    assert {t["props"]["skeleton_key"] for t in tasks} == {p["skeleton"] for p in after}
    # A finished run is never resumed: the next generate starts a new one.
    again = CliRunner().invoke(main, ["generate", str(pack.root), "--target", "12", "--min-per-type", "0",
                                      "--resume", run_key])
    assert again.exit_code == 1 and "nothing to resume" in again.output, again.output


# ------------------------------------------------------------------------------ one current run per task
def test_regenerated_domain_holds_each_task_once(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, REGEN, graph, warehouse)
    keys = [generate(pack, graph, target=6, seed=SEED, workers=1, min_per_type=0).run_key for _ in range(3)]
    assert len(set(keys)) == 3 and runs_of(graph, REGEN) == sorted(keys)
    _, edges = snapshot(graph, REGEN)
    tasks = tasks_of(graph, REGEN)
    generated_by: dict[str, list[str]] = {k: [] for k in tasks}
    for typ, src, dst in edges:
        if typ == "GENERATED_BY":
            generated_by[src].append(dst)
    assert {k: len(v) for k, v in generated_by.items() if len(v) != 1} == {}
    assert {v[0] for v in generated_by.values()} == {keys[-1]}, "every rewritten task belongs to the last run"
    assert all(t["previous_runs"] == keys[:2] for t in tasks.values()), "the earlier runs are kept as history"
    manifest = export(graph, warehouse, preset_query("domain", {"domain": REGEN}), "jsonl", tmp_path / "out",
                      domain=REGEN)
    rows = [json.loads(line) for line in (tmp_path / "out" / "public.jsonl").read_text().splitlines()]
    ids = [r["task_id"] for r in rows]
    assert len(ids) == len(set(ids)) == manifest["counts"]["tasks"] > 0


# ------------------------------------------------------------------------------ leases
def lease_holder(graph: Graph, domain: str) -> str | None:
    rows = graph.read("ingest_lease_state", key=domain)
    return str(rows[0]["holder"]) if rows else None


def kill_an_update(path: Path) -> None:
    proc = cli("update-rule", str(path), "--json", env={KILL_ENV: "rule_written"})
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, out[-2000:]


def test_a_killed_updates_lease_is_released_by_unlock_and_by_takeover(tmp_path: Path, graph: Graph,
                                                                      warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, LEASED, graph, warehouse)
    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    before = snapshot(graph, LEASED)

    kill_an_update(path)
    assert lease_holder(graph, LEASED), "the killed update left no lease (nothing to test)"
    res = CliRunner().invoke(main, ["domain", "unlock", LEASED])
    assert res.exit_code == 0 and "stale: its process has exited" in res.output, res.output
    assert lease_holder(graph, LEASED) is None
    assert snapshot(graph, LEASED) == before

    kill_an_update(path)
    assert lease_holder(graph, LEASED)
    done = cli("update-rule", str(path), "--json")
    out, _ = done.communicate(timeout=300)
    assert done.returncode == 0 and json.loads(out)["written"] is True, out[-2000:]
    assert lease_holder(graph, LEASED) is None, "the update that took the stale lease over did not release it"

    live = DomainLease(graph, LEASED)
    live.acquire()
    try:
        refused = CliRunner().invoke(main, ["domain", "unlock", LEASED])
        assert refused.exit_code == 1 and "is being written by" in refused.output and "--force" in refused.output
        assert lease_holder(graph, LEASED) == live.token
        forced = CliRunner().invoke(main, ["domain", "unlock", LEASED, "--force"])
        assert forced.exit_code == 0 and "forced" in forced.output, forced.output
        assert lease_holder(graph, LEASED) is None
    finally:
        live.release()
    assert CliRunner().invoke(main, ["domain", "unlock", LEASED]).output.strip().endswith("has no write lease")


# ------------------------------------------------------------------------------ domain remove
def test_domain_remove_deletes_one_domain_only(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, RM_A, graph, warehouse)
    generate(pack, graph, target=4, seed=SEED, workers=1, min_per_type=0)
    other = ingested(tmp_path, RM_B, graph, warehouse)
    generate(other, graph, target=4, seed=SEED, workers=1, min_per_type=0)
    kept = snapshot(graph, RM_B)
    nodes = snapshot(graph, RM_A)[0]
    assert {lb for n in nodes.values() for lb in n["labels"]} >= {"Task", "Run", "Skeleton", "RuleVersion", "Rule"}

    no = CliRunner().invoke(main, ["domain", "remove", RM_A], input="n\n")
    assert no.exit_code == 1 and snapshot(graph, RM_A)[0] == nodes
    shared = CliRunner().invoke(main, ["domain", "remove", RM_A, "--data", "--yes"])
    assert shared.exit_code == 1 and "is also read by" in shared.output and RM_B in shared.output, shared.output
    assert snapshot(graph, RM_A)[0] == nodes, "a refused removal deleted something"

    res = CliRunner().invoke(main, ["domain", "remove", RM_A, "--yes"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"removed domain '{RM_A}': {len(nodes)} graph nodes ("), res.output
    assert snapshot(graph, RM_A) == ({}, {})
    assert snapshot(graph, RM_B) == kept
    assert set(schema_columns(warehouse, "mini")) >= {"orders", "customers"}
    missing = CliRunner().invoke(main, ["domain", "remove", RM_A, "--yes"])
    assert missing.exit_code == 1 and "no domain" in missing.output


def test_domain_remove_data_drops_its_schema(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pack = load_pack(on_schema(copy_pack(tmp_path / RM_DATA, RM_DATA), DATA_SCHEMA))
    load_database(pack, warehouse)
    assert ingest_pack(pack, graph, warehouse).failures == []
    assert schema_columns(warehouse, DATA_SCHEMA)
    res = CliRunner().invoke(main, ["domain", "remove", RM_DATA, "--data", "--yes"])
    assert res.exit_code == 0, res.output
    assert f"schema '{DATA_SCHEMA}' (" in res.output
    assert schema_columns(warehouse, DATA_SCHEMA) == {}
    assert snapshot(graph, RM_DATA) == ({}, {})
    assert set(schema_columns(warehouse, "mini")) >= {"orders", "customers"}
