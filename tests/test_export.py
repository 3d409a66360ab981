"""Export by graph query on a generated copy of the mini pack: determinism, views, manifest,
read-only refusals (checked before running, and by the READ session), presets, the Hugging Face
JSON loader, and one consistent state while an update commits."""
from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.errors import GraphError
from dibench.core.pack import Pack
from dibench.evaluation.scoring import validate_task
from dibench.service.export import (ExportError, ExportQuery, dumps, export, preset_query, read_snapshot, sha256,
                                    task_keys)
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.stores.cypher_guard import CypherWriteRefused, check_read_only
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, edit_front
from tests.test_update import generated_domain, tasks_of

DOMAIN = "mini_exp1"
PROBE = "MATCH (t:Task {domain: $domain}) RETURN t.key AS key"


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("exp") / "pack", DOMAIN, graph, warehouse, target=10)
    yield pk
    delete_domain(graph, DOMAIN)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf"])
def test_two_exports_are_byte_identical(pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path,
                                        fmt: str) -> None:
    q = preset_query("domain", {"domain": DOMAIN})
    export(graph, warehouse, q, fmt, tmp_path / "a", domain=DOMAIN, audience="private")
    export(graph, warehouse, q, fmt, tmp_path / "b", domain=DOMAIN, audience="private")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b and len(a) >= 3
    manifest = json.loads(a["manifest.json"])
    for name, digest in manifest["files"].items():
        assert hashlib.sha256(a[name]).hexdigest() == digest
    assert b"exported_at" not in a["manifest.json"]


