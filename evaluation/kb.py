"""The knowledge base an agent searches: the metric catalog and the rule documents of a domain.

Documents come from the graph (Metric and Rule nodes). A rule document carries its title,
owner, version, effective date and Markdown body, never its structured SQL effect: finding
out how a policy changes a computation is the agent's job. Ranking is BM25 (`bm25s`) over
title + text, ties broken by document id so that a search is deterministic.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import bm25s
import numpy as np

from dibench.stores.graph import Graph

Kind = Literal["metric", "rule"]
KINDS: tuple[str, ...] = ("metric", "rule")


@dataclass(frozen=True)
class Document:
    doc_id: str
    kind: Kind
    title: str
    text: str


@dataclass(frozen=True)
class Hit:
    doc_id: str
    kind: Kind
    title: str
    text: str
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "kind": self.kind, "title": self.title, "text": self.text,
                "score": round(self.score, 4)}


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens without English stop words (the same for documents and queries)."""
    tokens = bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)
    return [list(t) for t in tokens]


class Bm25Index:
    """BM25 over a fixed list of texts; `scores(query)` gives one score per text."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        self._bm25 = bm25s.BM25()
        if texts:
            self._bm25.index(tokenize(texts), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        tokens = tokenize([query])[0]
        if not tokens or not self.size:
            # bm25s cannot score an empty query; no token means no evidence for any text.
            return np.zeros(self.size, dtype=float)
        return np.asarray(self._bm25.get_scores(tokens), dtype=float)

    def ranked(self, query: str, keys: Sequence[str]) -> list[tuple[int, float]]:
        """(index, score) of every text, best first; ties in `keys` order."""
        s = self.scores(query)
        return sorted(((i, float(s[i])) for i in range(self.size)), key=lambda p: (-p[1], keys[p[0]]))


class KnowledgeBase:
    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = sorted(documents, key=lambda d: d.doc_id)
        self._index = Bm25Index([f"{d.title}\n{d.text}" for d in self.documents])

    def search(self, query: str, k: int = 5, kind: str | None = None) -> list[Hit]:
        """The k best documents for `query` (of one kind if given); documents scoring 0 are left out."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        hits: list[Hit] = []
        for i, score in self._index.ranked(query, [d.doc_id for d in self.documents]):
            d = self.documents[i]
            if score <= 0 or (kind is not None and d.kind != kind):
                continue
            hits.append(Hit(d.doc_id, d.kind, d.title, d.text, score))
            if len(hits) >= k:
                break
        return hits

    def get(self, doc_id: str) -> Document | None:
        return next((d for d in self.documents if d.doc_id == doc_id), None)


def metric_document(m: dict[str, Any]) -> Document:
    params = json.loads(m.get("params_json") or "{}")
    lines = [f"Metric {m['name']} ({m['id']}), tier {m.get('tier')}.",
             f"Description: {m.get('description', '')}",
             f"Formula: {m.get('formula', '')}",
             f"Unit: {m.get('unit', '')}; reported with {m.get('rounding', 2)} decimals; "
             f"{'higher' if m.get('higher_is_better', True) else 'lower'} is better."]
    if m.get("target") is not None:
        lines.append(f"Business target: {m['target']:g}")
    if m.get("components"):
        lines.append(f"Components: {', '.join(m['components'])}")
    if m.get("dimensions"):
        lines.append(f"Can be broken down by: {', '.join(m['dimensions'])}")
    lines.append(f"Time column: {m.get('time_column', '')}")
    if params:
        lines.append("Parameters with defaults: " + ", ".join(f":{k} = {v}" for k, v in sorted(params.items())))
    lines.append(f"SQL template (bind :start_date and :end_date as a half-open window):\n{m.get('sql', '').strip()}")
    return Document(f"metric:{m['id']}", "metric", str(m["name"]), "\n".join(lines))


def rule_document(r: dict[str, Any]) -> Document:
    head = (f"Policy {r['id']}: {r.get('title', '')}\nOwner: {r.get('owner', '')}; version {r.get('version', '')}; "
            f"effective date {r.get('effective_date', '')}; type {r.get('rule_type', '')}.")
    return Document(f"rule:{r['id']}", "rule", str(r.get("title", r["id"])), f"{head}\n\n{r.get('body', '').strip()}")


def load_knowledge_base(graph: Graph, domain: str) -> KnowledgeBase:
    docs = [metric_document(r["metric"]) for r in graph.read("eval_metrics", domain=domain)]
    docs += [rule_document(r["rule"]) for r in graph.read("eval_rules", domain=domain)]
    return KnowledgeBase(docs)
