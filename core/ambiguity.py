"""One question, one answer: no two admitted tasks of a domain may have the same normalised
question text and different gold answers, or an agent that answers one of them correctly must
fail the other. Generation rejects such tasks when it admits them, exports refuse to carry them. Nor may two
share a question and an answer: `duplicates` finds the copies, generation keeps one.

Two golds differ when the scorer tells them apart: either fails the other's answer contract
(core.contracts), so a ranking whose tied rows come in another order is the same answer. Pure.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from dibench.core.contracts import check_answer, is_legacy_knowledge, shape_problems, task_contract


@dataclass(frozen=True)
class Asked:
    """What the invariant reads of a task."""

    key: str
    question: str
    analysis_type: str
    gold: dict[str, Any]
    rounding: int
    about: str | None = None  # what it asks whatever its wording (`asked_about`); None: not known


def asked_about(analysis_type: str, metric_id: Any, dimension: Any, facts: dict[str, Any]) -> str | None:
    """What a task asks whatever its wording: its analysis type, metric, dimension and facts (the
    window, groups, k, threshold ...), the two groups of a comparison in either order; None for
    knowledge (its facts are the rule's, not the question's) and for a task without facts."""
    if analysis_type == "knowledge_retrieval" or not facts:
        return None
    norm = dict(facts)
    if "group_a" in norm and "group_b" in norm:
        norm["group_a"], norm["group_b"] = sorted((str(norm["group_a"]), str(norm["group_b"])))
    return json.dumps([analysis_type, metric_id, dimension, norm], sort_keys=True, default=str)


def normalised(question: str) -> str:
    """The question as the invariant compares it: case-folded, whitespace runs as one space."""
    return " ".join(question.split()).casefold()


def different(a: Asked, b: Asked) -> bool:
    """Whether one correct answer cannot pass both tasks."""
    if a.analysis_type != b.analysis_type:
        return True
    ca, cb = task_contract(a.analysis_type, a.rounding, a.gold), task_contract(b.analysis_type, b.rounding, b.gold)
    if shape_problems(ca, b.gold) or shape_problems(cb, a.gold):
        return a.gold != b.gold
    return not (check_answer(ca, a.gold, b.gold).passed and check_answer(cb, b.gold, a.gold).passed)


def ambiguous(tasks: Iterable[Asked]) -> dict[str, list[str]]:
    """{task key: keys of the tasks it shares its question with and differs from in gold}, for
    every task that breaks the invariant (empty: it holds)."""
    by_question: dict[str, list[Asked]] = defaultdict(list)
    for t in tasks:
        by_question[normalised(t.question)].append(t)
    out: dict[str, list[str]] = {}
    for group in by_question.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if different(a, b):
                    out.setdefault(a.key, []).append(b.key)
                    out.setdefault(b.key, []).append(a.key)
    return {k: sorted(v) for k, v in sorted(out.items())}


def asked_as(t: Asked) -> str:
    """What makes two tasks copies: the normalised question; for knowledge, what the answer states
    (one rule asked about for each metric it changes is one question: the same sentences)."""
    if t.analysis_type == "knowledge_retrieval" and isinstance(t.gold.get("text"), str):
        value = t.gold.get("value")
        typed = [] if value is None else [json.dumps(value), str(t.gold.get("unit"))]
        facts = sorted(normalised(str(f)) for f in t.gold.get("must_include") or typed)
        return "knowledge:" + normalised(t.gold["text"]) + "|" + "|".join(facts)
    return normalised(t.question)


def duplicates(tasks: Iterable[Asked]) -> dict[str, str]:
    """{task key: the key of the task it repeats} for every task whose normalised question and
    answer another task with a smaller key already has (a knowledge task: whose answer's text and
    facts): one of them is the benchmark's, the others are copies that weigh its score."""
    return _repeats(tasks, asked_as)


def _repeats(tasks: Iterable[Asked], bucket: Callable[[Asked], Hashable]) -> dict[str, str]:
    """{task key: the smaller key of the first task in its bucket whose answer it cannot be told
    apart from}, tasks taken in key order; a bucket of None is not compared."""
    kept: dict[Hashable, list[Asked]] = defaultdict(list)
    out: dict[str, str] = {}
    for t in sorted(tasks, key=lambda t: t.key):
        b = bucket(t)
        if b is None:
            continue
        same = next((k for k in kept[b] if not different(k, t)), None)
        if same is None:
            kept[b].append(t)
        else:
            out[t.key] = same.key
    return out


def near_duplicates(tasks: Iterable[Asked]) -> dict[str, str]:
    """{task key: the key of the task it asks again} for every task that asks what another task of
    its variant with a smaller key asks (`about`: the same metric, window and groups, a comparison's
    groups in either order), in other words: one of them weighs the score, not both."""
    kept: dict[tuple[str, str], str] = {}
    out: dict[str, str] = {}
    for t in sorted(tasks, key=lambda t: t.key):
        if t.about is None:
            continue
        first = kept.setdefault((_variant(t.key), t.about), t.key)
        if first != t.key:
            out[t.key] = first
    return out


def _variant(key: str) -> str:
    tail = key.rpartition(":")[2]
    return tail if tail in ("oracle", "no_rule") else "standard"


def same_answers(tasks: Iterable[Asked]) -> dict[str, str]:
    """{task key: the key of the task whose answer it repeats} for every task whose answer another
    task of its analysis type and variant, with a smaller key and another question, already has
    (under either's contract): copying that other task's answer would pass it (two windows over
    the same rows, a zero, a suppressed null; two knowledge tasks whose typed value is one, "rental
    rate" asked of two rules). Free-text knowledge tasks are left to `duplicates`."""
    return _repeats(tasks, lambda t: None if t.analysis_type == "knowledge_retrieval" and is_legacy_knowledge(t.gold)
                    else (t.analysis_type, _variant(t.key)))
