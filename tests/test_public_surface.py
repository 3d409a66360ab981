"""The public surface cannot reach a private value: an oracle corpus over every private field.

A generated copy of the mini pack gets every answer-bearing node type: task versions and a
RuleUpdate changelog (an update), a DriftCheck whose CHECKED edges hold old and new answers, a
GoldMigration record. Then, for EVERY private property of every node and edge type found near
the domain (private = not declared public in core/visibility.py), a scripted attacker tries to
select tasks by it and to recover its value character by character, through the CLI and the
HTTP API: user Cypher with a public audience (read token, and write token with view public), and,
for Task fields, the filter door (`--filter`, `filter`, `/tasks?field=`). Every attempt must be
refused in one line, so nothing is recovered; the same attacker through the private door (write
token, view private) does recover the value, so the attack itself works. The corpus is written
to bench/results/oracle_corpus.json (node type x field x path -> result).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT, Settings
from dibench.core.pack import Pack
from dibench.core.visibility import EDGES, NODES, public_edge_properties, public_properties
from dibench.generation.pipeline import migrate
from dibench.generation.writeback import GOLD_VERSION
from dibench.service.api import create_app
from dibench.service.drift import run_drift
from dibench.service.export import FILTER_FIELDS
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.stores.graph import CYPHER_DIR, Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, edit_front
from tests.test_update import generated_domain, tasks_of

DOMAIN = "mini_pub31"
WRITE, READ = "pub-write", "pub-read"
RESULTS = REPO_ROOT / "bench" / "results" / "oracle_corpus.json"
# (label or type, property) pairs the attacker cannot pick a usable value for are still attacked
# with a probe value; every property name the graph holds is in the corpus.
PROBE = "0"
Door = Callable[[str], "Answer"]


class Answer:
    """What one attempt got: the task ids it selected, or None when refused (with the line)."""

    def __init__(self, selected: list[str] | None, line: str = "") -> None:
        self.selected, self.line = selected, line

    def key(self) -> tuple[str, ...] | None:
        return tuple(self.selected) if self.selected is not None else None


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("pub") / "pack", DOMAIN, graph, warehouse, target=8)
    path = pk.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    updated, doc = load_document(path)
    run_update(lambda: plan_update(updated, doc, graph, warehouse), graph, DOMAIN)
    tasks = sorted(k for k, t in tasks_of(graph, DOMAIN).items() if t["status"] == "admitted" and t.get("gold_sql"))
    points = [k for k in tasks if tasks_of(graph, DOMAIN)[k]["analysis_type"] == "point_query"]
    for key in points[:2]:  # a stale fingerprint and a wrong answer: drift records old and new answers
        graph.write("test_set_task_fields", key=key, gold_version=GOLD_VERSION, fingerprint='{"schema": "mini", "tables": {}}',
                    gold_answer='{"value": -12345.5}')
    assert run_drift(graph, warehouse, DOMAIN).counts()["drifted"] == len(points[:2]) > 0
    last = tasks[-1]
    graph.write("test_set_task_fields", key=last, gold_version=1, fingerprint=tasks_of(graph, DOMAIN)[last]
                .get("data_fingerprint"), gold_answer=None)
    run_key = tasks_of(graph, DOMAIN)[last]["run_key"]
    assert migrate(graph, DOMAIN, run_key) == 1  # a GoldMigration record
    yield pk
    delete_domain(graph, DOMAIN)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def private_fields(graph: Graph) -> dict[tuple[str, str, str], str]:
    """{(node|edge, type, property): one value of it near the domain} for every private property."""
    out: dict[tuple[str, str, str], str] = {}
    for r in graph.read("test_private_values", domain=DOMAIN):
        public = public_properties(r["type"]) if r["kind"] == "node" else public_edge_properties(r["type"])
        if r["prop"] in public:
            continue
        text = _text(r["value"])
        k = (r["kind"], r["type"], r["prop"])
        if len(text) > len(out.get(k, "")):
            out[k] = text  # the longest value: the most to recover
    return out


def cypher_attack(kind: str, label: str, prop: str) -> str:
    """Tasks of the domain, selected iff some node (edge) of that type has the property starting
    with $guess: one bit per query, enough to recover the value."""
    if kind == "node":
        where = f"MATCH (n:`{label}`) WHERE toString(n.`{prop}`) STARTS WITH toString($guess)"
    else:
        where = f"MATCH ()-[n:`{label}`]->() WHERE toString(n.`{prop}`) STARTS WITH toString($guess)"
    return f"MATCH (t:Task {{domain: $d}}) WHERE EXISTS {{ {where} }} RETURN t.key AS key"


# ------------------------------------------------------------------------------ doors
def _http() -> TestClient:
    return TestClient(create_app(Settings(api_token=WRITE, api_read_token=READ)), base_url="http://127.0.0.1")


def _from_http(r: Any) -> Answer:
    if r.status_code != 200:
        assert "\n" not in r.text and len(r.text) < 1200, r.text
        return Answer(None, r.json().get("detail", ""))
    return Answer(sorted(json.loads(x)["task_id"] for x in r.text.splitlines()))


def cli_cypher(query: str, out: Path, audience: str = "public") -> Door:
    def door(guess: str) -> Answer:
        r = CliRunner().invoke(main, ["export", "--cypher", query, "--param", f"d={DOMAIN}", "--param",
                                      f"guess={guess}", "--domain", DOMAIN, "--audience", audience,
                                      "-o", str(out)])
        if r.exit_code != 0:
            assert r.output.count("\n") <= 2 and "Traceback" not in r.output, r.output
            return Answer(None, r.output.strip())
        return Answer(sorted(json.loads(x)["task_id"] for x in (out / "public.jsonl").read_text().splitlines()))
    return door


def http_cypher(query: str, token: str, view: str = "public") -> Door:
    c = _http()

    def door(guess: str) -> Answer:
        return _from_http(c.post("/export", json={"cypher": query, "params": {"d": DOMAIN, "guess": guess},
                                                  "domain": DOMAIN, "view": view},
                                 headers={"Authorization": f"Bearer {token}"}))
    return door


def cli_filter(prop: str, out: Path) -> Door:
    def door(guess: str) -> Answer:
        r = CliRunner().invoke(main, ["export", "--filter", f"{prop}={guess}", "--domain", DOMAIN, "-o", str(out)])
        if r.exit_code != 0:
            return Answer(None, r.output.strip())
        return Answer(sorted(json.loads(x)["task_id"] for x in (out / "public.jsonl").read_text().splitlines()))
    return door


def http_filter(prop: str) -> Door:
    c = _http()

    def door(guess: str) -> Answer:
        return _from_http(c.post("/export", json={"filter": {prop: guess}, "domain": DOMAIN},
                                 headers={"Authorization": f"Bearer {READ}"}))
    return door


def http_tasks(prop: str) -> Door:
    c = _http()

    def door(guess: str) -> Answer:
        r = c.get("/tasks", params={"domain": DOMAIN, prop: guess, "limit": 500},
                  headers={"Authorization": f"Bearer {READ}"})
        if r.status_code != 200:
            return Answer(None, r.json().get("detail", ""))
        return Answer(sorted(t["task_id"] for t in r.json()["tasks"]))
    return door


def recover(door: Door, value: str, positions: int = 3) -> tuple[str, list[Answer]]:
    """The attacker: extend a known prefix one character at a time, keeping the guess whose answer
    differs from a wrong guess's (a decoy no value here starts with). Stops at the first position
    it cannot tell."""
    prefix, seen = "", []
    for ch in value[:positions]:
        right, wrong = door(prefix + ch), door(prefix + "\u0007")
        seen += [right, wrong]
        if right.key() is None or right.key() == wrong.key() or not right.selected:
            break
        prefix += ch
    return prefix, seen


# ------------------------------------------------------------------------------ the corpus
def test_oracle_corpus_recovers_nothing_through_a_public_door(pack: Pack, graph: Graph, tmp_path: Path) -> None:
    fields = private_fields(graph)
    found = {(k, t) for k, t, _ in fields}
    for kind, label in [("node", "TaskVersion"), ("node", "RuleUpdate"), ("node", "Run"),
                        ("node", "GoldMigration"), ("edge", "CHECKED")]:
        assert (kind, label) in found, f"the fixture has no private field of {label}"
    for want in ["lifted_answer", "lifted_sql", "featured_sql", "featured_params", "lifted_params", "gold_answer"]:
        assert ("node", "Task", want) in fields
    assert ("node", "RuleUpdate", "changelog") in fields and ("edge", "CHECKED", "old") in fields
    rows: list[dict[str, Any]] = []
    for (kind, label, prop), value in sorted(fields.items()):
        query = cypher_attack(kind, label, prop)
        doors: dict[str, Door] = {
            "cli --cypher --audience public": cli_cypher(query, tmp_path / "cli"),
            "http cypher view=public (read token)": http_cypher(query, READ),
            "http cypher view=public (write token)": http_cypher(query, WRITE),
        }
        if kind == "node" and label == "Task":
            doors.update({"cli --filter": cli_filter(prop, tmp_path / "flt"), "http filter": http_filter(prop),
                          "http /tasks?field=": http_tasks(prop)})
        for path, door in doors.items():
            recovered, seen = recover(door, value or PROBE)
            refused = all(a.selected is None for a in seen)
            rows.append({"node_type" if kind == "node" else "edge_type": label, "field": prop, "path": path,
                         "result": "refused" if refused else f"answered, recovered {len(recovered)} chars",
                         "line": seen[0].line[:160]})
            assert recovered == "" and refused, (label, prop, path, seen[0].line)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"fields": len(fields), "attempts": len(rows), "rows": rows}, indent=1) + "\n")
    assert len({(r.get("node_type") or r.get("edge_type"), r["field"]) for r in rows}) == len(fields)


@pytest.mark.parametrize("kind,label,prop", [("node", "Task", "lifted_answer"), ("node", "RuleUpdate", "changelog"),
                                             ("edge", "CHECKED", "old")])
def test_the_same_attack_works_through_the_private_door(pack: Pack, graph: Graph, tmp_path: Path, kind: str,
                                                        label: str, prop: str) -> None:
    """Positive control: the private audience may read everything, and the attacker recovers the
    first characters there, through the CLI and over HTTP with the write token."""
    value = private_fields(graph)[(kind, label, prop)]
    query = cypher_attack(kind, label, prop)
    for door in (http_cypher(query, WRITE, view="private"), _cli_private(query, tmp_path / "p")):
        recovered, seen = recover(door, value, positions=2)
        assert recovered == value[:2], (value[:40], [(a.selected, a.line) for a in seen])


def _cli_private(query: str, out: Path) -> Door:
    def door(guess: str) -> Answer:
        r = CliRunner().invoke(main, ["export", "--cypher", query, "--param", f"d={DOMAIN}", "--param",
                                      f"guess={guess}", "--domain", DOMAIN, "--audience", "private",
                                      "--allow-empty", "-o", str(out)])  # a wrong guess selects 0 tasks
        assert r.exit_code == 0, r.output
        return Answer(sorted(json.loads(x)["task_id"] for x in (out / "private.jsonl").read_text().splitlines()))
    return door


def test_public_answers_carry_no_private_value(pack: Pack, graph: Graph, tmp_path: Path) -> None:
    """Every public response and file, scanned for every private value of the domain (strings of
    12 characters or more that no public property also holds)."""
    rows = graph.read("test_private_values", domain=DOMAIN)
    public_texts = [_text(r["value"]) for r in rows if r["prop"] in (
        public_properties(r["type"]) if r["kind"] == "node" else public_edge_properties(r["type"]))]
    secrets = {t for t in (_text(v) for v in private_fields(graph).values()) if len(t) >= 12}
    secrets = {s for s in secrets if not any(s in p for p in public_texts)}
    assert secrets
    c = _http()
    auth = {"Authorization": f"Bearer {READ}"}
    bodies = [c.get("/tasks", params={"domain": DOMAIN, "limit": 500}, headers=auth).text,
              c.get("/graph/stats", params={"domain": DOMAIN}, headers=auth).text,
              c.get("/metrics/MINI-SAT-001/rules", params={"domain": DOMAIN, "tasks": "true"}, headers=auth).text,
              c.get("/rules/MINI-R-STRICT/impact", params={"domain": DOMAIN}, headers=auth).text,
              c.get(f"/domains/{DOMAIN}/drift", headers=auth).text,
              c.post("/export", json={"filter": {"status": ["admitted", "retired", "rejected"]}, "domain": DOMAIN},
                     headers=auth).text]
    assert CliRunner().invoke(main, ["export", "--preset", "domain", "--param", f"domain={DOMAIN}", "--format", "hf",
                                     "-o", str(tmp_path / "hf")]).exit_code == 0
    bodies += [p.read_text() for p in (tmp_path / "hf").rglob("*") if p.is_file()]
    for body in bodies:
        assert not [s[:40] for s in secrets if s in body]


# ------------------------------------------------------------------------------ classification
def _written_types() -> tuple[set[str], set[str]]:
    """Node labels and edge types that some Cypher file of ours creates or merges."""
    labels, edges = set(), set()
    for path in CYPHER_DIR.rglob("*.cypher"):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for clause in re.findall(r"\b(?:MERGE|CREATE)\b[^\n]*", text):
            labels |= set(re.findall(r"\(\w*:(\w+)", clause))
            edges |= set(re.findall(r"\[\w*:(\w+)", clause))
    return labels - {"ExportProbe"}, edges


def test_every_type_written_or_present_is_declared(pack: Pack, graph: Graph) -> None:
    labels, edges = _written_types()
    for r in graph.read("test_graph_types"):
        (labels if r["kind"] == "node" else edges).add(r["name"])
    labels -= {"ExportProbe", "Probe"}  # what the hostile tests try to create, and fail to
    assert not labels - set(NODES), f"undeclared node types: {sorted(labels - set(NODES))} (core/visibility.py)"
    assert not edges - set(EDGES), f"undeclared edge types: {sorted(edges - set(EDGES))} (core/visibility.py)"


def test_an_undeclared_type_is_private() -> None:
    assert public_properties("SomeNewAnswerStore") == frozenset()
    assert public_edge_properties("SOME_NEW_EDGE") == frozenset()
    assert public_properties("TaskVersion") == frozenset() and public_properties("RuleUpdate") == frozenset()


def test_filter_fields_are_public() -> None:
    assert set(FILTER_FIELDS) - {"metric", "rule", "review"} <= public_properties("Task")
    # `review` follows the public REVIEWS edge and reads only the public properties of a Review.
    assert {"task_version", "passed"} <= public_properties("Review") and "REVIEWS" in EDGES


def test_public_statements_read_public_properties_only() -> None:
    """The export's public statements: every `var.prop` and projection `{.prop}` they read is a
    public property of var's label (every variable there is labelled)."""
    for name in ("export_filter", "export_tasks_public"):
        text = re.sub(r"//[^\n]*", "", (CYPHER_DIR / f"{name}.cypher").read_text())
        labels = dict(re.findall(r"\((\w+):(\w+)", text))
        reads = set(re.findall(r"\b(\w+)\.(\w+)\b", text))
        for var, body in re.findall(r"\b(\w+) \{([^}]*)\}", text):
            reads |= {(var, p) for p in re.findall(r"\.(\w+)", body)}
            assert ".*" not in body, name
        for var, prop in reads:
            if var in labels:
                assert prop in public_properties(labels[var]), (name, var, prop)


def test_the_page_lists_the_declarations() -> None:
    page = (REPO_ROOT / "docs" / "public-surface.md").read_text()
    for kinds in (NODES, EDGES):
        for name, kind in kinds.items():
            [row] = [line for line in page.splitlines() if line.startswith(f"| `{name}` |")]
            cells = row.split(" | ")
            shown = set(re.findall(r"`(\w+)`", cells[1]))
            assert shown == set(kind.public or ()), name
            assert ("private whole" in cells[1]) == (kind.public is None), name
