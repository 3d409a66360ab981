"""BM25 retrieval (bm25s) over short documents: capability summaries, tables, columns, intents."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

import bm25s
import numpy as np

from dibench.routing.naming import tokens

K = TypeVar("K")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "each", "find", "for", "from", "give", "how", "i", "in",
    "is", "it", "me", "need", "of", "on", "or", "record", "show", "that", "the", "their", "them", "then", "these",
    "this", "to", "what", "when", "where", "which", "who", "with", "wa", "ha", "there", "all", "list", "return",
})


def query_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS]


class Bm25Index(Generic[K]):
    """Rank keys by BM25 of their document against a query; ties keep the keys' given order."""

    def __init__(self, keys: Sequence[K], documents: Sequence[str]) -> None:
        self.keys = list(keys)
        self._bm25 = bm25s.BM25()
        corpus = [query_tokens(d) or ["_empty_"] for d in documents]
        self._bm25.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        q = query_tokens(query)
        if not q or not self.keys:
            return np.zeros(len(self.keys))
        return np.asarray(self._bm25.get_scores(q), dtype=float)

    def rank(self, query: str, k: int | None = None) -> list[tuple[K, float]]:
        s = self.scores(query)
        order = sorted(range(len(self.keys)), key=lambda i: (-s[i], i))
        if k is not None:
            order = order[:k]
        return [(self.keys[i], float(s[i])) for i in order]
