"""The LLM client: one way for every stage to call a langchain-core chat model.

The model: `DIBENCH_LLM=openai` (any OpenAI-compatible server) or `ollama`, with
`DIBENCH_LLM_BASE_URL`, `DIBENCH_LLM_MODEL`, `DIBENCH_LLM_API_KEY`; or `module:factory`. Without
one, every LLM-backed stage uses its deterministic default. `call` counts each request against
the call budget, answers from the reply cache when it can, retries transient errors with backoff,
and otherwise fails as one `LLMError` line naming the item; callers record it and carry on.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from dibench.core.config import Settings, get_settings
from dibench.core.errors import ConfigError, DibenchError, ExtractionError
from dibench.stores import llm_request
from dibench.stores.llm_cache import ReplyCache, cache_key
from dibench.stores.llm_request import ContextOverflow, LLMError, RequestLimits, estimate_tokens

__all__ = ["ContextOverflow", "LLMError", "estimate_tokens"]  # defined in stores.llm_request, used from here

M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
log = logging.getLogger("dibench.llm")

OLLAMA_URL = "http://localhost:11434/v1"
# Error texts of servers that refuse a prompt longer than their context (OpenAI, vLLM, llama.cpp, Ollama).
_OVERFLOW = re.compile(r"context.{0,20}(length|window|size)|maximum context|too many tokens|exceeds? the "
                       r"(available )?context|prompt is too long|n_ctx|too long", re.IGNORECASE)
# Exceptions from these packages are provider errors; anything else is our bug and propagates.
_PROVIDER_MODULES = frozenset({"openai", "httpx", "httpcore", "langchain_openai", "langchain_ollama", "ollama",
                               "requests", "urllib3", "anthropic", "aiohttp"})


class BudgetExhausted(LLMError):
    """The process has made all the LLM calls `--max-llm-calls` allows."""

    hint = "raise --max-llm-calls (DIBENCH_LLM_MAX_CALLS); stages fall back to their defaults meanwhile"


# What a stage catches to record a failed model call against its item and carry on.
LLM_FAILURES: tuple[type[DibenchError], ...] = (LLMError, ExtractionError)


# ------------------------------------------------------------------------------ accounting
@dataclass
class Session:
    """What this process asked of the model: calls, cache hits, failures and prompt sizes per stage."""

    max_calls: int | None = None
    cache: ReplyCache | None = None
    calls: Counter[str] = field(default_factory=Counter)
    cache_hits: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    prompt_tokens: Counter[str] = field(default_factory=Counter)
    max_prompt_tokens: Counter[str] = field(default_factory=Counter)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def snapshot(self) -> dict[str, Counter[str]]:
        return {k: Counter(getattr(self, k)) for k in ("calls", "cache_hits", "failures", "prompt_tokens")}

    def since(self, before: dict[str, Counter[str]]) -> dict[str, Any]:
        """as_dict() of what happened after `before` (a snapshot()): one worker round's share."""
        out = self.as_dict()
        for k, old in before.items():
            out[k] = {stage: n for stage, n in (getattr(self, k) - old).items() if n}
        return out

    def as_dict(self) -> dict[str, Any]:
        def nonzero(c: Counter[str]) -> dict[str, int]:
            return {k: n for k, n in c.items() if n}

        return {"calls": nonzero(self.calls), "cache_hits": nonzero(self.cache_hits),
                "failures": nonzero(self.failures), "prompt_tokens": nonzero(self.prompt_tokens),
                "max_prompt_tokens": nonzero(self.max_prompt_tokens), "max_calls": self.max_calls}


_session = Session()


def session() -> Session:
    return _session


def reset_session(max_calls: int | None = None, cache: ReplyCache | None = None) -> Session:
    global _session
    _session = Session(max_calls=max_calls, cache=cache)
    return _session


