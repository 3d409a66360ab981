"""The HTTP API (FastAPI TestClient over the real stores): reads, filters, export streaming,
rule updates, and bearer-token protection with and without configured tokens."""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dibench.core.config import Settings
from dibench.core.pack import Pack
from dibench.service.api import create_app
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, read_front, write_front
from tests.test_update import generated_domain, tasks_of

DOMAIN = "mini_api1"
WRITE, READ = "write-secret", "read-secret"


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("api") / "pack", DOMAIN, graph, warehouse, target=8)
    yield pk
    delete_domain(graph, DOMAIN)


def client(token: str | None = WRITE, read_token: str | None = None, roots: list[Path] | None = None) -> TestClient:
    return TestClient(create_app(Settings(api_token=token, api_read_token=read_token,
                                          api_pack_roots=roots or [Path(tempfile.gettempdir())])),
                      base_url="http://127.0.0.1")


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_open_reads(pack: Pack, graph: Graph) -> None:
    c = client()
    assert c.get("/health").json() == {"status": "ok", "graph": "up"}
    stats = c.get("/graph/stats", params={"domain": DOMAIN}).json()
    assert stats["nodes"]["Task"] == len(tasks_of(graph, DOMAIN))
    rules = c.get("/metrics/MINI-SAT-001/rules", params={"domain": DOMAIN, "tasks": "true"}).json()
    assert {r["rule_id"] for r in rules} == {"MINI-R-PHONE", "MINI-R-PRIVACY", "MINI-R-STRICT"}
    assert all("tasks" in r for r in rules)
    impact = c.get("/rules/MINI-R-STRICT/impact", params={"domain": DOMAIN}).json()
    assert impact["metrics"][0]["metric"] == "MINI-SAT-001"
    assert c.get("/rules/NO-SUCH-RULE/impact").status_code == 404
    assert c.get("/openapi.json").json()["info"]["title"] == "dibench"
    assert c.get("/docs").status_code == 200


def test_tasks_filters_and_pages(pack: Pack, graph: Graph) -> None:
    c = client()
    want = sorted(k for k, t in tasks_of(graph, DOMAIN).items()
                  if t["status"] == "admitted" and t["tier"] == "K+A+R" and t["metric_id"] == "MINI-SAT-001")
    got: list[str] = []
    for offset in range(0, len(want) + 3, 3):
        page = c.get("/tasks", params={"domain": DOMAIN, "status": "admitted", "tier": "K+A+R",
                                       "metric": "MINI-SAT-001", "offset": offset, "limit": 3}).json()
        assert page["total"] == len(want)
        got += [t["task_id"] for t in page["tasks"]]
        assert all("gold_answer" not in t for t in page["tasks"])
    assert got == want
    # Without a status, /tasks lists admitted tasks; a status asks for others.
    by_rule = c.get("/tasks", params={"domain": DOMAIN, "rule": "MINI-R-STRICT", "limit": 500}).json()
    assert by_rule["total"] == sum(1 for t in tasks_of(graph, DOMAIN).values()
                                   if "MINI-R-STRICT" in t["rule_ids"] and t["status"] == "admitted")
    rejected = c.get("/tasks", params={"domain": DOMAIN, "status": "rejected", "limit": 500}).json()
    assert rejected["total"] == sum(1 for t in tasks_of(graph, DOMAIN).values() if t["status"] == "rejected")


def test_export_streams_jsonl_and_refuses_writes(pack: Pack) -> None:
    c = client()
    r = c.post("/export", json={"filter": {"domain": DOMAIN, "status": "admitted"}, "domain": DOMAIN})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    rows = [json.loads(x) for x in r.text.splitlines()]
    assert rows and all("gold_answer" not in x for x in rows)
    query = {"cypher": "MATCH (t:Task {domain: $d, status: 'admitted'}) RETURN t.key AS key", "params": {"d": DOMAIN},
             "domain": DOMAIN}
    public = c.post("/export", json=query, headers=auth(WRITE))
    assert public.status_code == 400 and public.json()["error"] == "PrivateOnly"
    private = c.post("/export", json={**query, "view": "private"}, headers=auth(WRITE))  # the older name
    same = c.post("/export", json={**query, "audience": "private"}, headers=auth(WRITE))  # the CLI's word
    assert same.status_code == 200 and same.text == private.text
    both = c.post("/export", json={**query, "audience": "private", "view": "private"}, headers=auth(WRITE))
    assert both.status_code == 422
    assert [json.loads(x)["task_id"] for x in private.text.splitlines()] == [x["task_id"] for x in rows]
    bad = c.post("/export", json={"cypher": "MATCH (t:Task) SET t.x = 1 RETURN t.key AS key", "view": "private"},
                 headers=auth(WRITE))
    assert bad.status_code == 400 and bad.json()["error"] == "CypherRefused"
    assert c.post("/export", json={"preset": "domain", "params": {"domain": DOMAIN}, "view": "private"}).status_code == 401
    private = c.post("/export", json={"preset": "domain", "params": {"domain": DOMAIN}, "view": "private"},
                     headers=auth(WRITE))
    assert private.status_code == 200 and "gold_answer" in json.loads(private.text.splitlines()[0])


