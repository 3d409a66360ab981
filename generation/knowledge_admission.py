"""Knowledge tasks no lazy retrieval answers, by construction and then by test
(docs/evaluation.md, "Knowledge tasks no lazy reader answers").

`lazy_problem`: in each place a reader who does not read for meaning looks (the task's document,
the document and the sentences sharing most words with the question), a value asked that the
place states must be neither the only, the first nor the last of its kind there (numbers, numbers
with its unit, dates, set-apart terms). `refusals`: each admitted knowledge task a lazy place or a
shortcut strategy answers, with the reason (`knowledge_lazy_retrieval`, `knowledge_shortcut`);
the leave-one-out strategies see the tasks that remain, so the check repeats to a fixed point."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from dibench.core.facts import fact_found
from dibench.core.typed_answers import kind_of, name_matches, unit_in, unit_key
from dibench.generation.questions import GIVE
from dibench.generation.shortcuts import AuditTask, Corpus, Shortcut, passes
from dibench.generation.shortcuts.dumps import nearest_document
from dibench.generation.shortcuts.retrieval import all_sentences, dates, nearest_sentence, number_words, numbers, terms

KNOWLEDGE = "knowledge_retrieval"
LAZY = "knowledge_lazy_retrieval"
ANSWERED = "knowledge_shortcut"
LEAK = "knowledge_leak"
# Refusals feed the leave-one-out strategies' distributions: a few rounds reach the fixed point.
MAX_ROUNDS = 4


def _position(found: list[int], count: int, kind: str, where: str) -> str | None:
    if not found:
        return None
    if count == 1:
        return f"the only {kind} of {where}"
    if found[0] == 0:
        return f"the first {kind} of {where}"
    if found[-1] == count - 1:
        return f"the last {kind} of {where}"
    return None


def position_problem(gold: dict[str, Any], text: str, where: str) -> str | None:
    """Why a lazy reader of `text` finds the gold value (it is the only, first or last candidate of
    its kind there), or None (the text does not state it, or states it among others)."""
    value = gold.get("value")
    kind = kind_of(value)
    if kind == "number":
        want = Decimal(str(value))
        nums = numbers(text)
        problem = _position([i for i, n in enumerate(nums) if n == want], len(nums), "number", where)
        unit = unit_key(gold.get("unit"))
        if problem is None and unit is not None:
            same_unit = [n for n in nums if unit_in(text, n) == unit]
            problem = _position([i for i, n in enumerate(same_unit) if n == want], len(same_unit),
                                f"number in {unit}s", where)
        if problem is None:
            words = number_words(text)
            problem = _position([i for i, n in enumerate(words) if n == want], len(words), "number in words", where)
        return problem
    if kind == "date":
        ds = dates(text)
        return _position([i for i, d in enumerate(ds) if d == value], len(ds), "date", where)
    ts = terms(text)
    if kind == "name":
        return _position([i for i, t in enumerate(ts) if name_matches(str(value), t)], len(ts), "term", where)
    if kind == "list":
        names = value if isinstance(value, list) else []
        hits = [t for t in ts if any(name_matches(str(v), t) for v in names)]
        return f"every set-apart term of {where}" if hits and len(hits) == len(ts) else None
    return None


def lazy_problem(question: str, gold: dict[str, Any], own: str | None, documents: Sequence[str]) -> str | None:
    """The first place a lazy reader looks that gives the gold away, as a reason; None: none does.
    `own`: the task's document (title, then body); `documents`: every document of the domain."""
    docs = tuple(documents)
    every = all_sentences(docs)
    places = [("its document", own), ("the document nearest the question", nearest_document(question, docs)),
              ("the sentence nearest the question", nearest_sentence(question, every)),
              ("its document's sentence nearest the question",
               nearest_sentence(question, all_sentences((own,))) if own else None)]
    for where, text in places:
        problem = position_problem(gold, text, where) if text else None
        if problem is not None:
            return f"{LAZY}: the value asked is {problem}"
    return None


def named_answer(question: str, gold: dict[str, Any]) -> str | None:
    """The value asked for (or one of its list) that the question itself states, or None."""
    value = gold.get("value")
    values = value if isinstance(value, list) else [value]
    for tail in GIVE.values():  # what kind of answer it wants ("... its unit, if it has one") names no value
        question = question.replace(tail.strip(), " ")
    for v in values:
        if v is None or isinstance(v, bool):
            continue
        text = format(Decimal(str(v)).normalize(), "f") if isinstance(v, (int, float)) else str(v)
        if fact_found(text, question):
            return text
    return None


def own_document(task: AuditTask, documents: Sequence[str]) -> str | None:
    title = str(task.facts.get("title") or "")
    return next((d for d in documents if title and d.split("\n", 1)[0] == title), None)


def refusals(tasks: Sequence[AuditTask], documents: Sequence[str], shortcuts: Sequence[Shortcut]) -> dict[str, str]:
    """{task key: reason} for every standard knowledge task whose question names its answer, or
    that a lazy reader or a shortcut answers (the question as stored: as shipped, rephrased or not)."""
    out: dict[str, str] = {}
    for t in tasks:
        if t.analysis_type == KNOWLEDGE and t.variant == "standard" and t.contract.fact is not None:
            named = named_answer(t.question, t.gold)
            problem = (f"{LEAK}: the question names the answer ({named})" if named is not None
                       else lazy_problem(t.question, t.gold, own_document(t, documents), documents))
            if problem is not None:
                out[t.key] = problem
    for _ in range(MAX_ROUNDS):
        kept = tuple(t for t in tasks if t.key not in out)
        corpus = Corpus(kept, tuple(documents))
        found = {t.key: s.name for t in kept if t.analysis_type == KNOWLEDGE and t.variant == "standard"
                 for s in _answering(t, corpus, shortcuts)[:1]}
        if not found:
            break
        out.update({k: f"{ANSWERED}: the shortcut '{name}' answers it" for k, name in found.items()})
    return out


def _answering(task: AuditTask, corpus: Corpus, shortcuts: Iterable[Shortcut]) -> list[Shortcut]:
    out = []
    for s in shortcuts:
        try:
            if passes(task, s.answer(task, corpus)):
                out.append(s)
                break
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            continue
    return out
