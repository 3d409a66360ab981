"""Concurrency and faults leave a consistent state, on real Neo4j and PostgreSQL (mini pack copies):

- `generate` holds its domain's write lease for the whole run: an `update-rule` meanwhile waits
  (DIBENCH_LEASE_WAIT_S), then refuses in one line, and runs once the run is done; a `generate`
  meanwhile an update waits and refuses the same way. No admitted task is left under a
  superseded version.
- A run planned before a rule changed (its driver gone) writes nothing stale, and resumed, it
  re-plans its pending skeletons under the current rules.
- A task and its variants carry the same rule versions after two successive updates; a write
  that would break that is refused before it commits.
- PostgreSQL cut in the middle of `generate` (a TCP forwarder between them is cut): the run ends
  with one line, nothing computed during the outage is stored as a rejection, and `generate`
  again resumes it to exactly the admitted tasks of an uninterrupted run with the same seed.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from dibench.core.config import get_settings
from dibench.core.errors import GraphError
from dibench.core.pack import Pack, load_pack
from dibench.generation.pipeline import create_run, generate, plan_rows
from dibench.generation.selection import select
from dibench.generation.skeletons import enumerate_skeletons
from dibench.generation.workers import RulesChanged, work
from dibench.generation.writeback import link_variants
from dibench.ingest.pipeline import ingest_pack
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.stores.graph import Graph
from dibench.stores.lease import DomainLease
from dibench.stores.pack_data import warehouse_for
from dibench.stores.warehouse import Warehouse
from tests.fixtures.outage import outage_proxy
from tests.fixtures.packs import copy_pack, delete_domain, edit_front, fresh_domains, snapshot
from tests.test_recovery import cli, ingested, runs_of, wait_until

GEN, STALE, VAR, OUT = "mini_con_gen", "mini_con_stale", "mini_con_var", "mini_con_out"
DOMAINS = (GEN, STALE, VAR, OUT)
SEED, TARGET = 42, 8
OUTAGE_ENV = "DIBENCH_TEST_OUTAGE_URL"


@pytest.fixture(scope="module", autouse=True)
def clean(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    yield from fresh_domains(graph, warehouse, DOMAINS)


RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "consistency.json"


def _record(what: str, data: dict[str, Any]) -> None:
    found = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**found, what: data}, indent=1, sort_keys=True) + "\n")


def tasks(graph: Graph, domain: str) -> dict[str, dict[str, Any]]:
    return {k: n for k, n in snapshot(graph, domain)[0].items() if "Task" in n["labels"]}


def superseded(graph: Graph, domain: str) -> list[str]:
    """Admitted tasks that name a rule version (rule_versions `id@v#hash12`, policy `id@v`) other
    than the rule's current one."""
    nodes = snapshot(graph, domain)[0]
    rules = {n["id"]: n for n in nodes.values() if "Rule" in n["labels"]}
    out = []
    for key, t in nodes.items():
        if "Task" not in t["labels"] or t["status"] != "admitted":
            continue
        for rv in t.get("rule_versions") or []:
            rid, rest = rv.split("@", 1)
            if rules[rid]["content_hash"][:12] != rest.split("#", 1)[1] or rules[rid].get("removed"):
                out.append(f"{key}: {rv}")
        for tag in t.get("policy") or []:
            rid, version = tag.split("@", 1)
            if str(rules[rid]["version"]) != version:
                out.append(f"{key}: {tag}")
    return out


def variants_apart(graph: Graph, domain: str) -> list[str]:
    """Admitted variants whose standard twin is not admitted or carries other rule versions."""
    all_tasks = tasks(graph, domain)
    out = []
    for key, t in all_tasks.items():
        if t["variant"] == "standard" or t["status"] != "admitted":
            continue
        twin = all_tasks[key.rsplit(":", 1)[0]]
        if twin["status"] != "admitted" or twin.get("rule_versions") != t.get("rule_versions"):
            out.append(key)
    return out


def edit_strict(pack: Pack, value: float) -> tuple[Pack, Any]:
    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", value))
    return load_document(path)


