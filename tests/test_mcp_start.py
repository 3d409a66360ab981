"""`dibench mcp` listens before its session opens: a tool call waits for the session, a session that
cannot be opened refuses the call with its reason and stops an HTTP server with its error, and an
initialize is answered while the session is still opening. No services (the session is a stand-in);
about 3 s."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest

from dibench.core.errors import NotFound
from dibench.evaluation.mcp_start import PendingEnvironment, serve_at_once
from dibench.evaluation.tool_contract import ToolRefused

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_a_call_waits_for_the_session_and_a_failed_one_is_refused_with_its_reason() -> None:
    pending = PendingEnvironment()
    got: list[Any] = []
    caller = threading.Thread(target=lambda: got.append(pending.progress()))
    caller.start()
    time.sleep(0.2)
    assert not got and caller.is_alive()  # waiting for the session
    pending.settle(SimpleNamespace(env=SimpleNamespace(progress=lambda: {"tasks": 3})))  # type: ignore[arg-type]
    caller.join(5)
    assert got == [{"tasks": 3}]

    failed = PendingEnvironment()
    failed.settle(None, NotFound("domain 'x' is not in the graph\nsecond line"))
    with pytest.raises(ToolRefused, match=r"^the session could not be opened: domain 'x' is not in the graph$"):
        failed.list_tasks()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_initialize_is_answered_while_the_session_opens_and_a_failed_session_stops_the_server() -> None:
    port, opening = _free_port(), threading.Event()

    def open_session() -> Any:
        opening.set()
        time.sleep(1.0)  # a slow session: the first reply does not wait for it
        raise NotFound("domain 'x' is not in the graph")

    outcome: list[BaseException] = []

    def serve() -> None:
        try:
            serve_at_once(open_session, "http", engine="PostgreSQL", port=port)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(INITIALIZE).encode(),
                                     headers={"content-type": "application/json",
                                              "accept": "application/json, text/event-stream"})
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                assert reply.status == 200
                break
        except OSError:
            assert time.monotonic() < deadline, "no answer"
            time.sleep(0.05)
    assert not outcome  # answered while the session was (at most) opening
    server.join(30)
    assert not server.is_alive() and opening.is_set()
    assert len(outcome) == 1 and isinstance(outcome[0], NotFound)
