"""Retrieval shortcuts of the kind a reviewer writes against knowledge tasks, without our
library's help: the sentence sharing most words with the question in any document, then its
first, last or only number (with the unit written after it), date or set-apart term; the number
nearest the question's words in the nearest document; the nearest sentence's last number with the
domain's most common unit; the most common answer of the question's template (its opening and
closing words), leave-one-out. A knowledge task whose answer sits where a lazy reader looks
shows here. The candidate lists (`numbers`, `dates`, `terms`) are the ones admission checks."""
from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache, partial
from typing import Any

from dibench.core.facts import stated
from dibench.core.typed_answers import unit_in
from dibench.generation.document_text import sentences
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, asked_kind, mode
from dibench.generation.shortcuts.dumps import nearest_document

_WORD = re.compile(r"[a-z]{3,}")
# Words every question and document share: no evidence of what a sentence is about.
_STOP = frozenset("the and for our what which does that this with from are was were has have its their how "
                  "give one any there they them than into when who whom whose".split())
# A term a document sets apart: `code`, **bold**, "quoted" or 'quoted'.
_TERM = re.compile(r"`([^`]{1,40})`|\*\*([^*]{1,40})\*\*|\"([^\"]{1,40})\"|'([^']{1,40})'")
_TOKEN = re.compile(r"[A-Za-z]+|\d[\d,]*(?:\.\d+)?")


@lru_cache(maxsize=1 << 16)
def content_words(text: str) -> frozenset[str]:
    """The words of three letters or more, without the words every text shares; cached: an audit
    compares every question with every sentence of the domain's documents."""
    return frozenset(_WORD.findall(text.lower())) - _STOP


def all_sentences(documents: tuple[str, ...]) -> list[str]:
    """Every sentence of every document, in order (the title line of each is one)."""
    return [s for d in documents for s in sentences(d.replace("\n", "\n\n", 1))]


def nearest_sentence(question: str, candidates: list[str]) -> str | None:
    """The sentence sharing most content words with the question (ties: the first)."""
    asked = content_words(question)
    if not candidates:
        return None
    best = max(range(len(candidates)), key=lambda i: (len(asked & content_words(candidates[i])), -i))
    return candidates[best]


def numbers(text: str) -> list[Decimal]:
    """The numbers written in digits, in order, each once (a date's digits are not numbers)."""
    return list(dict.fromkeys(v.number for v in stated(text, words=False) if v.number is not None))


def number_words(text: str) -> list[Decimal]:
    """The numbers written in words ("two days", "forty-eight hours"), in order, each once."""
    every, digits = stated(text), stated(text, words=False)
    return list(dict.fromkeys(v.number for v in every[len(digits):] if v.number is not None))


def dates(text: str) -> list[str]:
    return list(dict.fromkeys(v.date.isoformat() for v in stated(text, words=False) if v.date is not None))


def terms(text: str) -> list[str]:
    return list(dict.fromkeys(next(g for g in m.groups() if g) for m in _TERM.finditer(text)))


def _plain(n: Decimal) -> int | float:
    return int(n) if n == n.to_integral_value() else float(n)


def sentence_nearest_question(task: AuditTask, corpus: Corpus) -> str | None:
    """The sentence of any document sharing most words with the task's question."""
    every = corpus.summary(("all sentences",), lambda: all_sentences(corpus.documents))
    return corpus.summary(("sentence nearest", task.question), lambda: nearest_sentence(task.question, every))


Pick = Callable[[list[Any]], Any]


def _first(xs: list[Any]) -> Any:
    return xs[0] if xs else None


def _last(xs: list[Any]) -> Any:
    return xs[-1] if xs else None


def _only(xs: list[Any]) -> Any:
    return xs[0] if len(xs) == 1 else None


def _sentence_value(pick: Pick, task: AuditTask, corpus: Corpus) -> Any:
    kind, s = asked_kind(task), sentence_nearest_question(task, corpus)
    if kind is None or s is None:
        return None
    if kind == "number":
        n = pick(numbers(s))
        return None if n is None else {"value": _plain(n), "unit": unit_in(s, n)}
    if kind == "date":
        d = pick(dates(s))
        return None if d is None else {"value": d}
    t = pick(terms(s))
    return None if t is None else {"value": [t] if kind == "list" else t}


def _sentence_terms(task: AuditTask, corpus: Corpus) -> Any:
    s = sentence_nearest_question(task, corpus)
    if asked_kind(task) != "list" or s is None or not terms(s):
        return None
    return {"value": terms(s)}


def _last_with_common_unit(task: AuditTask, corpus: Corpus) -> Any:
    s = sentence_nearest_question(task, corpus)
    if asked_kind(task) != "number" or s is None or not numbers(s):
        return None
    unit = mode(o.gold.get("unit") for o in corpus.others(task) if o.gold.get("unit"))
    return {"value": _plain(numbers(s)[-1]), "unit": unit}


def number_nearest_words(question: str, doc: str) -> Decimal | None:
    """The number of `doc` fewest words away from a word of the question (ties: the first)."""
    asked = content_words(question)
    tokens = [m.group(0) for m in _TOKEN.finditer(doc)]
    at = [i for i, t in enumerate(tokens) if t.lower() in asked]
    best: tuple[int, int] | None = None
    for i, t in enumerate(tokens):
        if t[0].isdigit() and at:
            gap = min(abs(i - j) for j in at)
            best = (gap, i) if best is None or gap < best[0] else best
    if best is None:
        return None
    return next(iter(numbers(tokens[best[1]])), None)


def _nearest_words_number(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) != "number" or doc is None:
        return None
    n = number_nearest_words(task.question, doc)
    return None if n is None else {"value": _plain(n), "unit": unit_in(doc, n)}


def template_of(question: str) -> tuple[str, str]:
    """What a question's template keeps whatever it fills in: its first four and last six words."""
    words = question.lower().split()
    return " ".join(words[:4]), " ".join(words[-6:])


def _template_answer(task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    if c.fact is None:
        return None
    key = template_of(task.question)
    same = [o for o in corpus.others(task) if o.contract.fact is not None and template_of(o.question) == key]
    return mode({k: o.gold.get(k) for k in (c.fact.value_field, c.fact.unit_field) if k in o.gold} for o in same)


SHORTCUTS: tuple[Shortcut, ...] = (
    *(Shortcut(f"sentence nearest the question in any document, its {w} number, date or term", partial(_sentence_value, p))
      for w, p in (("first", _first), ("last", _last), ("only", _only))),
    Shortcut("sentence nearest the question in any document, its set-apart terms as a list", _sentence_terms),
    Shortcut("sentence nearest the question in any document, its last number with the most common unit",
             _last_with_common_unit),
    Shortcut("nearest document's number fewest words from the question's words", _nearest_words_number),
    Shortcut("most common answer of the question's template", _template_answer),
)
