"""Knowledge retrieval: an answer from the rule document itself (its sentences stating the facts,
whole), with the facts it must include: what the rule sets (threshold, weight or cap values, the minimum group size, the
slice of a conditional rule, the date of effect of a temporal rule), as far as the document
states them; and the numbers and dates its sources state (`sources_state`: an answer stating
many others is a list of guesses, core/contracts.py). No SQL. {"text", "must_include", "sources_state"}"""
from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dibench.core.errors import RewriteError
from dibench.core.facts import fact_found, renderings, stated
from dibench.core.models import MetricSpec
from dibench.generation.analyses.base import Outcome
from dibench.generation.grounding import Context
from dibench.generation.skeletons import Skeleton
from dibench.sqlops.dialect import parse_expression

NAME = "knowledge_retrieval"
MAX_FACTS = 4
# Literals that set nothing a reader looks for: an identity weight, a zero, a percent scale.
NEUTRAL = frozenset({Decimal(0), Decimal(1), Decimal(100)})


def compatible(sk: Skeleton) -> bool:
    return bool(sk.rules)


def _number_text(v: Any) -> str:
    return format(Decimal(str(v)).normalize(), "f")


def _parsed(expression: str) -> exp.Expression | None:
    try:
        return parse_expression(expression, where="knowledge facts")
    except RewriteError:
        return None


def literal_values(expression: str, predicate: bool = False) -> list[str]:
    """The values a document's SQL expression writes: strings, and numbers (in a weight or a
    formula not 0, 1 or 100, which set nothing a reader looks for; in a predicate every number,
    `amount = 0` sets 0); a median for a 0.5 percentile."""
    tree = _parsed(expression)
    if tree is None:
        return []
    out = []
    for lit in tree.find_all(exp.Literal):
        if isinstance(lit.parent, exp.Interval) and str(lit.this).strip() == "1":
            continue  # INTERVAL '1 day' is a unit (days), not a value
        if isinstance(lit.parent, (exp.PercentileCont, exp.PercentileDisc)) and Decimal(str(lit.this)) == Decimal("0.5"):
            out.append("median")
        elif lit.is_string:
            if str(lit.this).strip():
                out.append(str(lit.this))
        elif predicate or Decimal(str(lit.this)) not in NEUTRAL:
            out.append(_number_text(lit.this))
    return out


def flag_names(predicate: str) -> list[str]:
    """The yes/no columns a predicate tests as they stand ("t.is_spam OR c.is_internal" tests
    spam and internal), or tests for a missing value (`r.return_date IS NULL`): what such a rule
    sets is which flags exclude or keep a row."""
    tree = _parsed(predicate)
    if tree is None:
        return []
    out = []
    for col in tree.find_all(exp.Column):
        parent = col.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if parent is None or isinstance(parent, (exp.And, exp.Or, exp.Not, exp.Is)):
            name = col.name
            for prefix in ("is_", "has_"):
                name = name[len(prefix):] if name.startswith(prefix) else name
            out.append(name.replace("_", " "))
    return out


def new_columns(expression: str, metric_sql: str | None) -> list[str]:
    """The columns a formula (override, adjustment, weight) reads that the metric's own SQL does
    not: what it brings in ("LEAST(p.amount, f.rental_rate)" brings in the rental rate)."""
    tree, own = _parsed(expression), _parsed(f"({metric_sql})") if metric_sql else None
    if tree is None:
        return []
    known = {c.name for c in own.find_all(exp.Column)} if own is not None else set()
    return [c.name.replace("_", " ") for c in tree.find_all(exp.Column) if c.name not in known]


def effect_facts(effects: list[dict[str, Any]], temporal: bool, metric_sql: str | None = None) -> list[str]:
    """What the effects set, each once, in order: the threshold value, the minimum group size, the
    values written in predicates, weights and expressions (the flags a predicate tests, the
    columns a formula brings in), the slice value of `applies_when`, and (only for a temporal
    rule) the `from_date`."""
    out: list[str] = []
    for e in effects:
        if e.get("op") == "threshold" and e.get("value") is not None:
            v = e["value"]
            out.append(_number_text(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v))
        if e.get("op") == "suppress" and e.get("min_n") is not None:
            out.append(str(e["min_n"]))
        if isinstance(e.get("predicate"), str):
            out += literal_values(e["predicate"], predicate=True) + flag_names(e["predicate"])
        for k in ("weight", "expression"):
            if isinstance(e.get(k), str):
                out += literal_values(e[k]) + new_columns(e[k], metric_sql)
        if e.get("applies_when"):
            out.append(str(e["applies_when"]["value"]))
        if temporal and e.get("from_date"):
            out.append(str(e["from_date"]))
    return list(dict.fromkeys(out))


def document_facts(effects: list[dict[str, Any]], doc: Any, temporal: bool, metric_sql: str | None = None) -> list[str]:
    """The effects' facts that the document states (in any rendering: "three" states 3), at most
    MAX_FACTS; none when it states none of them (no scorable task: an effective date or a lone
    digit would not need the rule)."""
    return [f for f in effect_facts(effects, temporal, metric_sql) if fact_found(f, doc.body)][:MAX_FACTS]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])")


