"""Hold-out shortcuts against knowledge tasks: lazy strategies written after the knowledge
questions were shaped and never used to shape or admit them, so their figure measures the
admission rather than repeating it. They are kept out of `registry()`: the run reports them
apart, as the hold-out figure (`holdout_audit`).

- BM25 over every sentence of every document, then, in the best sentence, the value of the kind
  asked that follows the last word it shares with the question;
- the value of the kind asked that the whole corpus states most often (with its unit);
- the answer of the other knowledge task whose question shares most words with this one."""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from dibench.core.facts import stated
from dibench.core.typed_answers import unit_in
from dibench.generation.shortcuts.audit import ShortcutAudit, audit
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, asked_kind
from dibench.generation.shortcuts.retrieval import all_sentences, content_words, dates, numbers, terms

KNOWLEDGE = "knowledge_retrieval"
_TOKEN = re.compile(r"[a-z]{3,}")
# BM25's usual constants.
K1, B = 1.2, 0.75


def _plain(n: Decimal) -> int | float:
    return int(n) if n == n.to_integral_value() else float(n)


def bm25_best(question: str, sentences: Sequence[str]) -> str | None:
    """The sentence BM25 ranks first for the question's words (ties: the first)."""
    docs = [_TOKEN.findall(s.lower()) for s in sentences]
    if not docs:
        return None
    avg = sum(len(d) for d in docs) / len(docs) or 1.0
    df = Counter(w for d in docs for w in set(d))
    asked = content_words(question)

    def score(d: list[str]) -> float:
        tf = Counter(d)
        return sum(math.log(1 + (len(docs) - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * (K1 + 1)
                   / (tf[w] + K1 * (1 - B + B * len(d) / avg)) for w in asked if tf[w])

    best = max(range(len(docs)), key=lambda i: (score(docs[i]), -i))
    return sentences[best]


def _after_last_shared(question: str, sentence: str) -> str:
    """The sentence after the last of its words the question also has (all of it if none)."""
    asked = content_words(question)
    ends = [m.end() for m in re.finditer(r"[A-Za-z]{3,}", sentence) if m.group(0).lower() in asked]
    return sentence[ends[-1]:] if ends else sentence


def value_of_kind(kind: str, text: str) -> Any:
    """The first value of `kind` the text states, as an answer; None: it states none."""
    if kind == "number":
        nums = numbers(text)
        return {"value": _plain(nums[0]), "unit": unit_in(text, nums[0])} if nums else None
    if kind == "date":
        ds = dates(text)
        return {"value": ds[0]} if ds else None
    ts = terms(text)
    if kind == "list":
        return {"value": ts} if ts else None
    if ts:
        return {"value": ts[0]}
    word = re.search(r"[A-Za-z][\w-]{2,}", text)
    return {"value": word.group(0)} if word else None


def _bm25_after(task: AuditTask, corpus: Corpus) -> Any:
    kind = asked_kind(task)
    if kind is None:
        return None
    every = corpus.summary(("all sentences",), lambda: all_sentences(corpus.documents))
    best = bm25_best(task.question, every)
    return value_of_kind(kind, _after_last_shared(task.question, best)) if best else None


def _corpus_mode(task: AuditTask, corpus: Corpus) -> Any:
    kind = asked_kind(task)
    if kind is None:
        return None

    def compute() -> Any:
        text = "\n".join(corpus.documents)
        if kind == "number":
            counts = Counter((v.number, unit_in(text, v.number)) for v in stated(text, words=False)
                             if v.number is not None)
            (n, unit), _ = counts.most_common(1)[0] if counts else ((None, None), 0)
            return None if n is None else {"value": _plain(n), "unit": unit}
        if kind == "date":
            found = Counter(v.date.isoformat() for v in stated(text, words=False) if v.date is not None)
            return {"value": found.most_common(1)[0][0]} if found else None
        found = Counter(m for d in corpus.documents for m in terms(d))
        if not found:
            return None
        return {"value": [t for t, _ in found.most_common(2)]} if kind == "list" else {"value": found.most_common(1)[0][0]}

    return corpus.summary(("holdout corpus mode", kind), compute)


def _nearest_task(task: AuditTask, corpus: Corpus) -> Any:
    if task.contract.fact is None:
        return None
    asked = content_words(task.question)
    others = [o for o in corpus.others(task) if o.contract.fact is not None]
    if not others:
        return None

    def overlap(o: AuditTask) -> float:
        theirs = content_words(o.question)
        return len(asked & theirs) / (len(asked | theirs) or 1)

    near = max(others, key=overlap)
    f = task.contract.fact
    return {k: near.gold.get(k) for k in (f.value_field, f.unit_field) if k in near.gold}


HOLDOUT: tuple[Shortcut, ...] = (
    Shortcut("hold-out: BM25 sentence, the value after the question's last shared word", _bm25_after),
    Shortcut("hold-out: the value of the kind asked most common in the whole corpus", _corpus_mode),
    Shortcut("hold-out: the answer of the nearest other task's question", _nearest_task),
)


def holdout_audit(tasks: Sequence[AuditTask], documents: Sequence[str]) -> ShortcutAudit:
    """The hold-out strategies on the run's admitted knowledge tasks, one cell per family."""
    knowledge = [t for t in tasks if t.analysis_type == KNOWLEDGE]
    return audit(knowledge, Corpus(tuple(knowledge), tuple(documents)), HOLDOUT)