def test_views_and_manifest(pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path) -> None:
    m = export(graph, warehouse, preset_query("domain", {"domain": DOMAIN}), "jsonl", tmp_path, domain=DOMAIN,
               audience="private")
    admitted = {k: t for k, t in tasks_of(graph, DOMAIN).items() if t["status"] == "admitted"}
    public = [json.loads(x) for x in (tmp_path / "public.jsonl").read_text().splitlines()]
    private = [json.loads(x) for x in (tmp_path / "private.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in public] == sorted(admitted) == [r["task_id"] for r in private]
    for r in public:
        assert not {"gold_answer", "base_answer", "gold_sql", "base_sql", "params", "rule_ids"} & set(r)
    for r in private:
        t = admitted[r["task_id"]]
        assert r["gold_answer"] == json.loads(t["gold_answer"]) and r["gold_sql"] == t.get("gold_sql")
        assert set(r) >= {"task_id", "domain", "analysis_type", "tier", "question", "answer_format", "gold_answer",
                          "base_answer", "gold_sql", "base_sql", "params", "metric_ids", "rule_ids", "variant"}
        validate_task(r)  # a private record carries its answer contract: scorers (Inspect, score) take it as is
        line = json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert m["tasks"][r["task_id"]]["sha256"] == hashlib.sha256(line.encode()).hexdigest()
    assert m["counts"]["tasks"] == len(admitted)
    orders = warehouse.execute_readonly("SELECT COUNT(*) FROM mini.orders").rows[0][0]
    assert m["data_fingerprint"][DOMAIN]["tables"]["orders"]["rows"] == orders
    assert len(m["data_fingerprint"][DOMAIN]["tables"]["orders"]["md5"]) == 32
    used = {v for t in admitted.values() for v in (t.get("rule_versions") or [])}
    assert {f"{v['rule_id']}@{v['version']}#{v['hash'][:12]}" for v in m["rule_versions"]} == used
    assert [r["key"] for r in m["runs"]] == sorted({t["run_key"] for t in admitted.values()})
    assert m["query"]["preset"] == "domain" and m["query"]["params"] == {"domain": DOMAIN}


WRITES = {
    "create": "CREATE (:ExportProbe {domain: 'mini_exp1'}) RETURN 1 AS key",
    "merge": "MERGE (p:ExportProbe {domain: 'mini_exp1'}) RETURN p.domain AS key",
    "set": "MATCH (t:Task {domain: 'mini_exp1'}) SET t.question = 'x' RETURN t.key AS key",
    "delete": "MATCH (t:Task {domain: 'mini_exp1'}) DELETE t",
    "detach_delete": "MATCH (t:Task {domain: 'mini_exp1'}) DETACH DELETE t",
    "remove": "MATCH (t:Task {domain: 'mini_exp1'}) REMOVE t.question RETURN t.key AS key",
    "load_csv": "LOAD CSV FROM 'file:///x.csv' AS row RETURN row[0] AS key",
    "foreach": "MATCH (t:Task) FOREACH (x IN [1] | SET t.flag = x) RETURN t.key AS key",
    "call_subquery": "MATCH (t:Task) CALL (t) { CREATE (:ExportProbe {domain: 'mini_exp1'}) } RETURN t.key AS key",
    "call_in_transactions": "MATCH (t:Task) CALL (t) { RETURN t.key AS k } IN TRANSACTIONS RETURN k AS key",
    "procedure_db": "CALL db.createLabel('ExportProbe') RETURN 1 AS key",
    "procedure_apoc": "CALL apoc.create.node(['ExportProbe'], {}) YIELD node RETURN node",
    "procedure_dbms": "CALL dbms.killQueries(['x'])",
    "lowercase": "match (t:Task) with t limit 1 create (:ExportProbe) return t.key as key",
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_queries_are_refused_before_they_run(pack: Pack, graph: Graph, name: str) -> None:
    before = tasks_of(graph, DOMAIN)
    with pytest.raises(CypherWriteRefused, match="refused Cypher"):
        task_keys(graph, ExportQuery(WRITES[name]), "private")
    assert tasks_of(graph, DOMAIN) == before
    assert graph.run_raw_read("MATCH (p:ExportProbe) RETURN count(p) AS n", {}) == [{"n": 0}]


@pytest.mark.parametrize("query", [
    "MATCH (t:Task) WHERE t.question CONTAINS 'create' OR t.question CONTAINS \"DELETE\" RETURN t.key AS key",
    "// SET this, then MERGE\nMATCH (t:Task) /* DETACH DELETE */ RETURN t.key AS key",
    "MATCH (t:Task) RETURN t.key AS key, {set: 1, create: 2} AS m, t.`remove` AS r",
    "MATCH (t:Task) CALL (t) { RETURN t.key AS k } RETURN k AS key",
])
def test_read_queries_pass_the_guard(query: str) -> None:
    check_read_only(query)


def test_the_read_session_is_a_second_fence(pack: Pack, graph: Graph) -> None:
    with pytest.raises(GraphError):
        graph.run_raw_read("CREATE (:ExportProbe {domain: $d}) RETURN 1 AS key", {"d": DOMAIN})
    assert graph.run_raw_read("MATCH (p:ExportProbe) RETURN count(p) AS n", {}) == [{"n": 0}]


def test_key_contract_nodes_and_errors(pack: Pack, graph: Graph) -> None:
    by_key = task_keys(graph, ExportQuery(PROBE, {"domain": DOMAIN}), "private")
    assert by_key == sorted(tasks_of(graph, DOMAIN))
    with pytest.raises(ExportError, match="no `key` column"):
        task_keys(graph, ExportQuery("MATCH (t:Task {domain: $domain}) RETURN t.question AS q", {"domain": DOMAIN}),
                  "private")
    with pytest.raises(ExportError, match="takes exactly"):
        preset_query("rule", {})


@pytest.mark.parametrize("preset,param,prop", [
    ("analysis_type", "ranking", "analysis_type"), ("tier", "K+A+R", "tier"), ("status", "rejected", "status"),
    ("metric", "MINI-SAT-001", "metric_id"), ("rule", "MINI-R-STRICT", "rule_ids"),
])
def test_presets_select_what_they_name(pack: Pack, graph: Graph, preset: str, param: str, prop: str) -> None:
    keys = {k for k in task_keys(graph, preset_query(preset, {preset: param})) if k.startswith(f"task:{DOMAIN}/")}
    tasks = tasks_of(graph, DOMAIN)
    want = {k for k, t in tasks.items() if (param in t[prop] if prop == "rule_ids" else t[prop] == param)
            and (preset == "status" or t["status"] == "admitted")}
    assert keys == want and keys


def test_cli_export_and_refusal(pack: Pack, tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["export", "--cypher", PROBE, "--param", f"domain={DOMAIN}", "--format", "csv",
                                   "--domain", DOMAIN, "--audience", "private", "-o", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "out" / "private.csv").read_text().startswith("task_id,domain,analysis_type")
    bad = CliRunner().invoke(main, ["export", "--cypher", "MATCH (n) DETACH DELETE n", "-o", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "refused Cypher: clause DETACH DELETE is not allowed" in bad.output
    assert not (tmp_path / "x").exists()


def test_hf_format_loads_with_datasets(pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    m = export(graph, warehouse, preset_query("domain", {"domain": DOMAIN}), "hf", tmp_path / "hf", domain=DOMAIN,
               audience="private")
    card = (tmp_path / "hf" / "README.md").read_text()
    assert card.startswith("---\nlicense: other\n") and "## Citation" in card and "@software{dibench" in card
    assert sha256(dumps(m["tasks"]).encode()) in card
    rows = 0
    for view in ("public", "private"):
        for variant in ("standard", "oracle", "no_rule"):
            ds = datasets.load_dataset(str(tmp_path / "hf"), view, split=variant, cache_dir=str(tmp_path / "cache"))
            assert set(ds["variant"]) == {variant}, (view, variant)
            rows += ds.num_rows if view == "public" else 0
            features = ds.features
            assert features["question"].dtype == "string"
            if view == "public":
                assert features["metadata"]["version"].dtype == "int64"
                continue
            for listed in ("rule_ids", "metric_ids", "decisive_rules", "policy"):
                assert isinstance(features[listed], (datasets.Sequence, datasets.List)), (listed, features[listed])
            # A missing value is null, never the text "null"; shape-varying answers are JSON text.
            assert "null" not in set(ds["lifted_answer"])
            assert all(json.loads(g) is not None for g in ds["gold_answer"])
    assert rows == m["counts"]["tasks"]


def test_export_during_an_update_sees_one_state(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    """Exports in a thread while an update of MINI-R-STRICT commits: every export's tasks use one
    version of the rule, and that is the version its manifest lists."""
    q = preset_query("rule", {"rule": "MINI-R-STRICT"})
    seen: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def exporter() -> None:
        try:
            while not stop.is_set():
                snap = read_snapshot(graph, q, DOMAIN, "private")
                seen.append({"versions": {v["hash"] for r in snap.rows
                                          for v in r["rule_versions"] if v["rule_id"] == "MINI-R-STRICT"},
                             "labels": {lab for r in snap.rows
                                        for lab in r["task"]["rule_versions"] if lab.startswith("MINI-R-STRICT@")}})
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread below
            errors.append(exc)

    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    pk, doc = load_document(path)
    thread = threading.Thread(target=exporter)
    thread.start()
    try:
        run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, pk.name)
        # The snapshot in flight when the update returned may predate its commit; the one after
        # it cannot. Wait for both, so the last snapshot is known to start after the commit.
        committed_at = len(seen)
        while len(seen) < max(3, committed_at + 2) and thread.is_alive() and not errors:
            threading.Event().wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not errors, errors
    assert len(seen) >= 2
    for s in seen:
        assert len(s["versions"]) == 1, s
        assert {lab.split("#", 1)[1] for lab in s["labels"]} == {h[:12] for h in s["versions"]}, s
    assert seen[-1]["versions"] == {doc.content_hash}


def _cli_export(out: str) -> Any:
    return CliRunner().invoke(main, ["export", "--preset", "domain", "--param", f"domain={DOMAIN}", "-o", out])


@pytest.mark.parametrize("out", ["../x", "a/../../x", "/proc/x", "/proc/self/x", "/dev/x"])
def test_export_refuses_unsafe_folders(pack: Pack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str) -> None:
    monkeypatch.chdir(tmp_path)
    r = _cli_export(out)
    assert r.exit_code == 1 and "Traceback" not in r.output and r.output.count("\n") == 1, r.output
    assert not (tmp_path.parent / "x").exists()


def test_export_does_not_write_through_symlinks(pack: Pack, tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "public.jsonl").symlink_to(target)
    r = _cli_export(str(out))
    assert r.exit_code == 1 and "not a regular file" in r.output and "Traceback" not in r.output
    assert target.read_text() == "keep me" and not (out / "manifest.json").exists()
    (tmp_path / "linked").symlink_to(out)
    r = _cli_export(str(tmp_path / "linked"))
    assert r.exit_code == 1 and "symlink" in r.output


def test_public_cli_export_has_no_private_file(pack: Pack, tmp_path: Path) -> None:
    r = _cli_export(str(tmp_path / "pub"))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "pub").iterdir()) == ["manifest.json", "public.jsonl"]
    text = (tmp_path / "pub" / "manifest.json").read_text() + (tmp_path / "pub" / "public.jsonl").read_text()
    assert "gold_answer" not in text and "gold_sql" not in text


def test_each_task_is_exported_once(pack: Pack, graph: Graph, warehouse: Warehouse, tmp_path: Path) -> None:
    """A task linked to two runs (GENERATED_BY twice) is one row, with its current run."""
    task = sorted(k for k, t in tasks_of(graph, DOMAIN).items() if t["status"] == "admitted")[0]
    graph.write("test_export_extra_run", task=task, run=f"run:{DOMAIN}/old", domain=DOMAIN)
    try:
        m = export(graph, warehouse, preset_query("domain", {"domain": DOMAIN}), "jsonl", tmp_path, domain=DOMAIN,
                   audience="private")
        for view in ("public", "private"):
            ids = [json.loads(x)["task_id"] for x in (tmp_path / f"{view}.jsonl").read_text().splitlines()]
            assert len(ids) == len(set(ids)) == m["counts"]["tasks"]
        assert f"run:{DOMAIN}/old" not in [r["key"] for r in m["runs"]]
    finally:
        graph.write("test_export_extra_run_delete", run=f"run:{DOMAIN}/old")


def test_generate_gives_each_task_of_an_older_graph_one_run(pack: Pack, graph: Graph) -> None:
    """Graphs from before a task had one current run link tasks to several runs; the next generate's
    migration keeps the latest and lists the others in previous_runs."""
    from dibench.generation.pipeline import migrate

    old = f"run:{DOMAIN}/old"
    task = sorted(k for k, t in tasks_of(graph, DOMAIN).items() if t["status"] == "admitted")[0]
    graph.write("test_export_extra_run", task=task, run=old, domain=DOMAIN)
    try:
        assert [r["key"] for r in graph.read("test_run_tasks", run=old)] == [task]
        migrate(graph, DOMAIN, f"run:{DOMAIN}/migration-test")
        assert graph.read("test_run_tasks", run=old) == []
        assert old in tasks_of(graph, DOMAIN)[task]["previous_runs"]
    finally:
        graph.write("test_export_extra_run_delete", run=old)


def test_an_export_refuses_two_tasks_that_ask_the_same_and_differ_in_gold(pack: Pack, graph: Graph,
                                                                         warehouse: Warehouse, tmp_path: Path) -> None:
    """(Last in this module: it rejects two of its tasks.) No agent can answer both right, so the
    export is refused; the admission check of generation rejects both, and the export holds again."""
    from dibench.generation.writeback import AMBIGUOUS, reject_ambiguous

    tasks = {k: t for k, t in tasks_of(graph, DOMAIN).items() if t["status"] == "admitted" and t["variant"] == "standard"}
    a = next(k for k, t in sorted(tasks.items()) if t["analysis_type"] == "point_query")
    b = next(k for k, t in sorted(tasks.items()) if t["analysis_type"] == "threshold_crossing")
    q = preset_query("domain", {"domain": DOMAIN})
    before = export(graph, warehouse, q, "jsonl", tmp_path / "before", domain=DOMAIN, audience="private")
    assert before["invariants"]["one_answer_per_question"] == {
        "admitted_tasks": sum(1 for t in tasks_of(graph, DOMAIN).values() if t["status"] == "admitted"),
        "violations": 0}
    graph.write("test_set_question", key=b, question=f"  {tasks[a]['question'].upper()} ")  # the same, normalised
    with pytest.raises(ExportError, match="share their question with a task of another answer"):
        export(graph, warehouse, q, "jsonl", tmp_path / "refused", domain=DOMAIN)
    assert not (tmp_path / "refused").exists()
    assert reject_ambiguous(graph, DOMAIN) >= 2
    after = tasks_of(graph, DOMAIN)
    for key in (a, b):
        assert after[key]["status"] == "rejected" and after[key]["rejections"][-1].startswith(AMBIGUOUS)
    for key, t in after.items():  # their variants go with them
        if key.rsplit(":", 1)[0] in (a, b) and key not in (a, b):
            assert t["status"] == "rejected", key
    manifest = export(graph, warehouse, q, "jsonl", tmp_path / "after", domain=DOMAIN)
    assert manifest["invariants"]["one_answer_per_question"]["violations"] == 0
    assert reject_ambiguous(graph, DOMAIN) == 0