# ------------------------------------------------------------------------------ generate vs update-rule
def test_update_rule_during_generate_waits_then_refuses(tmp_path: Path, graph: Graph,
                                                                    warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, GEN, graph, warehouse)
    gen = cli("generate", str(pack.root), "--target", "32", "--min-per-type", "0", "--new", "--json")
    try:
        def mid_run() -> bool:
            assert gen.poll() is None, gen.communicate()[0]
            runs = runs_of(graph, GEN)
            states = {p["state"] for p in graph.read("test_run_plans", run=runs[0])} if runs else set()
            return "done" in states
        wait_until(mid_run, 240, "the run to finish a skeleton")
        edit_strict(pack, 3)
        started = time.monotonic()
        upd = cli("update-rule", str(pack.root / "rules" / "strict.md"), env={"DIBENCH_LEASE_WAIT_S": "2"})
        upd_out, _ = upd.communicate(timeout=300)
        waited = time.monotonic() - started
        still_running = gen.poll() is None
    finally:
        gen_out, _ = gen.communicate(timeout=600)
    assert gen.returncode == 0, gen_out
    assert still_running, "the run ended before update-rule asked for the lease: nothing was tested"
    _record("update-rule during generate", {"exit": upd.returncode, "waited_s": round(waited, 1),
                                            "line": upd_out.strip()[:200]})
    assert upd.returncode == 1, upd_out
    [line] = upd_out.splitlines()
    assert "is being written by" in line and "(generate, seed 42, target 32)" in line, line
    assert superseded(graph, GEN) == []  # the rule did not change under the run
    rerun = cli("update-rule", str(pack.root / "rules" / "strict.md"))
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert superseded(graph, GEN) == [], "an admitted task is under a superseded rule version"
    assert variants_apart(graph, GEN) == []


def test_generate_during_an_update_waits_then_refuses(tmp_path: Path, graph: Graph, warehouse: Warehouse,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pack = ingested(tmp_path, STALE, graph, warehouse)
    held = DomainLease(graph, STALE, "update-rule")
    held.acquire()
    monkeypatch.setenv("DIBENCH_LEASE_WAIT_S", "1")
    get_settings.cache_clear()
    try:
        started = time.monotonic()
        with pytest.raises(GraphError, match=r"is being written by .* \(update-rule\)"):
            generate(pack, graph, target=TARGET, seed=SEED, workers=1, min_per_type=0)
        assert 1 <= time.monotonic() - started < 10
    finally:
        held.release()
        monkeypatch.delenv("DIBENCH_LEASE_WAIT_S")
        get_settings.cache_clear()
    assert runs_of(graph, STALE) == []


def test_a_run_planned_before_a_rule_change_writes_nothing_stale_and_resumes_under_the_new_rules(
        tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    """A run whose driver is gone (here: planned by hand, as `dibench worker` would join it), then
    a rule update: its workers refuse to write, and a resumed run re-plans its skeletons."""
    delete_domain(graph, STALE)
    pack = ingested(tmp_path / "again", STALE, graph, warehouse)
    sel = select(enumerate_skeletons(graph, STALE, seed=SEED), TARGET, seed=SEED)
    run_key = create_run(graph, pack, SEED, TARGET)
    graph.write("skeletons_plan", run=run_key, rows=plan_rows(list(sel.picked) + list(sel.coverage_added), "mmr", 0))
    pk, doc = edit_strict(pack, 3)
    run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, STALE)
    with pytest.raises(RulesChanged, match="changed after run"):
        work(run_key, str(pack.root), SEED, "w-stale", max_skeletons=1)
    assert tasks(graph, STALE) == {}, "a task was written under the superseded rules"
    summary = generate(pk, graph, target=TARGET, seed=SEED, workers=1, min_per_type=0, resume=run_key)
    assert summary.resumed and summary.admitted > 0
    assert superseded(graph, STALE) == []
    strict = [t for t in tasks(graph, STALE).values() if "MINI-R-STRICT" in (t.get("rule_ids") or [])]
    assert strict and all(f"MINI-R-STRICT@1#{doc.content_hash[:12]}" in t["rule_versions"] for t in strict)


# ------------------------------------------------------------------------------ variants
def test_two_successive_updates_keep_every_variant_with_its_twin(tmp_path: Path, graph: Graph,
                                                                 warehouse: Warehouse) -> None:
    pack = ingested(tmp_path, VAR, graph, warehouse)
    generate(pack, graph, target=16, seed=SEED, workers=1, min_per_type=0)
    assert [k for k in tasks(graph, VAR) if k.endswith(":no_rule")], "the fixture must have variants"
    for value in (3, 4.5):
        pk, doc = edit_strict(pack, value)
        run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, VAR)
        assert variants_apart(graph, VAR) == []
        assert superseded(graph, VAR) == []


