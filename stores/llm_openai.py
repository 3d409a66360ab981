"""The OpenAI-compatible chat model (the `openai` extra: langchain-openai).

Imported only when `DIBENCH_LLM=openai|ollama` is set (stores.llm turns a missing package into
a ConfigError). Small local servers (llama.cpp, llama-cpp-python, some Ollama versions) reject an
assistant message whose content is null, which langchain-openai sends for a turn that only calls
tools; they get an empty string instead. Retries are ours (stores.llm.call): the client makes none.
"""
from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_openai import ChatOpenAI


class CompatibleChatOpenAI(ChatOpenAI):
    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        for message in payload.get("messages", []):
            if message.get("content") is None:
                message["content"] = ""
        return payload


def compatible_chat_model(*, base_url: str | None, model: str, api_key: str, timeout_s: float) -> BaseChatModel:
    return CompatibleChatOpenAI(model=model, base_url=base_url, api_key=api_key,  # type: ignore[arg-type]
                                timeout=timeout_s, max_retries=0, temperature=0.0)
