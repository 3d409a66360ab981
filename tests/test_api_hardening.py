"""HTTP attacks against the real app: bodies refused before they are read, 422s that
echo nothing, pack roots, bounded paging, and an API closed when no token is configured.

Body attacks call the ASGI app directly with a `receive` that yields a 400 MB body lazily (64 KiB
at a time, never allocated whole) and count how many chunks the app pulled. HTTP_ATTACKS lists
every request refused here (the corpus figure for the issue's closing note).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from dibench.cli.main import main
from dibench.core.config import REPO_ROOT, Settings
from dibench.core.errors import GraphError
from dibench.service.api import MAX_BODY_BYTES, RulesCache, create_app, without_paths
from dibench.service.export import ExportError, resolve_domain

WRITE, READ = "write-secret", "read-secret"
LOCAL = "http://127.0.0.1"  # the Host header the app accepts (bound to 127.0.0.1)
CHUNK = 64 * 1024
HUGE = 400 * 1024 * 1024


def app_with(token: str | None = WRITE, read_token: str | None = None, insecure_local: bool = False,
             roots: list[Path] | None = None) -> Any:
    return create_app(Settings(api_token=token, api_read_token=read_token, api_pack_roots=roots or []),
                      insecure_local=insecure_local)


def huge_body() -> Iterator[bytes]:
    chunk = b"{" + b" " * (CHUNK - 1)
    for _ in range(HUGE // CHUNK):
        yield chunk


def call(app: Any, method: str, path: str, headers: dict[str, str], body: Iterator[bytes]) -> tuple[int, bytes, int]:
    """(status, response body, chunks the app pulled) of one request through the ASGI app."""
    pulled = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        chunk = next(body, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        pulled += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
             "raw_path": path.encode(), "root_path": "", "query_string": b"", "scheme": "http",
             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1),
             "headers": [(b"host", b"127.0.0.1")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"), pulled


JSON = {"content-type": "application/json"}
BEARER = {"authorization": f"Bearer {WRITE}"}
HTTP_ATTACKS = [
    "400 MB body before auth", "400 MB body with a lying small read", "400 MB declared Content-Length",
    "400 MB chunked body with auth", "malformed JSON before auth", "giant 422 input", "thousands of 422 errors",
    "pack outside roots (absolute)", "pack outside roots (..)", "pack through a symlink", "offset 10**30",
    "negative offset", "limit 0", "offset not an int", "no token configured", "private export with the read token",
    "insecure-local on a public interface", "write endpoint with insecure-local",
    "foreign Host header (DNS rebinding)", "server path in an error body",
]


def test_huge_body_before_auth_is_not_read() -> None:
    status, body, pulled = call(app_with(), "POST", "/rules/update", JSON, huge_body())
    assert status == 401 and pulled == 0
    assert b"bearer token" in body
    status, _, pulled = call(app_with(read_token=READ), "POST", "/export", JSON, huge_body())
    assert status == 401 and pulled == 0


def test_declared_huge_body_is_413_before_reading() -> None:
    headers = {**JSON, **BEARER, "content-length": str(HUGE)}
    status, body, pulled = call(app_with(), "POST", "/export", headers, huge_body())
    assert status == 413 and pulled == 0
    assert len(body) < 200


@pytest.mark.parametrize("declared", [None, "10"])
def test_streamed_huge_body_is_cut_at_the_limit(declared: str | None) -> None:
    """Chunked, or with a Content-Length that lies: counted while streaming, cut after 1 MiB."""
    headers = {**JSON, **BEARER, **({"content-length": declared} if declared else {})}
    status, _, pulled = call(app_with(), "POST", "/export", headers, huge_body())
    assert status == 413
    assert pulled <= MAX_BODY_BYTES // CHUNK + 1


def test_malformed_json_before_auth_is_401() -> None:
    c = TestClient(app_with(read_token=READ), base_url=LOCAL)
    r = c.post("/export", content=b"{not json", headers=JSON)
    assert r.status_code == 401
    r = TestClient(app_with(), base_url=LOCAL).post("/rules/update", content=b"{not json", headers=JSON)
    assert r.status_code == 401


def test_422_bodies_are_bounded_and_echo_nothing() -> None:
    c = TestClient(app_with(), base_url=LOCAL)
    r = c.post("/export", json={"preset": "domain", "view": "x" * 600_000}, headers=BEARER)
    assert r.status_code == 422 and len(r.content) < 2_000
    assert "xxxxxxxx" not in r.text and r.json()["detail"][0]["loc"] == "body.view"
    many = c.post("/export", json={f"field{i}": "secret-value" for i in range(5_000)}, headers=BEARER)
    assert many.status_code == 422 and len(many.content) < 4_000
    assert "secret-value" not in many.text and many.json()["errors"] == 5_000


@pytest.mark.parametrize("params", [{"offset": 10**30}, {"offset": -1}, {"limit": 0}, {"limit": 10**6},
                                    {"offset": "1e3"}, {"offset": "abc"}])
def test_paging_is_validated(params: dict[str, Any]) -> None:
    r = TestClient(app_with(), base_url=LOCAL).get("/tasks", params=params)
    assert r.status_code == 422, r.text
    assert len(r.content) < 1_000


def test_pack_is_restricted_to_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "packs", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "sneaky").symlink_to(outside)
    c = TestClient(app_with(roots=[root]), base_url=LOCAL)
    doc = "---\nid: X\n---\nsome rule text"
    for pack in ("/etc", str(root / ".." / "elsewhere"), str(root / "sneaky"), "../../etc"):
        r = c.post("/rules/update", json={"pack": pack, "document": doc, "dry_run": True}, headers=BEARER)
        assert r.status_code == 400, (pack, r.text)
        assert r.json()["error"] == "PackOutsideRoots" and "\n" not in r.json()["detail"]


def test_no_token_closes_everything_but_health() -> None:
    c = TestClient(app_with(token=None), base_url=LOCAL)
    assert c.get("/health").status_code == 200
    for path in ("/graph/stats", "/tasks", "/metrics/X/rules", "/rules/X/impact"):
        r = c.get(path)
        assert r.status_code == 403 and "insecure-local" in r.json()["hint"], path
    for path in ("/docs", "/redoc", "/openapi.json"):  # the pages describe the API; they hold no data
        assert c.get(path).status_code == 200, path
    assert c.post("/export", json={"preset": "domain"}).status_code == 403
    local = TestClient(app_with(token=None, insecure_local=True), base_url=LOCAL)
    assert local.get("/openapi.json").status_code == 200
    disabled = local.post("/rules/update", json={}, headers=BEARER)
    assert disabled.status_code == 403 and "disabled" in disabled.json()["detail"]


def test_private_export_needs_the_write_token() -> None:
    c = TestClient(app_with(read_token=READ), base_url=LOCAL)
    r = c.post("/export", json={"preset": "domain", "params": {"domain": "x"}, "view": "private"},
               headers={"authorization": f"Bearer {READ}"})
    # A valid token that does not grant the route: 403, with a 403 body.
    assert r.status_code == 403 and "write token" in r.json()["detail"]
    assert r.json()["error"] == "InsufficientScope"


def test_insecure_local_binds_loopback_only() -> None:
    r = CliRunner().invoke(main, ["serve", "--insecure-local", "--host", "0.0.0.0"])
    assert r.exit_code != 0 and "127.0.0.1" in r.output and "Traceback" not in r.output


def test_one_domain_per_export() -> None:
    clock = [{"domain": "a"}, {"domain": "b"}]
    assert resolve_domain(clock, "b") == "b"
    assert resolve_domain(clock[:1], None) == "a"
    with pytest.raises(ExportError, match="holds 2 domains"):
        resolve_domain(clock, None)
    with pytest.raises(ExportError, match="no domain"):
        resolve_domain(clock, "c")


def test_attack_list_is_covered() -> None:
    assert len(HTTP_ATTACKS) == len(set(HTTP_ATTACKS)) >= 18
    assert json.dumps(HTTP_ATTACKS)


class _Graph:
    """Stand-ins for the two Neo4j calls a RulesCache makes (the real ones are covered by
    tests/test_api.py): a clock that moves on demand and a counted computation."""

    def __init__(self) -> None:
        self.clock, self.computed, self.fail = "c1", 0, False

    def read_clock(self) -> str:
        if self.fail:
            raise GraphError("cypher/graph_clock.cypher: Neo4j is down")
        return self.clock

    def compute(self, key: tuple[object, ...]) -> list[dict[str, object]]:
        self.computed += 1
        return [{"key": key[0], "clock": self.clock}]


def _cache(g: _Graph, max_age_s: float = 1.0) -> RulesCache:
    from anyio import CapacityLimiter

    return RulesCache(g.compute, g.read_clock, CapacityLimiter(2), max_age_s, check_s=0.0)


async def _settle() -> None:
    """Let the background clock check and recomputations finish."""
    for _ in range(50):
        await asyncio.sleep(0.01)


def test_rules_cache_serves_until_the_graph_changes_then_refreshes_in_the_background() -> None:
    async def scenario() -> None:
        g = _Graph()
        cache = _cache(g)
        assert json.loads(await cache.get(("M",))) == [{"key": "M", "clock": "c1"}]
        await _settle()
        for _ in range(5):  # the clock has not moved: no computation, whatever the checks
            await cache.get(("M",))
            await _settle()
        assert g.computed == 1
        g.clock = "c2"
        stale = await cache.get(("M",))  # starts the check; answered at once, from the old answer
        assert json.loads(stale)[0]["clock"] == "c1"
        await _settle()
        assert json.loads(await cache.get(("M",)))[0]["clock"] == "c2"
        assert g.computed == 2

    asyncio.run(scenario())


def test_rules_cache_waits_when_its_answer_is_too_old_and_reports_the_error() -> None:
    async def scenario() -> None:
        g = _Graph()
        cache = _cache(g, max_age_s=0.05)
        await cache.get(("M",))
        g.fail = True  # nothing can be confirmed any more
        await asyncio.sleep(0.1)
        await _settle()
        with pytest.raises(GraphError):
            await cache.get(("M",))

    asyncio.run(scenario())


def test_rules_cache_shares_one_computation_and_forgets_on_clear() -> None:
    async def scenario() -> None:
        g = _Graph()
        cache = _cache(g)
        answers = await asyncio.gather(*(cache.get(("M",)) for _ in range(10)))
        assert len(set(answers)) == 1 and g.computed == 1
        cache.clear()
        await cache.get(("M",))
        assert g.computed == 2
        off = _cache(g, max_age_s=0.0)
        await off.get(("M",))
        await off.get(("M",))
        assert g.computed == 4

    asyncio.run(scenario())


# ------------------------------------------------------------------------------ Host header, server paths
@pytest.mark.parametrize("insecure_local", [True, False])
def test_a_foreign_host_header_is_refused_before_anything(insecure_local: bool) -> None:
    """DNS rebinding: a page on evil.example resolves its own name to 127.0.0.1; the browser then
    sends `Host: evil.example`, which the app refuses, with or without tokens."""
    app = app_with(token=None if insecure_local else WRITE, insecure_local=insecure_local)
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example", ""):
        r = TestClient(app, base_url=f"http://{host or 'x'}").get("/health", headers={"host": host})
        assert r.status_code == 400, (host, r.status_code)
    for host in ("127.0.0.1:8765", "localhost", "localhost:8765", "127.0.0.1"):
        assert TestClient(app, base_url=f"http://{host}").get("/health").status_code == 200, host


def test_every_loopback_address_gets_the_same_host_rule() -> None:
    app = create_app(Settings(api_token=WRITE), host="127.0.0.2")
    for host in ("127.0.0.2:8765", "127.0.0.1", "localhost"):
        assert TestClient(app, base_url=f"http://{host}").get("/health").status_code == 200, host
    assert TestClient(app, base_url="http://evil.example").get("/health").status_code == 400
    refused = CliRunner().invoke(main, ["serve", "--insecure-local", "--host", "10.0.0.1"])
    assert refused.exit_code != 0
    assert "loopback" in refused.output


def test_the_bound_address_and_configured_names_are_answered() -> None:
    app = create_app(Settings(api_token=WRITE, api_allowed_hosts=["bench.internal"]), host="10.1.2.3")
    for host in ("10.1.2.3:8765", "bench.internal", "localhost"):
        assert TestClient(app, base_url=f"http://{host}").get("/health").status_code == 200, host
    assert TestClient(app, base_url="http://other.internal").get("/health").status_code == 400


def test_error_bodies_carry_no_server_path(tmp_path: Path) -> None:
    root = tmp_path / "packs"
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "pack.yaml").write_text("name: [broken\n")
    c = TestClient(app_with(roots=[root]), base_url=LOCAL)
    document = (REPO_ROOT / "tests" / "fixtures" / "minipack" / "rules" / "strict.md").read_text()
    r = c.post("/rules/update", json={"pack": str(root / "broken"), "document": document, "dry_run": True},
               headers=BEARER)
    assert r.status_code == 422, r.text
    assert str(tmp_path) not in r.text
    assert r.json()["detail"].startswith("packs/broken/pack.yaml: line 2"), r.text
    bad_doc = c.post("/rules/update", json={"pack": "demo", "document": "---\nid: [X\n---\nsome rule text",
                                            "file_name": "mine.md", "dry_run": True}, headers=BEARER)
    assert bad_doc.status_code == 422, bad_doc.text
    assert bad_doc.json()["detail"].startswith("rules/mine.md: ") and str(REPO_ROOT) not in bad_doc.text


def test_without_paths() -> None:
    roots = [Path("/srv/packs")]
    assert without_paths("/srv/packs/demo/rules/x.md: effects.0: bad", roots) == "packs/demo/rules/x.md: effects.0: bad"
    assert without_paths("cannot read '/var/tmp/abc/rule.md' (x)", roots) == "cannot read 'rule.md' (x)"
    assert without_paths(f"{REPO_ROOT}/domains/demo/pack.yaml: name: x") == "domains/demo/pack.yaml: name: x"
    assert without_paths("o.amount / 100 > 2 and a/b") == "o.amount / 100 > 2 and a/b"
