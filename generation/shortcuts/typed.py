"""Typed guesses for knowledge tasks: a value of the kind asked, picked from the documents' text
without reading it for meaning. The first number of the sentence nearest the question with the
unit written after it, the most common unit of the domain's other answers with that number, the
nearest document's first or most frequent number, every number of it as a list; the first date
of the nearest document, every date of every document; the nearest sentence's first quoted or
bold term, every such term of the nearest document as a list. A contract that accepts a value
merely stated near the question's words shows here."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any

from dibench.core.facts import stated
from dibench.core.typed_answers import unit_in
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, asked_kind, mode
from dibench.generation.shortcuts.dumps import nearest_document, nearest_sentences

# A term a document sets apart: `code`, **bold**, "quoted" or 'quoted'.
_TERM = re.compile(r"`([^`]{1,40})`|\*\*([^*]{1,40})\*\*|\"([^\"]{1,40})\"|'([^']{1,40})'")


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _numbers(text: str) -> list[Decimal]:
    return [v.number for v in stated(text, words=False) if v.number is not None]


def _number_answer(text: str, unit: str | None = None) -> dict[str, Any] | None:
    nums = _numbers(text)
    if not nums:
        return None
    return {"value": _number(nums[0]), "unit": unit if unit is not None else unit_in(text, nums[0])}


def _nearest_sentence_number(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) != "number" or doc is None:
        return None
    # the first sentence, nearest the question first, that states a number
    return next((a for s in nearest_sentences(task.question, doc) if (a := _number_answer(s))), None)


def _with_common_unit(task: AuditTask, corpus: Corpus) -> Any:
    guess = _nearest_sentence_number(task, corpus)
    if guess is None:
        return None
    return {**guess, "unit": mode(o.gold.get("unit") for o in corpus.others(task) if o.gold.get("unit"))}


def _document_number(pick: Callable[[list[Decimal]], Decimal], task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) != "number" or doc is None or not _numbers(doc):
        return None
    value = pick(_numbers(doc))
    return {"value": _number(value), "unit": unit_in(doc, value)}


def _most_frequent(nums: list[Decimal]) -> Decimal:
    counts = Counter(nums)
    return max(nums, key=lambda n: (counts[n], -nums.index(n)))


def _all_numbers(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if task.contract.fact is None or doc is None:
        return None
    return {"value": [str(_number(n)) for n in dict.fromkeys(_numbers(doc))], "unit": None}


def _dates(text: str) -> list[str]:
    return list(dict.fromkeys(v.date.isoformat() for v in stated(text, words=False) if v.date is not None))


def _first_date(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) != "date" or doc is None:
        return None
    dates = _dates(doc.split("\n", 1)[-1])  # the body: past the title
    return {"value": dates[0]} if dates else None


def _every_date(task: AuditTask, corpus: Corpus) -> Any:
    if task.contract.fact is None:
        return None
    dates = _dates("\n".join(corpus.documents))
    return {"value": dates} if dates else None


def _terms(text: str) -> list[str]:
    return list(dict.fromkeys(next(g for g in m.groups() if g) for m in _TERM.finditer(text)))


def _first_term(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) not in ("name", "list") or doc is None:
        return None
    term = next((t for s in nearest_sentences(task.question, doc) for t in _terms(s)), None)
    if term is None:
        return None
    return {"value": [term] if asked_kind(task) == "list" else term}


def _every_term(task: AuditTask, corpus: Corpus) -> Any:
    doc = nearest_document(task.question, corpus.documents)
    if asked_kind(task) not in ("name", "list") or doc is None:
        return None
    terms = _terms(doc)
    return {"value": terms} if terms else None


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("nearest sentence's first number, with the unit after it", _nearest_sentence_number),
    Shortcut("nearest sentence's first number, with the most common unit", _with_common_unit),
    Shortcut("nearest document's first number", partial(_document_number, lambda nums: nums[0])),
    Shortcut("nearest document's most frequent number", partial(_document_number, _most_frequent)),
    Shortcut("nearest document's numbers, as a list", _all_numbers),
    Shortcut("nearest document's first date", _first_date),
    Shortcut("every date of every document, as a list", _every_date),
    Shortcut("nearest sentence's first quoted or bold term", _first_term),
    Shortcut("nearest document's quoted or bold terms, as a list", _every_term),
)