def merge_counts(parts: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Sum the per-stage counts of several workers' `Session.since()` (maxima for prompt sizes)."""
    out: dict[str, dict[str, int]] = {}
    for part in parts:
        for key, value in part.items():
            if not isinstance(value, dict):
                continue
            acc = out.setdefault(key, {})
            for stage, n in value.items():
                acc[stage] = max(acc.get(stage, 0), n) if key == "max_prompt_tokens" else acc.get(stage, 0) + n
    return out


def describe(llm: BaseChatModel | None) -> str:
    """The model as the Run records it: class and model name."""
    if llm is None:
        return "none"
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    return f"{type(llm).__name__}:{name}" if isinstance(name, str) and name else type(llm).__name__


def messages_tokens(messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> int:
    """The estimated prompt of these messages: texts, tool-call arguments, tool definitions."""
    total = sum(estimate_tokens(str(m.content)) + 4 for m in messages)
    total += sum(estimate_tokens(json.dumps(m.tool_calls, default=str)) for m in messages
                 if isinstance(m, AIMessage) and m.tool_calls)
    return total + (estimate_tokens(json.dumps(list(tools), default=str)) if tools else 0)


def chat_model_of(llm: Runnable[Any, Any]) -> tuple[Any, dict[str, Any]]:
    """The chat model inside a composed runnable (bound tools, structured output) and the
    keyword arguments bound to it."""
    kwargs: dict[str, Any] = {}
    node: Any = llm
    for _depth in range(8):
        if getattr(node, "bound", None) is not None:
            kwargs = {**(getattr(node, "kwargs", None) or {}), **kwargs}
            node = node.bound
        elif getattr(node, "first", None) is not None:  # a sequence: the model is its first step
            node = node.first
        elif isinstance(getattr(node, "steps__", None), dict) and "raw" in node.steps__:  # include_raw
            node = node.steps__["raw"]
        else:
            break
    return node, kwargs


def prompt_size(llm: Runnable[Any, Any], messages: Sequence[BaseMessage]) -> tuple[int, bool]:
    """(tokens, counted by the server) of the prompt `llm.invoke(messages)` would send."""
    model, kwargs = chat_model_of(llm)
    count = getattr(model, "count_request", None)
    if callable(count):
        n, counted = count(list(messages), **kwargs)
        return int(n), bool(counted)
    return messages_tokens(messages, kwargs.get("tools") or ()), False


# ------------------------------------------------------------------------------ providers
def configured_model(settings: Settings | None = None) -> BaseChatModel | None:
    """The configured chat model (None: no LLM), with this process's budget and reply cache set up."""
    s = settings or get_settings()
    spec = s.llm or s.llm_provider
    if not spec:
        return None
    if spec in ("openai", "ollama"):
        model = _openai_compatible(s, spec)
    elif ":" in spec:
        model = _from_factory(spec)
    else:
        raise ConfigError(f"DIBENCH_LLM={spec!r}: expected 'openai', 'ollama' or 'module:factory'")
    if _session.max_calls != s.llm_max_calls or (s.llm_cache and _session.cache is None):
        new_session(s)
    return model


def new_session(settings: Settings | None = None) -> Session:
    """A fresh session with the configured call budget and reply cache."""
    s = settings or get_settings()
    return reset_session(s.llm_max_calls, ReplyCache(s.llm_cache_dir or s.state_dir / "llm-cache") if s.llm_cache else None)


def _from_factory(spec: str) -> BaseChatModel:
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"DIBENCH_LLM={spec!r}: cannot import: {exc}") from exc
    model = factory()
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"DIBENCH_LLM={spec!r} did not return a langchain-core BaseChatModel")
    return model


