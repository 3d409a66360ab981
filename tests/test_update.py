"""Incremental update of one rule document on real Neo4j and Postgres (copies of the mini pack).

Expectations are computed independently of the update code: a task's new gold answer is
obtained by re-running the task's own stored gold SQL with the changed rule parameter set by
hand, and the set of tasks that must be re-derived is read from the task nodes themselves.
Crash safety is shown by SIGKILLing `dibench update-rule` at each named step.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.answers import verdict
from dibench.core.config import REPO_ROOT
from dibench.core.pack import Pack, load_pack
from dibench.generation.pipeline import generate
from dibench.ingest.pipeline import ingest_pack
from dibench.service.queries import rules_for, tasks_for_rules
from dibench.service.update import load_document, plan_remove, plan_update
from dibench.service.update_write import KILL_ENV, run_update
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, edit_front, ensure_mini_loaded, snapshot

DOMAIN = "mini_upd1"
CRASH = "mini_upd2"
STRICT_PARAM = "r_mini_r_strict_good_rating"


def generated_domain(root: Path, name: str, graph: Graph, wh: Warehouse, target: int = 16) -> Pack:
    """A fresh copy of the mini pack under domain `name`, ingested, with tasks generated."""
    ensure_mini_loaded(wh)
    delete_domain(graph, name)
    pk = load_pack(copy_pack(root, name))
    assert ingest_pack(pk, graph, wh).failures == []
    generate(pk, graph, target=target, seed=42, workers=1, min_per_type=0)
    return pk


def tasks_of(graph: Graph, domain: str) -> dict[str, dict[str, Any]]:
    nodes, _ = snapshot(graph, domain)
    return {k: v for k, v in nodes.items() if "Task" in v["labels"]}


def edges_of(graph: Graph, domain: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    return snapshot(graph, domain)[1]


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("upd") / "pack", DOMAIN, graph, warehouse)
    yield pk
    delete_domain(graph, DOMAIN)


def _on_metric(tasks: dict[str, dict[str, Any]], metrics: set[str],
               statuses: tuple[str, ...] = ("admitted", "retired")) -> dict[str, dict[str, Any]]:
    """Standard tasks on metrics whose policy an update may change: the ones it must re-derive."""
    return {k: t for k, t in tasks.items() if t["variant"] == "standard" and t["status"] in statuses
            and t["metric_id"] in metrics}


def _expected_by_hand(wh: Warehouse, t: dict[str, Any], value: int) -> dict[str, Any] | None:
    """The new gold answer of a point/threshold/decomposition task: its stored gold SQL re-run with
    the rule's threshold parameter changed by hand, shaped as the answers brief says."""
    params = json.loads(t["gold_params"])
    if STRICT_PARAM not in params or t["analysis_type"] not in ("point_query", "threshold_crossing", "decomposition"):
        return None
    params[STRICT_PARAM] = value
    rows = wh.execute_readonly(t["gold_sql"], params).rows
    if t["analysis_type"] == "decomposition":
        got = {str(r[0]): None if r[1] is None else round(float(r[1]), 2) for r in rows if r[0] is not None}
        # every group the data has without rules is listed; one the policy suppresses with no value
        for g in json.loads(t["facts"]).get("all_groups", []):
            got.setdefault(g, None)
        return {"rows": [{"group": g, "value": v} for g, v in sorted(got.items())]}
    v = round(float(rows[0][0]), 2) if rows and rows[0][0] is not None else None
    if t["analysis_type"] == "point_query":
        return {"value": v}
    old = json.loads(t["gold_answer"])
    return {"value": v, "threshold": old["threshold"], "result": verdict(v, old["threshold"], True)}


