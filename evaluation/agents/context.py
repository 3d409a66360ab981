"""Keeping an agent's conversation inside the model's context window.

Before each model call the prompt is measured as the server will see it (its tokenizer where it
has one, tool definitions and call arguments included: `stores.llm.prompt_size`). While the prompt
and the reply's reserve exceed the context, the oldest tool result not yet trimmed is cut to its
opening (the call that produced it stays, so the model can run it again); the newest result is
cut last, and only as far as needed. The system prompt, the question and the model's own turns
are never touched.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import Runnable

from dibench.stores.llm import prompt_size

TRIMMED = "[trimmed to fit the context"
KEEP_CHARS = 240  # of an older result: enough for its columns or its first hit


def trimmed(text: str, keep: int) -> str:
    return f"{text[:keep]} {TRIMMED}: {len(text) - keep} more characters; call the tool again if you need them]"


def fit_context(llm: Runnable[Any, Any], messages: list[BaseMessage], *, context: int, reserve: int) -> int:
    """Trim tool results in place until the prompt leaves `reserve` tokens of `context`; the number
    of results trimmed. It may still not fit (then the call is refused with a clear line)."""
    size, _counted = prompt_size(llm, messages)
    done = 0
    for i in _tool_indexes(messages):
        if size + reserve <= context:
            break
        msg = messages[i]
        text = str(msg.content)
        newest = i == _last_tool(messages)
        if newest:
            # Cut the newest result just enough (estimating ~4 characters per token), not to its opening.
            keep = max(KEEP_CHARS, len(text) - 4 * (size + reserve - context) - 200)
        else:
            keep = KEEP_CHARS
        if keep >= len(text):
            continue
        messages[i] = ToolMessage(trimmed(text, keep), tool_call_id=getattr(msg, "tool_call_id", ""))
        done += 1
        size, _counted = prompt_size(llm, messages)
    return done


def _tool_indexes(messages: Sequence[BaseMessage]) -> list[int]:
    return [i for i, m in enumerate(messages) if isinstance(m, ToolMessage) and TRIMMED not in str(m.content)]


def _last_tool(messages: Sequence[BaseMessage]) -> int:
    found = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    return found[-1] if found else -1
