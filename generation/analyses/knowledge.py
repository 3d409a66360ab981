"""Knowledge retrieval: a substantive answer from the rule document itself, with the facts it
must include (effective date and the numbers the rule uses). No SQL. {"text", "must_include"}"""
from __future__ import annotations

import json
import re
from typing import Any

from dibench.core.contracts import fact_found
from dibench.generation.analyses.base import Outcome
from dibench.generation.grounding import Context
from dibench.generation.skeletons import Skeleton

NAME = "knowledge_retrieval"
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def compatible(sk: Skeleton) -> bool:
    return bool(sk.rules)


def effect_numbers(effects: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for e in effects:
        for k in ("value", "min_n"):
            if isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool):
                out.append(f"{e[k]:g}")
        for k in ("predicate", "weight", "expression"):
            if isinstance(e.get(k), str):
                out += [n for n in _NUMBER.findall(e[k]) if n not in ("0", "1", "100", "100.0")]
        if e.get("applies_when"):
            out.append(str(e["applies_when"]["value"]))
        if e.get("from_date"):
            out.append(str(e["from_date"]))
    seen: list[str] = []
    for x in out:
        if x not in seen:
            seen.append(x)
    return seen[:4]


def summary_text(body: str, limit: int = 600) -> str:
    """The first substantive paragraph(s) of the document, headings removed."""
    paras = [p.strip() for p in body.split("\n\n") if p.strip() and not p.strip().startswith("#")]
    text = ""
    for p in paras:
        text = (text + " " + p).strip()
        if len(text) >= 200:
            break
    return text[:limit]


def document_facts(effects: list[dict[str, Any]], doc: Any) -> list[str]:
    """The effect's values that the document states, matched as the scorer matches them (numbers
    numerically: "2000" is stated by "2,000"); else its effective date (part of the document an
    agent retrieves)."""
    facts = [n for n in effect_numbers(effects) if fact_found(n, doc.body)]
    return facts or [doc.front.effective_date.isoformat()]


def answer_text(doc: Any, facts: list[str]) -> str:
    """A summary of the document that states every must-include fact, so that the gold answer
    passes its own check: the summary, then the first passage stating each fact not yet in it."""
    text = summary_text(doc.body)
    passages = [p.strip().lstrip("#").strip() for p in doc.body.split("\n\n") if p.strip()]
    for fact in facts:
        if fact_found(fact, text):
            continue
        stated = next((p for p in passages if fact_found(fact, p)), None)
        text += " " + (stated if stated is not None else f"The policy is effective from {fact}.")
    return text


def build(ctx: Context) -> Outcome | None:
    rule = ctx.skeleton.rules[0]
    doc = ctx.rule_docs.get(rule.rule_id)
    if doc is None:
        return None
    effects = [e for e in rule.effects_json() if e.get("metric") == ctx.metric.id] or rule.effects_json()
    facts = document_facts(effects, doc)
    answer = {"text": answer_text(doc, facts), "must_include": facts}
    return Outcome(answer, {"text": "", "must_include": facts}, None, None, {}, {},
                   {"rule": rule.rule_id, "title": doc.front.title, "effective_date": doc.front.effective_date.isoformat(),
                    "effects": json.dumps(effects)})
