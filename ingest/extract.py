"""Rule extraction: a rule document's structured effects, from front matter or from an LLM.

The prompt is bounded (`DIBENCH_LLM_CONTEXT`): it carries only candidate metrics, best first,
as many as fit, selected through the graph (cypher/extract_candidates.cypher): metrics the
document names or ids, then metrics whose READS edges reach the tables or columns it names, then
metrics lexically closest to it; and the columns of the tables those metrics read. So the
domain's metric/table part must be in the graph first: `ingest_pack` writes it before it extracts. An
extracted effect is checked like a front-matter effect (`dibench domain validate`: its metric,
expressions, columns and the rewrite itself) before it is accepted; a reply with problems is
retried with them, then the document fails alone.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import ValidationError

from dibench.core.config import get_settings
from dibench.core.errors import ExtractionError
from dibench.core.models import LLMEffects, MetricSpec, RuleFrontMatter
from dibench.core.pack import Pack, RuleDoc, _rel
from dibench.ingest.catalog import metric_tables
from dibench.ingest.validate import effect_problems
from dibench.stores.graph import Graph
from dibench.stores.llm import ask_structured, estimate_tokens, shape_text

PROMPT_VERSION = "extract-effects/2"
REPLY_TOKENS = 600  # kept free for the reply: a few effects of JSON

SYSTEM = (
    "You turn a business rule document into structured SQL operations on metric definitions. "
    "Reply with one JSON object {\"effects\": [...]} and nothing else. Each effect has `metric` (a metric id "
    "from the candidates), `op` (where | exclude | having | threshold | weight | override | suppress) and the "
    "op's fields: where/exclude/having: predicate (SQL boolean over the metric's table aliases); threshold: "
    "param, value; weight: weight (SQL expression); override: expression; suppress: min_n, count. Optional "
    "`applies_when` {dimension: table.column, value} when the rule applies only to one dimension value, and "
    "`from_date` (YYYY-MM-DD) when it applies from a date on. Use only the listed columns, through the "
    "aliases of the metric's SQL. Only list metrics whose computed value the document changes; an empty "
    "list is a valid answer."
)
EXAMPLE = {"effects": [{"metric": "M-001", "op": "exclude", "predicate": "t.channel = 'test'"},
                       {"metric": "M-002", "op": "threshold", "param": "sla_hours", "value": 48}]}
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
_STOP = frozenset("the and for with that this are from not was were has have our all any per each its".split())


@dataclass(frozen=True)
class Candidate:
    metric: MetricSpec
    reason: str  # named | reads | similar
    score: tuple[int, int, float]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _mentions(text: str, name: str) -> bool:
    """Whether `name` (a table or column) appears in text, as written or in words (refund_type ~ refund type)."""
    pattern = r"\b" + re.escape(name.lower()).replace("_", "[ _]") + r"s?\b"
    return re.search(pattern, text) is not None


def doc_text(doc: RuleDoc) -> str:
    return f"{doc.front.title}\n{doc.body}".lower()


def mentioned_names(text: str, graph: Graph, domain: str) -> list[str]:
    """The domain's table and column names (from its Table nodes) that `text` mentions."""
    rows = graph.read("extract_schema_names", domain=domain)
    names = {r["name"] for r in rows} | {c for r in rows for c in r["columns"]}
    return sorted(n for n in names if _mentions(text, n))


def rank_metrics(doc: RuleDoc, pack: Pack, graph: Graph) -> list[Candidate]:
    """The domain's metrics in the graph, best candidate first (see the module docstring). A metric
    the graph holds but the pack no longer defines is left out: there is nothing to show of it."""
    text = doc_text(doc)
    doc_words = _words(text)
    rows = graph.read("extract_candidates", domain=pack.name, text=text,
                      names=mentioned_names(text, graph, pack.name))
    if not rows:
        raise ExtractionError(f"{_rel(doc.path)}: effects: the graph holds no metric of domain {pack.name!r} "
                              f"to extract effects on", hint=f"dibench ingest {pack.root}")
    out = []
    for r in rows:
        m = pack.metric_by_id.get(r["id"])
        if m is None:
            continue
        own = _words(r["words"])
        similar = len(own & doc_words) / (len(own) or 1)
        reason = "named" if r["named"] else "reads" if r["reads"] else "similar"
        out.append(Candidate(m, reason, (int(r["named"]), int(r["reads"]), similar)))
    return sorted(out, key=lambda c: (-c.score[0], -c.score[1], -c.score[2], c.metric.id))


