"""Word a validated contract as a request: a deterministic template by default, an LLM optionally.

The LLM only rephrases the template text; its reply is checked like any other wording (the
Validator's wording check), and a rejected reply leaves the template wording in place.
"""
from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import Field

from routing.errors import ContractInvalid
from routing.models import Contract, Strict
from routing.validate import Validator
from service.errors import ExtractionError
from service.llm import ask_structured

TEMPLATE_VERSION = "template/v1"


def _clause(text: str) -> str:
    return text.strip().rstrip(".?! ")


def _numbered(intents: list[str]) -> str:
    return " ".join(f"({i}) {_clause(t)}." for i, t in enumerate(intents, 1))


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def template_request(c: Contract) -> str:
    units = c.branches[0].units
    if c.behaviour == "single":
        return units[0].intent.strip()
    if c.behaviour == "parallel":
        return "I need several independent answers. " + _numbered([u.intent for u in units])
    if c.behaviour == "sequential":
        edge = c.branches[0].edges[0]
        by_id = {u.unit_id: u for u in units}
        up, down = by_id[edge.source_unit], by_id[edge.target_unit]
        return (f"First: {_clause(up.intent)}. Then, using the {edge.binding.upstream_column} found in the "
                f"first step: {_clause(down.intent)}.")
    if c.behaviour == "exploratory":
        return (f"I am exploring data on {_listing(c.capabilities)}. Find the fewest sources that together cover "
                f"all of these, and from them answer: " + _numbered([u.intent for u in units]))
    if c.behaviour == "interactive":
        return units[0].intent.strip()
    raise AssertionError(f"unhandled behaviour {c.behaviour}")


class RenderedRequest(Strict):
    request: str = Field(min_length=1)


_SYSTEM = ("You rephrase a data request so it reads like a business user wrote it. Keep every piece of "
           "information it asks for, add none, name no database, and do not add any value that is not in it. "
           'Reply with one JSON object: {"request": "..."}.')


def render(c: Contract, validator: Validator, llm: BaseChatModel | None = None) -> Contract:
    """A copy of c with `request` and `renderer` set; the template wording if the LLM's is rejected."""
    text = template_request(c)
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