def test_threshold_edit_updates_exactly_the_expected_tasks(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    before = tasks_of(graph, DOMAIN)
    uses = _on_metric(before, {"MINI-SAT-001"})
    assert len([t for t in uses.values() if "MINI-R-STRICT" in (t["rule_ids"] or [])]) >= 5, \
        "the fixture must generate tasks for which MINI-R-STRICT is decisive"
    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    pk, doc = load_document(path)
    plan, counters = run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, pk.name)
    log = plan.changelog()
    assert counters, "the update wrote nothing"
    # Exactly the tasks on the metric whose policy holds the rule are re-derived.
    assert {t["key"] for t in log["tasks"]} == set(uses)
    assert sum(log["counts"].values()) == len(uses)
    after = tasks_of(graph, DOMAIN)
    checked = 0
    for ch in log["tasks"]:
        old, new = uses[ch["key"]], after[ch["key"]]
        # By hand: the stored gold SQL (the whole policy) with the rule's parameter changed. Tasks
        # featuring another rule may also retire (that rule stops being decisive): not checked here.
        expected = _expected_by_hand(warehouse, old, 3) if old.get("featured_rule") in (None, "MINI-R-STRICT") \
            and old["status"] == "admitted" else None
        if expected is not None:
            checked += 1
            assert json.loads(new["gold_answer"]) == expected, ch["key"]
            want = "unchanged" if expected == json.loads(old["gold_answer"]) else "updated"
            lifted = json.loads(old["lifted_answer"]) if old.get("lifted_answer") else None
            if old.get("featured_rule") == "MINI-R-STRICT" and expected == lifted:
                want = "retired"
            assert ch["action"] == want, (ch["key"], ch["action"], want)
        if ch["action"] == "updated":
            assert new["version"] == old["version"] + 1
            assert json.loads(new["gold_answer"]) == ch["gold_after"] != ch["gold_before"]
        if ch["action"] in ("updated", "unchanged") and "MINI-R-STRICT" in (new["rule_ids"] or []):
            assert f"MINI-R-STRICT@1#{doc.content_hash[:12]}" in new["rule_versions"]
    assert checked >= 3, "too few tasks checked by hand"
    assert log["counts"]["updated"] >= 1


def test_changelog_content_and_previous_versions(pack: Pack, graph: Graph) -> None:
    rows = graph.read("update_rule_state", rule=f"rule:{DOMAIN}/MINI-R-STRICT")
    assert len(rows) == 1
    nodes, edges = snapshot(graph, DOMAIN)
    updates = [n for n in nodes.values() if "RuleUpdate" in n["labels"]]
    assert len(updates) == 1
    log = json.loads(updates[0]["changelog"])
    eff = {e["metric"]: e for e in log["effects"]}
    assert eff["MINI-SAT-001"]["change"] == "changed"
    assert (eff["MINI-SAT-001"]["before"]["value"], eff["MINI-SAT-001"]["after"]["value"]) == (5, 3)
    assert eff["MINI-SAT-001"]["verified_after"] is True
    assert log["before"]["hash"] != log["after"]["hash"]
    updated = [t for t in log["tasks"] if t["action"] == "updated"]
    for t in updated:
        prev = nodes[f"taskver:{t['key']}@v1"]
        assert "TaskVersion" in prev["labels"]
        assert json.loads(prev["gold_answer"]) == t["gold_before"]
        assert ("PREVIOUS", t["key"], f"taskver:{t['key']}@v1") in edges
        # The variants follow their standard task: the oracle has the new gold, the no-rule keeps the
        # base (a counterfactual task asks about the policy itself and has no no-rule variant).
        oracle, no_rule = nodes.get(t["key"] + ":oracle"), nodes.get(t["key"] + ":no_rule")
        if oracle is None:  # only an admitted K+A+R task gets variants at generation
            assert prev.get("tier") != "K+A+R" or json.loads(prev.get("rejections") or "[]"), (t["key"], prev)
            continue
        assert json.loads(oracle["gold_answer"]) == t["gold_after"]
        if t["analysis_type"] == "counterfactual":
            assert no_rule is None, t["key"]
        else:
            assert no_rule is not None, t["key"]
            assert json.loads(no_rule["gold_answer"]) == json.loads(nodes[t["key"]]["base_answer"])
        versions = [dst for (typ, src, dst) in edges if typ == "USES_RULE_VERSION" and src == t["key"]]
        strict = [v for v in versions if "/MINI-R-STRICT@" in v]
        if "MINI-R-STRICT" in nodes[t["key"]]["rule_ids"]:
            assert strict == [f"rulever:{DOMAIN}/MINI-R-STRICT@{log['after']['hash'][:12]}"]
        else:
            assert strict == []