def _openai_compatible(s: Settings, provider: str) -> BaseChatModel:
    try:
        from dibench.stores.llm_openai import compatible_chat_model
    except ImportError as exc:
        raise ConfigError(f"DIBENCH_LLM={provider} needs langchain-openai", hint="pip install 'dibench[openai]'") from exc
    base_url = s.llm_base_url or (OLLAMA_URL if provider == "ollama" else None)
    if not s.llm_model:
        raise ConfigError(f"DIBENCH_LLM={provider} needs DIBENCH_LLM_MODEL (the model name the server serves)")
    # Local servers ignore the key but the client insists on one.
    key = s.llm_api_key or os.environ.get("OPENAI_API_KEY") or ("ollama" if provider == "ollama" else "not-needed")
    return compatible_chat_model(base_url=base_url, model=s.llm_model, api_key=key, timeout_s=s.llm_timeout_s,
                                 max_tokens=s.llm_max_tokens, record=s.llm_record)


def model_id(llm: Runnable[Any, Any]) -> str:
    """A stable name of the model and its settings (bound tools included): the cache key's model part."""
    bound = getattr(llm, "bound", None)
    kwargs = getattr(llm, "kwargs", None)
    if bound is not None:
        return json.dumps([model_id(bound), kwargs], sort_keys=True, default=str)
    params = getattr(llm, "_identifying_params", None) or {}
    return json.dumps([type(llm).__name__, dict(params)], sort_keys=True, default=str)


# ------------------------------------------------------------------------------ one call
MIN_REPLY = 32  # fewer tokens left for a reply than this: the request is refused before it is sent


def call(llm: Runnable[Any, Any], messages: Sequence[BaseMessage], *, where: str, stage: str,
         settings: Settings | None = None, model_key: str | None = None, reply_tokens: int | None = None,
         min_reply: int = MIN_REPLY) -> AIMessage:
    """One model call: budget, cache, retry of transient errors, one-line failure (see module doc).
    `model_key` names the model for the cache when `llm` is a composed runnable (structured output).
    The reply may use `reply_tokens` (default DIBENCH_LLM_MAX_TOKENS), or what the context leaves
    after the prompt if less; a prompt leaving fewer than `min_reply` is a ContextOverflow."""
    s = settings or get_settings()
    sess = _session
    key = cache_key(model_key or model_id(llm), messages) if sess.cache is not None else None
    if sess.cache is not None and key is not None:
        hit = sess.cache.get(key)
        if hit is not None:
            sess.cache_hits[stage] += 1
            return hit
    if sess.max_calls is not None and sess.total_calls >= sess.max_calls:
        raise BudgetExhausted(f"{where}: LLM call budget of {sess.max_calls} exhausted")
    sess.calls[stage] += 1
    limits = RequestLimits(context=s.llm_context, max_reply=reply_tokens or s.llm_max_tokens,
                           min_reply=min(min_reply, reply_tokens or min_reply), where=where)
    estimate = messages_tokens(messages)
    token = llm_request.current.set(limits)
    try:
        reply = _invoke_with_retries(llm, list(messages), where=where, tokens=estimate, s=s)
    except LLMError:
        sess.failures[stage] += 1
        raise
    finally:
        llm_request.current.reset(token)
        tokens = limits.prompt_tokens if limits.prompt_tokens is not None else estimate
        sess.prompt_tokens[stage] += tokens
        sess.max_prompt_tokens[stage] = max(sess.max_prompt_tokens[stage], tokens)
        log.info("%s: %s prompt %s%d tokens, max_tokens %s", where, stage, "" if limits.counted else "~", tokens,
                 limits.reply_tokens)
    if sess.cache is not None and key is not None:
        sess.cache.put(key, reply)
    return reply


def was_cut(reply: BaseMessage) -> bool:
    """Whether the server stopped the reply at max_tokens."""
    meta = getattr(reply, "response_metadata", None) or {}
    return meta.get("finish_reason") == "length"