def _metric_item(m: MetricSpec) -> dict[str, object]:
    return {"id": m.id, "name": m.name, "sql": m.sql, "params": m.params, "dimensions": m.dimensions,
            "time_column": m.time_column}


def _tables_of(pack: Pack, metrics: list[MetricSpec]) -> set[str]:
    return {t for m in metrics for t in metric_tables(pack, m)}


def user_prompt(doc: RuleDoc, pack: Pack, metrics: list[MetricSpec], columns: dict[str, dict[str, str]]) -> str:
    tables = {t: sorted(columns[t]) for t in sorted(_tables_of(pack, metrics)) if t in columns}
    return (f"Candidate metrics:\n{json.dumps([_metric_item(m) for m in metrics], separators=(',', ':'))}\n\n"
            f"Columns of their tables:\n{json.dumps(tables, separators=(',', ':'))}\n\n"
            f"Rule document {doc.id} ({doc.front.title}), type {doc.front.rule_type.value}:\n\n{doc.body}")


def bounded_prompt(doc: RuleDoc, pack: Pack, graph: Graph, columns: dict[str, dict[str, str]],
                   context: int) -> tuple[str, str, list[MetricSpec]]:
    """(system, user, metrics sent): the most candidate metrics whose prompt fits `context` tokens
    with REPLY_TOKENS left for the reply. Raises ExtractionError if not even one fits."""
    system = SYSTEM
    # ask_structured appends the shape to the system prompt: count it here.
    fixed = estimate_tokens(f"{SYSTEM}\n\n{shape_text(LLMEffects, EXAMPLE)}")
    budget = context - REPLY_TOKENS - fixed
    chosen: list[MetricSpec] = []
    user = ""
    first = 0
    for cand in rank_metrics(doc, pack, graph):
        trial = user_prompt(doc, pack, [*chosen, cand.metric], columns)
        first = first or estimate_tokens(trial)
        if estimate_tokens(trial) > budget:
            break  # later candidates rank lower: an earlier one never gives way to them
        chosen.append(cand.metric)
        user = trial
    if not chosen:
        raise ExtractionError(f"{_rel(doc.path)}: effects: the document with its best candidate metric needs "
                              f"~{first + fixed + REPLY_TOKENS} tokens, more than DIBENCH_LLM_CONTEXT={context}")
    return system, user, chosen


def extraction_problems(doc: RuleDoc, pack: Pack, columns: dict[str, dict[str, str]], sent: list[MetricSpec],
                        result: LLMEffects) -> list[str]:
    """What `dibench domain validate` would say about these effects in the document's front matter."""
    allowed = {m.id for m in sent}
    out = []
    for j, eff in enumerate(result.effects):
        if eff.metric not in allowed:
            out.append(f"effects.{j}.metric: {eff.metric!r} is not one of the candidate metrics")
            continue
        out += [f"effects.{j}.{f}: {p}" if f else f"effects.{j}: {p}"
                for f, p in effect_problems(pack, eff, columns, doc.id, f"effects.{j}.")]
    if not out and result.effects:
        try:
            RuleFrontMatter.model_validate({**doc.front.model_dump(exclude={"effects"}),
                                            "effects": [e.model_dump() for e in result.effects]})
        except ValidationError as exc:
            out += [e["msg"].removeprefix("Value error, ") for e in exc.errors()]
    return out


def extract_effects(doc: RuleDoc, pack: Pack, llm: BaseChatModel, graph: Graph,
                    columns: dict[str, dict[str, str]] | None = None, retries: int = 2,
                    context: int | None = None) -> LLMEffects:
    """The document's effects from the model. The graph must hold the domain's metrics and tables
    (ingest writes them before it extracts; update-rule finds them there)."""
    columns = columns or {}
    system, user, sent = bounded_prompt(doc, pack, graph, columns, context or get_settings().llm_context)
    where = f"{_rel(doc.path)}: effects"
    return ask_structured(llm, system, user, LLMEffects, where=where, stage="extract", retries=retries,
                          example=EXAMPLE,
                          check=lambda result: extraction_problems(doc, pack, columns, sent, result))
