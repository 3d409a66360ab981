"""What bounds one model request, and how a model call fails.

`stores.llm.call` sets the request's limits (context window, the stage's reply limit, the least
reply worth asking for) for the duration of one call; the OpenAI-compatible client
(`stores.llm_openai`) reads them where the exact request body exists, counts that prompt with the
server's own tokenizer when the server has one (else estimates it, tool definitions and call
arguments included), sets `max_tokens` to what the context leaves (never more than the stage's
limit), and refuses a prompt that leaves too little before it is sent.
"""
from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass

from dibench.core.errors import DibenchError


class LLMError(DibenchError):
    """A model call failed for good (after retries where the error is transient)."""

    hint = "see README: LLM stages (DIBENCH_LLM, DIBENCH_LLM_BASE_URL, DIBENCH_LLM_MODEL, DIBENCH_LLM_CONTEXT)"
    transient = False  # a 5xx, 429 or lost connection that outlasted the retries (vs. a refusal of this request)


class ContextOverflow(LLMError):
    """The prompt does not fit the context window with room for a reply (refused by us or by the server)."""


@dataclass
class RequestLimits:
    context: int          # the model's context window, tokens
    max_reply: int        # the stage's reply limit, tokens
    min_reply: int        # a reply needs at least this many tokens to be of use
    where: str = ""       # the item, for error lines
    prompt_tokens: int | None = None  # set by the client: the prompt it sent
    counted: bool = False             # ... as counted by the server's tokenizer (else estimated)
    reply_tokens: int | None = None   # set by the client: the max_tokens it sent

    def reply_room(self, prompt_tokens: int, counted: bool) -> int:
        """max_tokens for a prompt of this size; ContextOverflow when less than min_reply is left."""
        self.prompt_tokens, self.counted = prompt_tokens, counted
        room = self.context - prompt_tokens
        if room < self.min_reply:
            how = "counted by the server" if counted else "estimated"
            raise ContextOverflow(f"{self.where}: the prompt has {prompt_tokens} tokens ({how}), which leaves "
                                  f"{max(room, 0)} of DIBENCH_LLM_CONTEXT={self.context} for the reply; "
                                  f"it needs at least {self.min_reply}")
        self.reply_tokens = min(self.max_reply, room)
        return self.reply_tokens


current: ContextVar[RequestLimits | None] = ContextVar("dibench_llm_limits", default=None)


def estimate_tokens(text: str) -> int:
    """Tokens of a prompt without a tokenizer: ~4 characters per token for English, JSON and SQL
    (the common BPE vocabularies land between 3.5 and 4.5 on such text)."""
    return math.ceil(len(text) / 4)