def _invoke_with_retries(llm: Runnable[Any, Any], messages: list[BaseMessage], *, where: str, tokens: int,
                         s: Settings) -> AIMessage:
    delay = s.llm_backoff_s
    for attempt in range(s.llm_retries + 1):
        try:
            out = llm.invoke(messages)
        except DibenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - narrowed by provider_error(), re-raised otherwise
            error = provider_error(exc, where=where, tokens=tokens, context=s.llm_context)
            if error is None:
                raise
            transient = not isinstance(error, ContextOverflow) and is_transient(exc)
            if not transient or attempt == s.llm_retries:
                error.transient = transient
                raise error from exc
            log.warning("%s (retry %d of %d in %.1fs)", error, attempt + 1, s.llm_retries, delay)
            time.sleep(delay)
            delay *= 2
            continue
        raw = out.get("raw") if isinstance(out, dict) else out
        if not isinstance(raw, AIMessage):
            raise LLMError(f"{where}: the model returned {type(raw).__name__}, not a chat message")
        return raw
    raise AssertionError("unreachable")  # pragma: no cover


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None:
        return status in (408, 409, 425, 429) or status >= 500
    # A timed-out request is not retried: the server was busy with this very prompt, and the same
    # request would take as long again (a local model at a few tokens per second).
    if is_timeout(exc):
        return False
    return "Connection" in type(exc).__name__ or isinstance(exc, ConnectionError)


def is_timeout(exc: BaseException) -> bool:
    return "Timeout" in type(exc).__name__ or isinstance(exc, TimeoutError)


def provider_error(exc: BaseException, *, where: str, tokens: int, context: int) -> LLMError | None:
    """The one-line LLMError for a provider exception; None when exc is not a provider's."""
    status = _status(exc)
    module = type(exc).__module__.split(".", 1)[0]
    if status is None and module not in _PROVIDER_MODULES and not isinstance(exc, (TimeoutError, ConnectionError)):
        return None
    detail = _detail(exc)
    code = f"HTTP {status}" if status is not None else type(exc).__name__
    if is_timeout(exc):
        return LLMError(f"{where}: LLM request timed out after DIBENCH_LLM_TIMEOUT_S={get_settings().llm_timeout_s:g}s "
                        f"({code}); not retried")
    if status in (400, 413, 422) and _OVERFLOW.search(detail):
        return ContextOverflow(f"{where}: the server refused a prompt of ~{tokens} tokens as too long for its "
                               f"context ({code}: {detail}); DIBENCH_LLM_CONTEXT={context}")
    return LLMError(f"{where}: LLM request failed ({code}: {detail})")


