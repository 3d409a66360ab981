"""The LLM adapter: any langchain-core chat model, chosen by configuration.

`DIBENCH_LLM_PROVIDER=module:factory` names a zero-argument callable returning a
`BaseChatModel` (e.g. a small wrapper around langchain-openai). With nothing configured,
every LLM-backed stage uses its deterministic default instead.
"""
from __future__ import annotations

import importlib
import json
import re
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from service.config import Settings, get_settings
from service.errors import ConfigError, ExtractionError

M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def configured_model(settings: Settings | None = None) -> BaseChatModel | None:
    spec = (settings or get_settings()).llm_provider
    if not spec:
        return None
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"DIBENCH_LLM_PROVIDER={spec!r}: cannot import: {exc}") from exc
    model = factory()
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"DIBENCH_LLM_PROVIDER={spec!r} did not return a langchain-core BaseChatModel")
    return model


def _text(message: BaseMessage) -> str:
    content: Any = message.content
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return str(content)


def parse_json_reply(text: str, model: type[M]) -> M:
    cleaned = _FENCE.sub("", text.strip()).strip()
    start = cleaned.find("{")
    end = cleaned.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    return model.model_validate(json.loads(cleaned[start:end + 1]))


def ask_structured(llm: BaseChatModel, system: str, user: str, model: type[M], *, where: str,
                   retries: int = 2) -> M:
    """Invoke llm and validate its JSON reply as `model`; retry with the error, then fail clearly."""
    messages: list[BaseMessage] = [SystemMessage(system), HumanMessage(user)]
    last_error = ""
    for _attempt in range(retries + 1):
        reply = llm.invoke(messages)
        text = _text(reply)
        try:
            return parse_json_reply(text, model)
        except ValidationError as exc:
            # Name each field and its problem: "1 validation error for X" alone tells the model nothing.
            last_error = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors())
        except ValueError as exc:
            last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        messages = [*messages, reply, HumanMessage(
            f"Your reply was not valid: {last_error}. Reply with one JSON object only, matching the schema.")]
    raise ExtractionError(f"{where}: LLM reply malformed after {retries + 1} attempts: {last_error}")
