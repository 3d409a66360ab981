"""Prompt sizes of the LLM stages on an ingested, generated domain: before (commit 50b24a9, whole
catalog with SQL in every extraction prompt, no shape example) and now. Tokens are estimated as
characters / 4 (stores.llm.estimate_tokens), the same estimate the bounded prompts use.

Extraction is measured on every rule document as if it had no effects: its prompt is built with
the candidate metrics the graph gives (ingest/extract.py), and `targeted` counts the document's
front-matter effects whose metric is among the candidates sent (a metric left out could not be
extracted at all).

    python bench/llm_prompt_sizes.py demo            # needs `dibench ingest demo` and `dibench generate demo`
"""
from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from dibench.core.config import get_settings
from dibench.core.models import LLMEffects
from dibench.core.pack import Pack, load_pack
from dibench.evaluation.tasks import load_tasks
from dibench.generation.questions import PHRASE_SYSTEM, PhrasedQuestion, fitting_documents
from dibench.generation.validation import JUDGE_SYSTEM, JudgeVerdict
from dibench.ingest.extract import EXAMPLE, bounded_prompt
from dibench.stores.graph import get_graph
from dibench.stores.llm import estimate_tokens, shape_text
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import get_warehouse

# The extraction prompt as it was: the whole catalog, indented JSON, in every document's prompt.
OLD_EXTRACT_SYSTEM_CHARS = 717  # len() of the old SYSTEM string (see git show 50b24a9:ingest/extract.py)
OLD_PHRASE_SYSTEM = (
    "You write the question a business stakeholder would ask so that the given answer is its correct answer. "
    "Be natural. Never mention database tables, column names, identifiers or which document to read. State k "
    "for rankings and the threshold for threshold questions. Reply with JSON {\"question\": \"...\"} only."
)


def old_extraction_tokens(pack: Pack, doc_id: str) -> int:
    doc = pack.rule(doc_id)
    items = [{"id": m.id, "name": m.name, "sql": m.sql, "params": m.params, "dimensions": m.dimensions,
              "time_column": m.time_column} for m in pack.metrics]
    user = (f"Metric catalog:\n{json.dumps(items, indent=1)}\n\nRule document {doc.id} ({doc.front.title}), "
            f"type {doc.front.rule_type.value}:\n\n{doc.body}")
    return estimate_tokens(user) + OLD_EXTRACT_SYSTEM_CHARS // 4


def stats(values: list[int]) -> dict[str, Any]:
    return {"n": len(values), "median": statistics.median(values), "max": max(values)} if values else {"n": 0}


def main(domain: str) -> None:
    pack = load_pack(domain)
    columns = schema_columns(get_warehouse(), pack.schema)
    context = get_settings().llm_context
    graph = get_graph()
    extraction = []
    for doc in pack.rules:
        system, user, sent = bounded_prompt(doc, pack, graph, columns, context)
        now = estimate_tokens(f"{system}\n\n{shape_text(LLMEffects, EXAMPLE)}") + estimate_tokens(user)
        targeted = [e.metric for e in doc.front.effects or []]
        ids = {m.id for m in sent}
        extraction.append({"doc": doc.id, "before": old_extraction_tokens(pack, doc.id), "after": now,
                           "metrics_sent": len(sent), "metrics_total": len(pack.metrics),
                           "targeted": len(targeted), "targeted_sent": sum(1 for m in targeted if m in ids)})
    docs = {r.id: r.body for r in pack.rules}
    tasks = [t for t in load_tasks(graph, domain) if t.variant == "standard"]
    phrase_before, phrase_after, judge_before, judge_after = [], [], [], []
    for t in tasks:
        texts = [docs[r] for r in t.rule_ids if r in docs]
        fields: dict[str, Any] = {"metric": t.metric_ids[0], "analysis_type": t.analysis_type,
                                  "answer": t.gold_answer, "facts": t.facts, "rule_documents": texts}
        phrase_before.append(estimate_tokens(OLD_PHRASE_SYSTEM) + estimate_tokens(json.dumps(fields, default=str)))
        # As generation.questions.llm_question sends it: the documents that fit the context.
        bounded = {**fields, "rule_documents": fitting_documents({**fields, "rule_documents": []}, texts, context)}
        phrase_after.append(estimate_tokens(f"{PHRASE_SYSTEM}\n\n{shape_text(PhrasedQuestion)}")
                            + estimate_tokens(json.dumps(bounded, default=str)))
        judged = json.dumps({"question": t.question, "analysis_type": t.analysis_type, "gold_answer": t.gold_answer,
                             "gold_sql": t.gold_sql, "answer_format": t.answer_format}, default=str)
        judge_before.append(estimate_tokens(JUDGE_SYSTEM) + estimate_tokens(judged))
        judge_after.append(estimate_tokens(f"{JUDGE_SYSTEM}\n\n{shape_text(JudgeVerdict)}") + estimate_tokens(judged))
    print(json.dumps({
        "context": context,
        "extraction": {"before": stats([e["before"] for e in extraction]),
                       "after": stats([e["after"] for e in extraction]),
                       "metrics_sent": stats([e["metrics_sent"] for e in extraction]),
                       "targeted_sent": f"{sum(e['targeted_sent'] for e in extraction)} of "
                                        f"{sum(e['targeted'] for e in extraction)}",
                       "per_document": extraction},
        "phrasing": {"before": stats(phrase_before), "after": stats(phrase_after)},
        "judge": {"before": stats(judge_before), "after": stats(judge_after)},
    }, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo")
