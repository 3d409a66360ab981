"""The API's pages, offline: Swagger UI and ReDoc from the installed bundle (never a CDN), open
without a token, an OpenAPI document that declares bearer auth, operations that still need a
token, and the page rendered by headless Chromium (Debian package `chromium`) with its operations."""
from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from dibench.core.config import Settings
from dibench.service.api import create_app

CHROMIUM = Path("/usr/bin/chromium")
WRITE, READ = "docs-write-token", "docs-read-token"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(Settings(api_token=WRITE, api_read_token=READ))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the API server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_pages_load_without_a_token_and_name_no_cdn(base_url: str) -> None:
    for page, asset in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        r = httpx.get(base_url + page)
        assert r.status_code == 200 and f"/docs-static/{asset}" in r.text, page
        assert "cdn" not in r.text.lower() and "fonts.googleapis" not in r.text, page
        js = httpx.get(f"{base_url}/docs-static/{asset}")
        assert js.status_code == 200 and len(js.content) > 100_000
    # Only the bundle's own files are open; any other name is an ordinary (guarded) route that serves nothing.
    assert httpx.get(base_url + "/docs-static/config.py").status_code == 401
    assert httpx.get(base_url + "/docs-static/config.py", headers={"authorization": f"Bearer {READ}"}).status_code == 404


def test_openapi_declares_bearer_auth_and_operations_need_a_token(base_url: str) -> None:
    doc = httpx.get(base_url + "/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": doc["components"]["securitySchemes"]["bearer"]["description"]}
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/health"]["get"]["security"] == []
    assert httpx.get(base_url + "/graph/stats").status_code == 401
    r = httpx.post(base_url + "/rules/update", json={}, headers={"authorization": f"Bearer {READ}"})
    assert r.status_code == 403 and r.json()["error"] == "InsufficientScope", r.text


def test_swagger_ui_renders_the_operations_in_headless_chromium(base_url: str, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian package `chromium` is not installed (/usr/bin/chromium missing)")
    flags = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000"]
    dom = subprocess.run([*flags, "--dump-dom", base_url + "/docs"], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert "opblock" in dom and "/rules/update" in dom and "/graph/stats" in dom, dom[:2000]
    assert "authorize" in dom.lower()
    shot = tmp_path / "docs.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,900", base_url + "/docs"], check=True,
                   capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000, "the screenshot of /docs is (almost) empty"
    redoc = subprocess.run([*flags, "--dump-dom", base_url + "/redoc"], check=True, capture_output=True,
                           text=True, timeout=120).stdout
    assert "/rules/update" in redoc and json.dumps("dibench")[1:-1] in redoc
