"""Word a validated contract as a request: a deterministic template by default, an LLM optionally.

The LLM only rephrases the template text; its reply is checked like any other wording (the
Validator's wording check), and a rejected reply leaves the template wording in place.
"""
from __future__ import annotations

import random

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import Field

from dibench.core.errors import ExtractionError
from dibench.routing.errors import ContractInvalid
from dibench.routing.models import Contract, Strict
from dibench.routing.validate import Validator
from dibench.stores.llm import ask_structured

TEMPLATE_VERSION = "template/v2"

# Every multi-part request (parallel, sequential, exploratory) draws its topic line, connectives and
# closing from the SAME pools, so the wording's layout says nothing about the behaviour, the number of
# sources or a binding: only what is asked does. No numbering, no "fewest sources", no column named.
TOPICS = ("I am looking into {topics}.", "This is about {topics}.", "Some questions on {topics}:",
          "Questions touching {topics}.", "Context: {topics}.", "Working on {topics} today.")
JOINERS = (" ", " Also, ", " And ", " Next, ", " Besides that, ", " Plus: ", " Then ", " Separately, ",
           " On top of that, ", "; ", ", and ")
CLOSINGS = ("", "", " Thanks.", " Please keep the answers short.", " That is all I need.")


def _clause(text: str) -> str:
    return text.strip().rstrip(".?! ")


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _joined(asks: list[str], rng: random.Random) -> str:
    """The asks as running text; each ends as a question or a statement at random (no signal either way)."""
    out = ""
    for i, ask in enumerate(_clause(a) for a in asks):
        joiner = rng.choice(JOINERS) if i else ""
        if joiner in ("; ", ", and "):
            out = out[:-1]  # the joiner replaces the previous ask's end mark
        lower = joiner in (" And ", " Then ", "; ", ", and ") or joiner.endswith(", ")  # mid-sentence
        out += joiner + (ask[0].lower() if lower else ask[0].upper()) + ask[1:] + rng.choice(("?", ".", "?"))
    return out


def _topics(c: Contract, topics_of: dict[str, list[str]], rng: random.Random) -> list[str]:
    if c.capabilities:
        topics = list(c.capabilities)
    else:
        topics = sorted({t for u in c.branches[0].units for t in topics_of.get(u.unit_id, [])})[:4]
    rng.shuffle(topics)
    return topics


def template_request(c: Contract, topics_of: dict[str, list[str]] | None = None) -> str:
    """The request of c, worded from seeded random choices (the same contract always reads the same)."""
    rng = random.Random(f"{c.seed}:{c.task_id}:wording")
    units = c.branches[0].units
    if c.behaviour in ("single", "interactive"):
        return units[0].intent.strip()
    intents = [u.intent for u in units]
    if c.behaviour != "sequential":
        rng.shuffle(intents)  # independent asks: their order is free; a sequential chain keeps its order
    topics = _topics(c, topics_of or {}, rng)
    # exploratory requests must name their capabilities; the others name their topics just the same
    topic = rng.choice(TOPICS) if topics else ""
    text = _joined(intents, rng) + rng.choice(CLOSINGS)
    return (topic.format(topics=_listing(topics)) + " " + text).strip()


class RenderedRequest(Strict):
    request: str = Field(min_length=1)


_SYSTEM = ("You rephrase a data request so it reads like a business user wrote it. Keep every piece of "
           "information it asks for, add none, name no database, and do not add any value that is not in it. "
           'Reply with one JSON object: {"request": "..."}.')


def render(c: Contract, validator: Validator, llm: BaseChatModel | None = None) -> Contract:
    """A copy of c with `request` and `renderer` set; the template wording if the LLM's is rejected."""
    text = template_request(c, validator.topics(c))
    worded = c.model_copy(update={"request": text, "renderer": TEMPLATE_VERSION})
    validator.validate_wording(worded)
    if llm is None:
        return worded
    try:
        reply = ask_structured(llm, _SYSTEM, text, RenderedRequest, where=f"routing request {c.task_id}")
        candidate = c.model_copy(update={"request": reply.request.strip(), "renderer": f"llm:{type(llm).__name__}"})
        validator.validate_wording(candidate)
        return candidate
    except (ExtractionError, ContractInvalid) as exc:
        return worded.model_copy(update={"renderer": f"{TEMPLATE_VERSION} (llm wording rejected: {exc})"})
