"""Rule extraction: a rule document's structured effects, from front matter or from an LLM."""
from __future__ import annotations

import json

from langchain_core.language_models.chat_models import BaseChatModel

from ingest.pack import Pack, RuleDoc, _rel
from service.llm import ask_structured
from service.models import LLMEffects

PROMPT_VERSION = "extract-effects/1"

SYSTEM = (
    "You turn a business rule document into structured SQL operations on metric definitions. "
    "Reply with one JSON object {\"effects\": [...]} and nothing else. Each effect has `metric` (a metric id "
    "from the catalog), `op` (where | exclude | having | threshold | weight | override | suppress) and the "
    "op's fields: where/exclude/having: predicate (SQL boolean over the metric's table aliases); threshold: "
    "param, value; weight: weight (SQL expression); override: expression; suppress: min_n, count. Optional "
    "`applies_when` {dimension: table.column, value} when the rule applies only to one dimension value, and "
    "`from_date` (YYYY-MM-DD) when it applies from a date on. Only list metrics whose computed value the "
    "document changes."
)


def catalog_prompt(pack: Pack) -> str:
    items = [{"id": m.id, "name": m.name, "sql": m.sql, "params": m.params, "dimensions": m.dimensions,
              "time_column": m.time_column} for m in pack.metrics]
    return json.dumps(items, indent=1)


def extract_effects(doc: RuleDoc, pack: Pack, llm: BaseChatModel, retries: int = 2) -> LLMEffects:
    user = (f"Metric catalog:\n{catalog_prompt(pack)}\n\nRule document {doc.id} ({doc.front.title}), "
            f"type {doc.front.rule_type.value}:\n\n{doc.body}")
    result = ask_structured(llm, SYSTEM, user, LLMEffects, where=f"{_rel(doc.path)}: effects", retries=retries)
    unknown = [e.metric for e in result.effects if e.metric not in pack.metric_by_id]
    if unknown:
        from service.errors import ExtractionError

        raise ExtractionError(f"{_rel(doc.path)}: effects: LLM named unknown metric(s) {unknown}")
    return result