def test_a_write_without_a_variant_retires_it_and_one_apart_is_refused(graph: Graph) -> None:
    """link_variants on the domain of the test above: a standard task written without its variants
    retires them; a variant written with other rule versions than its twin fails the commit."""
    all_tasks = tasks(graph, VAR)
    std = next(k for k, t in all_tasks.items() if t["variant"] == "standard" and f"{k}:no_rule" in all_tasks
               and all_tasks[f"{k}:no_rule"]["status"] == "admitted")
    variant = {"key": f"{std}:no_rule", "standard": std, "variant": "no_rule"}
    before = tasks(graph, VAR)

    def apart(tx: Any) -> None:
        tx.run("test_set_task_versions", key=variant["key"], versions=["MINI-R-STRICT@0#000000000000"])
        link_variants(tx, [{"key": std, "standard": std, "variant": "standard"}, variant], "test")

    with pytest.raises(GraphError, match="other rule versions than its standard task"):
        graph.transaction(apart)
    assert tasks(graph, VAR) == before, "the refused write changed something"
    graph.transaction(lambda tx: link_variants(tx, [{"key": std, "standard": std, "variant": "standard"}], "test"))
    after = tasks(graph, VAR)
    assert after[f"{std}:no_rule"]["status"] == "retired" and after[std]["status"] == before[std]["status"]
    assert variants_apart(graph, VAR) == []


# ------------------------------------------------------------------------------ an outage
def _admitted(graph: Graph, domain: str, run_key: str) -> dict[str, tuple[Any, ...]]:
    return {k: (t["gold_answer"], t["question"], t["tier"]) for k, t in tasks(graph, domain).items()
            if t["run_key"] == run_key and t["status"] == "admitted"}


def test_an_outage_of_postgresql_during_generate_shrinks_nothing(tmp_path: Path, graph: Graph,
                                                                 warehouse: Warehouse,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_pack(tmp_path / OUT, OUT)
    spec = yaml.safe_load((root / "pack.yaml").read_text())
    (root / "pack.yaml").write_text(yaml.safe_dump({**spec, "database_env": OUTAGE_ENV}, sort_keys=False))
    direct = make_url(warehouse.settings.database_url)
    monkeypatch.setenv(OUTAGE_ENV, direct.render_as_string(hide_password=False))
    pack = load_pack(root)
    assert ingest_pack(pack, graph, warehouse_for(pack)).failures == []
    uninterrupted = generate(pack, graph, target=TARGET, seed=SEED, workers=1, min_per_type=0)
    want = _admitted(graph, OUT, uninterrupted.run_key)
    statuses = {k: t["status"] for k, t in tasks(graph, OUT).items()}
    assert want

    with outage_proxy(direct.host or "127.0.0.1", direct.port or 5432) as proxy:
        env = {OUTAGE_ENV: direct.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)}
        first = cli("generate", str(root), "--target", str(TARGET), "--min-per-type", "0", "--new", "--json", env=env)
        try:
            def started() -> str | None:
                assert first.poll() is None, first.communicate()[0]
                runs = [r for r in runs_of(graph, OUT) if r != uninterrupted.run_key]
                done = runs and "done" in {p["state"] for p in graph.read("test_run_plans", run=runs[0])}
                return runs[0] if done else None
            run_key = wait_until(started, 240, "the run to finish a skeleton")
            proxy.cut()
        finally:
            out, _ = first.communicate(timeout=300)
        assert first.returncode == 1, out
        [line] = [x for x in out.splitlines() if x.startswith("error ")]
        assert "PostgreSQL is not reachable" in line, out
        plans = graph.read("test_run_plans", run=run_key)
        assert {p["state"] for p in plans} & {"pending", "claimed"}, "the outage came too late to test anything"
        done_at_cut = sum(p["state"] == "done" for p in plans)
        # What the interrupted run wrote before the outage is what the uninterrupted run wrote:
        # nothing computed while the store was out of reach was stored (as a rejection or else).
        # (A task admitted when written may still be refused by the run's closing checks, which look at
        # all its tasks at once: lazy-reader knowledge refusals, near-duplicates; `got == want` below.)
        written = {k: t["status"] for k, t in tasks(graph, OUT).items() if t["run_key"] == run_key}
        assert written and set(written) <= set(statuses)
        assert all(v == statuses[k] or (v, statuses[k]) == ("admitted", "rejected") for k, v in written.items()), \
            {k: (v, statuses[k]) for k, v in written.items() if v != statuses[k]}
        proxy.restore()
        again = cli("generate", str(root), "--target", str(TARGET), "--min-per-type", "0", "--json", env=env)
        out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out
    summary = json.loads(out[out.index("{"):])
    assert summary["resumed"] and summary["run_key"] == run_key
    got = _admitted(graph, OUT, run_key)
    result = {"admitted, uninterrupted": len(want), "admitted, resumed after the outage": len(got),
              "skeletons planned": len(plans), "skeletons done at the cut": done_at_cut, "error": line}
    _record("outage", result)
    assert got == want, result
