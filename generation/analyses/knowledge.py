"""Knowledge retrieval: a substantive answer from the rule document itself, with the facts it
must include (effective date and the numbers the rule uses). No SQL. {"text", "must_include"}"""
from __future__ import annotations

import json
import re
from typing import Any

from generation.analyses import Outcome
from generation.grounding import Context
from generation.skeletons import Skeleton

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


def build(ctx: Context) -> Outcome | None:
    rule = ctx.skeleton.rules[0]
    doc = ctx.rule_docs.get(rule.id)
    if doc is None:
        return None
    effects = [e for e in rule.effects_json() if e.get("metric") == ctx.metric.id] or rule.effects_json()
    facts = [n for n in effect_numbers(effects) if n.lower() in doc.body.lower() or n.replace(".0", "") in doc.body]
    if not facts:
        facts = [doc.front.effective_date.isoformat()]
    answer = {"text": summary_text(doc.body), "must_include": facts}
    return Outcome(answer, {"text": "", "must_include": facts}, None, None, {}, {},
                   {"rule": rule.id, "title": doc.front.title, "effective_date": doc.front.effective_date.isoformat(),
                    "effects": json.dumps(effects)})