def sentences(body: str) -> list[str]:
    """The document's sentences, whole, in order: each heading is one, each paragraph is split
    after a full stop, question or exclamation mark followed by a capital or a digit."""
    out = []
    for block in body.split("\n\n"):
        block = " ".join(block.split())
        if block.startswith("#"):
            out.append(block.lstrip("#").strip())
        elif block:
            out += [x.strip() for x in _SENTENCE_END.split(block) if x.strip()]
    return out


def answer_text(doc: Any, facts: list[str]) -> str:
    """The reference answer: for each must-include fact, the first whole sentence of the document
    stating it, each sentence once, in the document's order. It states what is asked and little
    else, so an answer is compared with an answer, not with a summary of the whole document."""
    body = sentences(doc.body)
    picked: set[int] = set()
    for fact in facts:
        # a fact a full stop cuts in two ("SANKC. UROK") is stated by the sentences around it
        for span in (1, 2, 3):
            at = next((i for i in range(len(body) - span + 1) if fact_found(fact, " ".join(body[i:i + span]))), None)
            if at is not None:
                picked.update(range(at, at + span))
                break
    return " ".join(body[i] for i in sorted(picked))


def metric_text(m: MetricSpec) -> str:
    """What the metric's catalog entry says (as the knowledge base shows it to an agent)."""
    return "\n".join(str(x) for x in (m.id, m.name, f"tier {m.tier}", m.description, m.formula, m.unit,
                                      f"{m.rounding} decimals", m.target if m.target is not None else "",
                                      json.dumps(m.params), m.sql or "", " ".join(m.dimensions)))


def document_text(doc: Any) -> str:
    f = doc.front
    return f"{f.id}\n{f.title}\n{f.owner}\nversion {f.version}\n{f.effective_date.isoformat()}\n{doc.body}"


def sources_state(ctx: Context) -> list[str]:
    """Every number and date the task's sources state: the metric's catalog entry and the
    documents of its policy (the featured one among them)."""
    texts = [metric_text(ctx.metric)]
    ids = list(dict.fromkeys([r.rule_id for r in ctx.skeleton.rules] + [r.rule_id for r in ctx.skeleton.policy]))
    texts += [document_text(ctx.rule_docs[r]) for r in ids if r in ctx.rule_docs]
    return sorted(renderings([v for t in texts for v in stated(t)]))


def natural(column: str) -> str:
    """A column as words: "countries.country_name" -> "country", "o.is_test" -> "is test"."""
    name = column.rsplit(".", 1)[-1]
    for suffix in ("_name", "_id", "_code"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name.replace("_", " ")


def expression_columns(text: str) -> list[str]:
    try:
        tree = parse_expression(text, where="knowledge question")
    except RewriteError:
        return []
    return list(dict.fromkeys(natural(c.name) for c in tree.find_all(exp.Column)))


def topic(effects: list[dict[str, Any]], temporal: bool) -> dict[str, Any]:
    """What a knowledge question asks about, without naming the document: the kind of change the
    first effect makes, the columns it reads, and whether it concerns one slice or a date."""
    e = effects[0]
    op = str(e.get("op"))
    cols: list[str] = []
    for k in ("predicate", "weight", "expression"):
        if isinstance(e.get(k), str):
            cols += expression_columns(e[k])
    if op == "adjust":
        cols = [natural(str(e["column"]))]
    if op == "threshold":
        cols = [str(e["param"]).replace("_", " ")]
    when = e.get("applies_when")
    return {"op": op, "columns": list(dict.fromkeys(cols))[:2],
            "slice": natural(str(when["dimension"])) if when else None,
            "dated": bool(temporal and any(x.get("from_date") for x in effects))}


def build(ctx: Context) -> Outcome | None:
    rule = ctx.skeleton.rules[0]
    doc = ctx.rule_docs.get(rule.rule_id)
    if doc is None:
        return None
    effects = [e for e in rule.effects_json() if e.get("metric") == ctx.metric.id] or rule.effects_json()
    temporal = rule.rule_type == "temporal"
    about = topic(effects, temporal)
    # A fact the question names (the flags or slice it asks about) is no evidence of retrieval.
    named = [w for w in [*about["columns"], about["slice"]] if w]
    facts = [f for f in document_facts(effects, doc, temporal, ctx.metric.sql)
             if not any(fact_found(f, w) for w in named)]
    if not facts:
        return None
    answer = {"text": answer_text(doc, facts), "must_include": facts, "sources_state": sources_state(ctx)}
    return Outcome(answer, {"text": "", "must_include": facts}, None, None, {}, {},
                   {"rule": rule.rule_id, "title": doc.front.title, "effective_date": doc.front.effective_date.isoformat(),
                    "effects": json.dumps(effects), "topic": about})