def test_rerun_is_a_no_op_and_cli_prints_the_changelog(pack: Pack, graph: Graph) -> None:
    before = snapshot(graph, DOMAIN)
    res = CliRunner().invoke(main, ["update-rule", str(pack.root / "rules" / "strict.md"), "--json"])
    assert res.exit_code == 0, res.output
    log = json.loads(res.output[res.output.index("{"):])
    assert log["written"] is False
    assert set(log["counts"]) == {"unchanged", "updated", "retired", "regenerated"}
    assert log["counts"]["unchanged"] == len(log["tasks"])
    assert snapshot(graph, DOMAIN) == before
    table = CliRunner().invoke(main, ["update-rule", str(pack.root / "rules" / "strict.md")])
    assert table.exit_code == 0 and "unchanged" in table.output, table.output


def test_rules_for_tasks_and_impact(pack: Pack, graph: Graph) -> None:
    rows = rules_for(graph, "MINI-SAT-001", DOMAIN)
    tasks = tasks_for_rules(graph, "MINI-SAT-001", DOMAIN, [r["rule_id"] for r in rows])
    all_tasks = tasks_of(graph, DOMAIN)
    direct = {k for k, t in all_tasks.items() if t["status"] == "admitted"
              and "MINI-R-STRICT" in (t["rule_ids"] or [])}
    # rules-for --tasks lists the standard tasks on the queried metric; impact counts every variant.
    on_metric = {k for k in direct if all_tasks[k]["variant"] == "standard"
                 and all_tasks[k]["metric_id"] == "MINI-SAT-001"}
    assert set(tasks["MINI-R-STRICT"]) == on_metric
    res = CliRunner().invoke(main, ["impact", "MINI-R-STRICT", "--domain", DOMAIN, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [m["metric"] for m in data["metrics"]] == ["MINI-SAT-001"]
    assert "MINI-HEALTH-001 -> MINI-SAT-001" in data["composites"]
    # impact: every task on a metric whose policy holds the rule (each variant), decisive or not
    on_sat = {k for k, t in all_tasks.items() if t["status"] == "admitted" and t["metric_id"] == "MINI-SAT-001"}
    assert data["task_counts"]["admitted"] == len(on_sat | direct)
    assert {t["key"] for t in data["tasks"] if t["decisive"]} >= {k for k in direct}
    phone = CliRunner().invoke(main, ["impact", "MINI-R-PHONE", "--domain", DOMAIN, "--json"])
    dims = {d["dimension"]: d["why"] for d in json.loads(phone.output)["dimensions"]}
    assert "applies when = basic" in dims["customers.plan"]
    text = CliRunner().invoke(main, ["impact", "MINI-R-STRICT", "--domain", DOMAIN])
    assert text.exit_code == 0 and "MINI-SAT-001" in text.output


def test_new_metric_tasks_and_regeneration(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    """The outlier rule now also modifies the composite health index: tasks on that metric are
    re-derived with it, and --regenerate adds tasks for the skeletons it newly reaches."""
    path = pack.root / "rules" / "outliers.md"
    edit_front(path, lambda f: f["effects"].append({"metric": "MINI-HEALTH-001", "op": "exclude",
                                                     "predicate": "o.amount > 2000"}))
    before = tasks_of(graph, DOMAIN)
    on_policy = set(_on_metric(before, {"MINI-REV-001", "MINI-AOV-001", "MINI-HEALTH-001"}))
    pk, doc = load_document(path)
    plan, _ = run_update(lambda: plan_update(pk, doc, graph, warehouse, regenerate=True), graph, pk.name)
    log = plan.changelog()
    assert {e["metric"]: e["change"] for e in log["effects"]}["MINI-HEALTH-001"] == "added"
    assert {t["key"] for t in log["tasks"] if t["why"] == "policy"} == on_policy
    regenerated = [t for t in log["tasks"] if t["action"] == "regenerated"]
    assert regenerated and log["counts"]["regenerated"] == len(regenerated)
    after = tasks_of(graph, DOMAIN)
    for t in regenerated:
        assert after[t["key"]]["rule_ids"] == ["MINI-R-OUTLIER"] and after[t["key"]]["metric_id"] == "MINI-HEALTH-001"
    for t in log["tasks"]:
        # (a significance verdict keeps its label when only the p-value moves: its tier stays K+A)
        if t["metric_id"] == "MINI-HEALTH-001" and t["action"] == "updated" \
                and t["analysis_type"] not in ("counterfactual", "significance_testing"):
            node = after[t["key"]]
            assert node["tier"] == "K+A+R" and "MINI-R-OUTLIER" in node["rule_ids"], (t, node)
            base, gold_before = json.loads(node["base_answer"]), t["gold_before"]
            if t["analysis_type"] == "threshold_crossing":  # its threshold sits between gold and base
                base, gold_before = base["value"], gold_before["value"]
            assert base == gold_before


def test_remove_rule_retires_its_tasks_and_keeps_versions(pack: Pack, graph: Graph) -> None:
    before = tasks_of(graph, DOMAIN)
    featured = {k for k, t in before.items() if t["status"] == "admitted" and t.get("featured_rule") == "MINI-R-PHONE"}
    assert featured
    res = CliRunner().invoke(main, ["remove-rule", "MINI-R-PHONE", "--domain", DOMAIN, "--pack", str(pack.root),
                                    "--json"])
    assert res.exit_code == 0, res.output
    log = json.loads(res.output)
    assert log["action"] == "remove" and log["effects"][0]["change"] == "removed", log
    assert log["counts"]["retired"] > 0, log["counts"]
    after = tasks_of(graph, DOMAIN)
    # tasks featuring the rule retire; the other tasks on its metric are re-derived without it
    assert [k for k in sorted(featured) if after[k]["status"] != "retired"] == []
    assert {t["key"] for t in log["tasks"]} == set(_on_metric(before, {"MINI-SAT-001"}))
    for k, t in after.items():
        if t["status"] == "admitted":
            assert "MINI-R-PHONE" not in (t["rule_ids"] or []) and not any(
                p.startswith("MINI-R-PHONE@") for p in t.get("policy") or []), k
    edges = edges_of(graph, DOMAIN)
    rule = f"rule:{DOMAIN}/MINI-R-PHONE"
    assert not [e for e in edges if e[1] == rule and e[0] in ("MODIFIES", "APPLIES_WHEN", "CURRENT_VERSION")]
    assert [e for e in edges if e[1] == rule and e[0] == "HAS_VERSION"]
    assert "MINI-R-PHONE" not in {r["rule_id"] for r in rules_for(graph, "MINI-SAT-001", DOMAIN)}
    again = plan_remove(graph, "MINI-R-PHONE", DOMAIN, pack, None)
    assert not again.changed and again.counts()["retired"] == 0
# ------------------------------------------------------------------------------ crash safety
def _run_cli(path: Path, kill_at: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop(KILL_ENV, None)
    if kill_at:
        env[KILL_ENV] = kill_at
    return subprocess.run([sys.executable, "-m", "dibench.cli.main", "update-rule", str(path), "--json"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_sigkill_at_any_step_leaves_before_or_after(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pk = generated_domain(tmp_path / "pack", CRASH, graph, warehouse, target=10)
    try:
        path = pk.root / "rules" / "strict.md"
        before = snapshot(graph, CRASH)
        edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
        for step in ("planned", "rule_written", "tasks_written"):
            res = _run_cli(path, step)
            assert res.returncode == -9, (step, res.returncode, res.stderr[-2000:])
            assert snapshot(graph, CRASH) == before, f"a kill at {step} left a partial update"
        done = _run_cli(path, None)
        assert done.returncode == 0, done.stderr[-2000:]
        log = json.loads(done.stdout)
        assert log["written"] is True and log["counts"]["updated"] >= 1
        after = snapshot(graph, CRASH)
        assert after != before
        # A second edit killed right after its commit is complete; rerunning finds nothing left to do.
        edit_front(path, lambda f: f["effects"][0].__setitem__("value", 4.5))
        killed = _run_cli(path, "committed")
        assert killed.returncode == -9
        committed = snapshot(graph, CRASH)
        assert committed != after
        rerun = _run_cli(path, None)
        assert rerun.returncode == 0 and json.loads(rerun.stdout)["written"] is False
        assert snapshot(graph, CRASH) == committed
    finally:
        delete_domain(graph, CRASH)


# ------------------------------------------------------------------------------ idempotence, provenance
IDEM = "mini_upd3"
OUTSIDE = "mini_upd4"


def _update_cli(*args: str) -> dict[str, Any]:
    res = CliRunner().invoke(main, ["update-rule", *args, "--json"])
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.output[res.output.index("{"):]))


def test_repeating_an_update_changes_nothing(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    """Unchanged documents write nothing (no TaskVersion, no retire/reinstate), and an edit applied
    once is not applied again."""
    pk = generated_domain(tmp_path / "pack", IDEM, graph, warehouse, target=16)
    try:
        before = snapshot(graph, IDEM)
        for _ in range(2):
            for path in sorted((pk.root / "rules").glob("*.md")):
                log = _update_cli(str(path))
                assert log["written"] is False and log["counts"]["retired"] == log["counts"]["updated"] == 0, log
        assert snapshot(graph, IDEM) == before
        path = pk.root / "rules" / "strict.md"
        edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
        assert _update_cli(str(path))["written"] is True
        edited = snapshot(graph, IDEM)
        versions = sum(1 for n in edited[0].values() if "TaskVersion" in n["labels"])
        for _ in range(2):
            assert _update_cli(str(path))["written"] is False
        assert snapshot(graph, IDEM) == edited
        assert sum(1 for n in snapshot(graph, IDEM)[0].values() if "TaskVersion" in n["labels"]) == versions
    finally:
        delete_domain(graph, IDEM)


def test_rules_from_outside_the_pack_keep_rule_version_edges(tmp_path: Path, graph: Graph,
                                                               warehouse: Warehouse) -> None:
    """`update-rule --pack P FILE` with FILE elsewhere (an edited rule, and a rule the pack folder
    does not have): every rule task, re-derived or generated afterwards from the folder, links
    exactly the rule versions it was computed with."""
    pk = generated_domain(tmp_path / "pack", OUTSIDE, graph, warehouse, target=10)
    try:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        edited, added = elsewhere / "strict.md", elsewhere / "big-orders.md"
        edited.write_text((pk.root / "rules" / "strict.md").read_text())
        edit_front(edited, lambda f: f["effects"][0].__setitem__("value", 3))
        added.write_text((pk.root / "rules" / "outliers.md").read_text())

        def as_new_rule(f: dict[str, Any]) -> None:
            f["id"], f["title"] = "MINI-R-BIG", "Orders above 1,500 are excluded from average order value"
            f["effects"] = [{"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.amount > 1500"}]

        edit_front(added, as_new_rule)
        for doc in (edited, added):
            _update_cli("--pack", str(pk.root), str(doc))
        generate(pk, graph, target=10, seed=42, workers=1, min_per_type=0, new=True)
        nodes, edges = snapshot(graph, OUTSIDE)
        linked: dict[str, set[str]] = {}
        for typ, src, dst in edges:
            if typ == "USES_RULE_VERSION":
                linked.setdefault(src, set()).add(dst)
        rule_tasks = {k: n for k, n in nodes.items() if "Task" in n["labels"] and n["rule_ids"]}
        assert any("MINI-R-BIG" in n["rule_ids"] for n in rule_tasks.values()), "no task uses the added rule"
        assert any(v.startswith("MINI-R-STRICT@1#") and v.endswith(load_document(edited, pk.root)[1].content_hash[:12])
                   for n in rule_tasks.values() for v in n["rule_versions"])
        wrong = {k: (sorted(linked.get(k, set())), n["rule_versions"]) for k, n in rule_tasks.items()
                 if linked.get(k, set()) != {f"rulever:{OUTSIDE}/{v.split('@')[0]}@{v.rsplit('#', 1)[1]}"
                                             for v in n["rule_versions"]}}
        assert wrong == {}
    finally:
        delete_domain(graph, OUTSIDE)
