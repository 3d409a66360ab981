"""The OpenAI-compatible chat model (the `openai` extra: langchain-openai).

Imported only when `DIBENCH_LLM=openai|ollama` is set (stores.llm turns a missing package into
a ConfigError). Small local servers (llama.cpp, llama-cpp-python, some Ollama versions) reject an
assistant message whose content is null, which langchain-openai sends for a turn that only calls
tools; they get an empty string instead. Every request carries `max_tokens`: the stage's reply
limit, or less when the counted prompt leaves less of the context (`stores.llm_request`). The
prompt is counted by the server's tokenizer where it has one (llama.cpp's
`/v1/chat/completions/input_tokens` or `/apply-template` + `/tokenize`, vLLM's `/tokenize`),
else estimated. Retries are ours (stores.llm.call): the client makes none.
"""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from dibench.stores import llm_request
from dibench.stores.llm_request import estimate_tokens

log = logging.getLogger("dibench.llm")
# Per server: the tokenizer route that answered ("" = none does), so a server is probed once.
_ROUTES: dict[str, str] = {}
_COUNT_TIMEOUT_S = 10.0


class CompatibleChatOpenAI(ChatOpenAI):
    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        for message in payload.get("messages", []):
            if message.get("content") is None:
                message["content"] = ""
        limits = llm_request.current.get()
        if limits is not None:
            counted = self.prompt_tokens(payload)
            size = counted if counted is not None else estimate_payload(payload)
            payload.pop("max_completion_tokens", None)
            # `max_tokens` is the field every compatible server reads (OpenAI's own API takes it
            # too for chat models); langchain-openai renames it, which older servers ignore.
            payload["max_tokens"] = limits.reply_room(size, counted is not None)
        return payload

    def count_request(self, messages: Any, **kwargs: Any) -> tuple[int, bool]:
        """(prompt tokens, counted by the server) of the request these messages and bound kwargs
        (tools) would make; nothing is sent to the model."""
        token = llm_request.current.set(None)
        try:
            payload = self._get_request_payload(messages, **kwargs)
        finally:
            llm_request.current.reset(token)
        counted = self.prompt_tokens(payload)
        return (counted, True) if counted is not None else (estimate_payload(payload), False)

    def prompt_tokens(self, payload: dict[str, Any]) -> int | None:
        """The request's prompt tokens as the server counts them, or None when it cannot."""
        base = (self.openai_api_base or "").rstrip("/")
        if not base:
            return None
        route = _ROUTES.get(base)
        routes = [route] if route is not None else list(COUNTERS)
        for name in routes:
            if not name:
                return None
            try:
                n = COUNTERS[name](self, base, payload)
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                log.debug("token count via %s failed: %s", name, exc)
                n = None
            if n is not None:
                _ROUTES[base] = name
                return n
        _ROUTES[base] = ""
        return None

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        secret = self.openai_api_key
        # langchain-openai also accepts a key callable; the counting route then goes without one
        key = secret.get_secret_value() if isinstance(secret, SecretStr) else ""
        r = httpx.post(url, json=body, timeout=_COUNT_TIMEOUT_S, headers={"Authorization": f"Bearer {key}"})
        r.raise_for_status()
        out = r.json()
        if not isinstance(out, dict):
            raise ValueError("not a JSON object")
        return out


def _chat_body(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload[k] for k in ("model", "messages", "tools", "tool_choice") if k in payload}


def _input_tokens(m: CompatibleChatOpenAI, base: str, payload: dict[str, Any]) -> int | None:
    """llama.cpp: the chat request as the template renders it, tools included."""
    n = m._post(f"{base}/chat/completions/input_tokens", _chat_body(payload)).get("input_tokens")
    return int(n) if isinstance(n, int) else None


def _root(base: str) -> str:
    return base[:-3] if base.endswith("/v1") else base


def _template_tokenize(m: CompatibleChatOpenAI, base: str, payload: dict[str, Any]) -> int | None:
    """Older llama.cpp: render the prompt with the server's template, then tokenize it."""
    prompt = m._post(f"{_root(base)}/apply-template", _chat_body(payload)).get("prompt")
    if not isinstance(prompt, str):
        return None
    tokens = m._post(f"{_root(base)}/tokenize", {"content": prompt}).get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


def _vllm_tokenize(m: CompatibleChatOpenAI, base: str, payload: dict[str, Any]) -> int | None:
    body = {**_chat_body(payload), "add_generation_prompt": True}
    body.pop("tool_choice", None)
    n = m._post(f"{_root(base)}/tokenize", body).get("count")
    return int(n) if isinstance(n, int) else None


COUNTERS = {"input_tokens": _input_tokens, "apply_template": _template_tokenize, "vllm_tokenize": _vllm_tokenize}


def estimate_payload(payload: dict[str, Any]) -> int:
    """Without the server's tokenizer: every message's text and tool-call arguments, the tool
    definitions, and a few tokens of template per message."""
    messages = payload.get("messages", [])
    text = json.dumps([[m.get("content"), m.get("tool_calls")] for m in messages], default=str)
    tools = json.dumps(payload.get("tools") or [], default=str)
    return estimate_tokens(text) + estimate_tokens(tools) + 6 * len(messages)


class Recorder:
    """Appends every chat request and the server's reply to a JSONL cassette (DIBENCH_LLM_RECORD),
    which tests replay over the stub server."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, response: httpx.Response) -> None:
        if not response.request.url.path.endswith("/chat/completions"):
            return
        response.read()
        try:
            reply: Any = response.json()
        except ValueError:
            reply = response.text
        entry = {"request": json.loads(response.request.content or b"{}"), "status": response.status_code,
                 "response": reply}
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")


def compatible_chat_model(*, base_url: str | None, model: str, api_key: str, timeout_s: float,
                          max_tokens: int, record: Path | None = None) -> BaseChatModel:
    extra: dict[str, Any] = {}
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        extra["http_client"] = httpx.Client(timeout=timeout_s, event_hooks={"response": [Recorder(record)]})
    return CompatibleChatOpenAI(model=model, base_url=base_url, api_key=api_key,  # type: ignore[arg-type]
                                timeout=timeout_s, max_retries=0, temperature=0.0, max_tokens=max_tokens, **extra)
