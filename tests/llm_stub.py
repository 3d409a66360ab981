"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (the only thing faked: the model).

`StubServer` serves POST /v1/chat/completions from a script: each request takes the next entry
(a reply text, a `tool_call(...)`, an `error(status, message)`, a recorded `Raw` reply, or a
callable of the request body returning one of those); when the script runs out, `default` (if set) answers. Every request body
is kept in `requests` so a test can check what the real client sent (tool_choice, null content,
response_format, the prompt).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Error:
    status: int
    message: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any]
    content: str | None = None


@dataclass(frozen=True)
class Raw:
    """A recorded reply, sent exactly as the real server sent it (a cassette's entry)."""

    status: int
    payload: Any


def error(status: int, message: str) -> Error:
    return Error(status, message)


def tool_call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args)


Reply = str | Error | ToolCall | Raw
Entry = Reply | Callable[[dict[str, Any]], Reply]


class StubServer:
    def __init__(self) -> None:
        self.script: list[Entry] = []
        self.default: Entry | None = None
        self.requests: list[dict[str, Any]] = []
        # Set to serve llama.cpp's token count route (request body -> prompt tokens); None: 404 like vLLM's.
        self.count_tokens: Callable[[dict[str, Any]], int] | None = None
        self.counted: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> StubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def then(self, *entries: Entry) -> StubServer:
        self.script.extend(entries)
        return self

    def reset(self) -> None:
        self.script.clear()
        self.requests.clear()
        self.default = None
        self.count_tokens = None
        self.counted.clear()

    def prompt(self, i: int) -> str:
        """All message texts of request i, joined."""
        return "\n".join(str(m.get("content") or "") for m in self.requests[i]["messages"])

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            entry = self.script.pop(0) if self.script else self.default
        if entry is None:
            return Error(500, "stub script exhausted")
        return entry(body) if callable(entry) else entry

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the access log
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") == "/v1/chat/completions/input_tokens" and stub.count_tokens is not None:
                    stub.counted.append(body)
                    self._send(200, {"input_tokens": stub.count_tokens(body), "object": "response.input_tokens"})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}})
                    return
                reply = stub._next(body)
                if isinstance(reply, Raw):
                    self._send(reply.status, reply.payload)
                elif isinstance(reply, Error):
                    self._send(reply.status, {"error": {"message": reply.message, "type": "invalid_request_error",
                                                        "code": reply.status}})
                else:
                    self._send(200, completion(body, reply))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a test of its timeout): nothing is left to answer

        return Handler


def completion(request: dict[str, Any], reply: str | ToolCall) -> dict[str, Any]:
    prompt_tokens = sum(len(str(m.get("content") or "")) for m in request.get("messages", [])) // 4
    if isinstance(reply, ToolCall):
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "tool_calls": [
            {"id": f"call_{len(json.dumps(reply.args))}", "type": "function",
             "function": {"name": reply.name, "arguments": json.dumps(reply.args)}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": reply}, "stop"
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": request.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10}}


@pytest.fixture(scope="module")
def stub_server() -> Iterator[StubServer]:
    server = StubServer().start()
    yield server
    server.stop()


@pytest.fixture()
def stub(stub_server: StubServer) -> StubServer:
    stub_server.reset()
    return stub_server


@contextmanager
def openai_settings(monkeypatch: pytest.MonkeyPatch, stub: StubServer, **env: str) -> Iterator[None]:
    """dibench's OpenAI-compatible client pointed at `stub` (no cache), with these DIBENCH_* values
    on top; the settings, the LLM session and the learnt token-count routes fresh before and after."""
    from dibench.core.config import get_settings
    from dibench.stores import llm as llm_mod
    from dibench.stores import llm_openai

    for k, v in {"DIBENCH_LLM": "openai", "DIBENCH_LLM_BASE_URL": stub.base_url, "DIBENCH_LLM_MODEL": "stub",
                 "DIBENCH_LLM_CACHE": "false", **env}.items():
        monkeypatch.setenv(k, v)

    def fresh() -> None:
        get_settings.cache_clear()
        llm_mod.reset_session()
        llm_openai._ROUTES.clear()

    fresh()
    yield
    fresh()