def test_write_endpoints_need_the_configured_token(pack: Pack) -> None:
    text = (pack.root / "rules" / "strict.md").read_text()
    body = {"pack": str(pack.root), "document": text, "file_name": "strict.md", "dry_run": True}
    disabled = client(token=None).post("/rules/update", json=body, headers=auth(WRITE))
    assert disabled.status_code == 403 and "disabled" in disabled.json()["detail"]
    no_token = client().post("/rules/update", json=body)
    assert no_token.status_code == 401
    assert no_token.json()["error"] == "Unauthorized"
    assert client().post("/rules/update", json=body, headers=auth("wrong")).status_code == 401
    ok = client().post("/rules/update", json=body, headers=auth(WRITE))
    assert ok.status_code == 200, ok.text
    assert ok.json()["written"] is False and ok.json()["rule_id"] == "MINI-R-STRICT"


def test_rule_update_over_http_returns_the_changelog(pack: Pack, graph: Graph) -> None:
    path = pack.root / "rules" / "strict.md"
    front, body = read_front(path)
    front["effects"][0]["value"] = 3
    write_front(path, front, body)
    req = {"pack": str(pack.root), "document": path.read_text(), "file_name": "strict.md"}
    r = client().post("/rules/update", json=req, headers=auth(WRITE))
    assert r.status_code == 200, r.text
    log = r.json()
    assert log["written"] is True and log["effects"][0]["after"]["value"] == 3
    assert sum(log["counts"].values()) == len(log["tasks"]) > 0
    bad = client().post("/rules/update", json={**req, "document": "---\nid: X\n---\nshort"}, headers=auth(WRITE))
    assert bad.status_code == 422


def test_reads_protected_when_a_read_token_is_set(pack: Pack) -> None:
    c = client(read_token=READ)
    refused = c.get("/graph/stats")
    assert refused.status_code == 401
    assert refused.json()["error"] == "Unauthorized"
    assert refused.headers["www-authenticate"] == "Bearer"
    assert c.get("/graph/stats", headers=auth("nope")).status_code == 401
    assert c.get("/graph/stats", headers=auth(READ)).status_code == 200
    assert c.get("/graph/stats", headers=auth(WRITE)).status_code == 200
    assert c.get("/tasks", params={"domain": DOMAIN}, headers=auth(READ)).status_code == 200
    assert c.post("/export", json={"preset": "domain", "params": {"domain": DOMAIN}}).status_code == 401
    assert c.get("/health").status_code == 200


def test_export_over_http_refuses_oracles_and_hides_server_text(pack: Pack, graph: Graph) -> None:
    c = client()
    oracle = c.post("/export", json={"cypher": "MATCH (t:Task) WHERE t.gold_answer STARTS WITH '{' "
                                               "RETURN t.key AS key", "domain": DOMAIN})
    assert oracle.status_code == 400 and oracle.json()["error"] == "PrivateOnly"
    assert "private audience" in oracle.json()["hint"]
    leak = c.post("/export", json={"cypher": "MATCH (t:Task) RETURN date(t.gold_answer + t.gold_sql) AS key",
                                   "domain": DOMAIN, "view": "private"}, headers=auth(WRITE))
    assert leak.status_code == 400 and leak.json()["detail"].startswith("refused Cypher: Neo4j error Neo.")
    golds = [t["gold_sql"][:30] for t in tasks_of(graph, DOMAIN).values() if t.get("gold_sql")]
    assert golds and not [g for g in golds if g in leak.text]
    load = c.post("/export", json={"cypher": "MATCH (t:Task) // x\rLOAD CSV FROM 'http://127.0.0.1:9/' AS r "
                                             "RETURN t.key AS key", "domain": DOMAIN, "view": "private"},
                  headers=auth(WRITE))
    assert load.status_code == 400 and load.json()["error"] == "CypherRefused"