def _detail(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = str(message or exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line[:200]


# ------------------------------------------------------------------------------ structured replies
def text_of(message: BaseMessage) -> str:
    content: Any = message.content
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content)


def _reply_text(message: AIMessage) -> str:
    """The JSON a structured reply carries: the first tool call's arguments, else the text."""
    if message.tool_calls:
        return json.dumps(message.tool_calls[0]["args"])
    return text_of(message)


def parse_json_reply(text: str, model: type[M]) -> M:
    cleaned = _FENCE.sub("", text.strip()).strip()
    start = cleaned.find("{")
    end = cleaned.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    return model.model_validate(json.loads(cleaned[start:end + 1]))


def example_of(model: type[BaseModel]) -> dict[str, Any]:
    """One example object of `model`, built from its JSON schema (first choice of every union)."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})

    def build(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return build(defs[node["$ref"].rsplit("/", 1)[1]])
        for union in ("oneOf", "anyOf"):
            if union in node:
                options = [o for o in node[union] if o.get("type") != "null"]
                return build(options[0]) if options else None
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return node["enum"][0]
        if "default" in node and node["default"] is not None:
            return node["default"]
        kind = node.get("type")
        if kind == "object":
            return {k: build(v) for k, v in node.get("properties", {}).items()
                    if k in node.get("required", [])}
        if kind == "array":
            return [build(node.get("items", {}))]
        if kind == "boolean":
            return True
        if kind == "integer":
            return max(int(node.get("minimum", 0)), 1)
        if kind == "number":
            return 1.5
        text = node.get("description") or node.get("title") or "text"
        return text.ljust(int(node.get("minLength", 0)), ".")

    return dict(build(schema))


def shape_text(model: type[BaseModel], example: dict[str, Any] | None = None) -> str:
    return "Reply with one JSON object only, shaped like this example:\n" + json.dumps(
        example if example is not None else example_of(model), indent=None)


def structured_runnable(llm: BaseChatModel, model: type[BaseModel]) -> Runnable[Any, Any] | None:
    """The provider's structured-output path (JSON schema, else a forced tool call) when it has one.
    The raw reply is kept (include_raw) and parsed by us, so a bad reply gets the same feedback
    as on the plain path."""
    schema = model.model_json_schema()
    try:
        return llm.with_structured_output(schema, method="json_schema", include_raw=True)
    except NotImplementedError:
        return None
    except (TypeError, ValueError):
        pass  # this model's with_structured_output takes no `method`: try its default
    try:
        return llm.with_structured_output(schema, include_raw=True)
    except (NotImplementedError, TypeError, ValueError):
        return None


def ask_structured(llm: BaseChatModel, system: str, user: str, model: type[M], *, where: str, stage: str = "llm",
                   retries: int = 2, example: dict[str, Any] | None = None,
                   check: Callable[[M], list[str]] | None = None, reply_tokens: int | None = None,
                   min_reply: int = MIN_REPLY) -> M:
    """Ask for one JSON object valid as `model`: through the structured-output path when the model
    has one (falling back to plain text if the server refuses it), with one example of the shape in
    the prompt; a malformed reply, or one `check` finds problems with, is retried with its problems
    and the shape again, then fails as one ExtractionError line. A retry shows only the previous
    attempt (its reply and problems), so the prompt grows by one attempt at most; every attempt's
    prompt is counted against the context like the first (`call`)."""
    shape = shape_text(model, example)
    base: list[BaseMessage] = [SystemMessage(f"{system}\n\n{shape}"), HumanMessage(user)]
    messages = base
    runnable: Runnable[Any, Any] | None = structured_runnable(llm, model)
    last_error = ""
    structured_key = f"{model_id(llm)}|structured:{json.dumps(model.model_json_schema(), sort_keys=True)}"
    for _attempt in range(retries + 1):
        try:
            reply = call(runnable or llm, messages, where=where, stage=stage,
                         model_key=structured_key if runnable is not None else None, reply_tokens=reply_tokens,
                         min_reply=min_reply)
        except ContextOverflow:
            raise
        except LLMError as exc:
            if runnable is None or exc.transient or isinstance(exc, BudgetExhausted):
                raise
            # A server without JSON-schema or tool support answers 4xx: ask in plain text instead
            # (that refusal is not the item's failure).
            _session.failures[stage] -= 1
            runnable = None
            reply = call(llm, messages, where=where, stage=stage, reply_tokens=reply_tokens, min_reply=min_reply)
        try:
            parsed = parse_json_reply(_reply_text(reply), model)
            problems = check(parsed) if check is not None else []
            if not problems:
                return parsed
            last_error = "; ".join(problems)
        except ValidationError as exc:
            # Name each field and its problem: "1 validation error for X" alone tells the model nothing.
            last_error = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors())
        except ValueError as exc:
            last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if was_cut(reply):
            last_error = f"the reply was cut off at its token limit ({last_error})"
        messages = [*base, _as_plain(reply), HumanMessage(f"Your reply was not valid: {last_error}. {shape}")]
    _session.failures[stage] += 1
    raise ExtractionError(f"{where}: LLM reply malformed after {retries + 1} attempts: {last_error}")


def _as_plain(reply: AIMessage) -> AIMessage:
    """The reply shown back in a retry, as text: a tool call without its tool result would be refused."""
    return AIMessage(_reply_text(reply) or " ")
