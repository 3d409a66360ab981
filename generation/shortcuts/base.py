"""What every shortcut family shares: the task as the audit sees it, what a strategy may read
besides it, and the helpers that fill an answer without reading any data.

A shortcut is a strategy with no understanding: it never runs SQL and never interprets a rule.
It may read the task's own question and answer format, the domain's policy documents as text,
and the answers the domain's *other* tasks have (the benchmark's answer distribution, which a
released benchmark gives away): every "other task" is of another question stem, so the variants
of a task (standard, oracle, no-rule) never answer one another."""
from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dibench.core.contracts import AnswerContract, check_answer
from dibench.core.typed_answers import kind_of


VARIANT_SUFFIXES = (":oracle", ":no_rule")


def stem_of(key: str) -> str:
    """The key a task's variants share: its standard task's."""
    for suffix in VARIANT_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


@dataclass(frozen=True)
class AuditTask:
    """One admitted task: what the question shows, and the answers the scorer compares with."""

    key: str
    stem: str  # the question stem its variants share: skeleton and analysis type
    analysis_type: str
    tier: str
    variant: str
    question: str
    metric_id: str | None
    dimension: str | None
    gold: dict[str, Any]
    contract: AnswerContract
    facts: dict[str, Any] = field(default_factory=dict)  # what the question states: groups, k, threshold ...
    base: dict[str, Any] | None = None  # the answer with no rule
    lifted: dict[str, Any] | None = None  # the answer without the featured rule


@dataclass(frozen=True)
class Corpus:
    """What a shortcut may read besides its task: the domain's tasks and its policy documents."""

    tasks: tuple[AuditTask, ...]
    documents: tuple[str, ...]  # each document as written: title, then body
    # Memo of `others` and of field summaries over them (every strategy asks the same).
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def others(self, task: AuditTask, *, same_metric: bool = False) -> list[AuditTask]:
        """The tasks of the same analysis type and another stem (of the same metric if asked)."""
        key = ("others", task.analysis_type, task.stem, task.metric_id if same_metric else None, same_metric)
        if key not in self._memo:
            self._memo[key] = [t for t in self.tasks if t.analysis_type == task.analysis_type and t.stem != task.stem
                               and (not same_metric or t.metric_id == task.metric_id)]
        return list(self._memo[key])

    def summary(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


Answer = Callable[[AuditTask, Corpus], Any]


@dataclass(frozen=True)
class Shortcut:
    """A named strategy; `answer` returns None where it has nothing to say (counted as a fail)."""

    name: str
    answer: Answer


def passes(task: AuditTask, answer: Any) -> bool:
    """Whether `answer` passes `task` under its own contract (the scorer's check)."""
    if answer is None:
        return False
    return check_answer(task.contract, task.gold, answer).passed


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def mode(values: Iterable[Any]) -> Any:
    """The most common value (ties: the first in JSON order); None for none."""
    counts = Counter(_key(v) for v in values)
    if not counts:
        return None
    top = max(counts.values())
    return json.loads(min(k for k, n in counts.items() if n == top))


def median(values: Iterable[Any]) -> float | None:
    nums = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(statistics.median(nums)) if nums else None


def scored_fields(contract: AnswerContract) -> list[str]:
    fields = [*contract.labels, *contract.numbers]
    if contract.rows:
        fields.append(contract.rows.field)
    if contract.knowledge:
        fields.append(contract.knowledge.text_field)
    if contract.fact:
        fields += [contract.fact.value_field, contract.fact.unit_field]
    return fields


def asked_kind(task: AuditTask) -> str | None:
    """The kind of thing a typed knowledge task asks for (number, date, name, list); None otherwise."""
    c = task.contract
    return kind_of(task.gold.get(c.fact.value_field)) if c.fact else None


def text_field(contract: AnswerContract) -> str | None:
    """The field a knowledge answer's text goes in: the free text, or the typed value."""
    if contract.knowledge:
        return contract.knowledge.text_field
    return contract.fact.value_field if contract.fact else None


def filled(task: AuditTask, others: list[AuditTask], overrides: dict[str, Any] | None = None,
           numbers: str = "mode") -> dict[str, Any]:
    """An answer of the task's shape: every scored field at its most common value among `others`
    (numbers at their median when `numbers` is "median"), then `overrides`."""
    c = task.contract
    out: dict[str, Any] = {}
    for name in scored_fields(c):
        values = [o.gold.get(name) for o in others if name in o.gold]
        out[name] = median(values) if numbers == "median" and name in c.numbers else mode(values)
    return _finish(c, out, overrides)


def filled_from(task: AuditTask, corpus: Corpus, overrides: dict[str, Any] | None = None, *,
                same_metric: bool = False, numbers: str = "mode") -> dict[str, Any]:
    """`filled` over the corpus's other tasks (same metric if asked), memoised per stem."""
    key = ("filled", task.analysis_type, task.stem, task.metric_id if same_metric else None, same_metric, numbers)
    base = corpus.summary(key, lambda: filled(task, corpus.others(task, same_metric=same_metric), numbers=numbers))
    return _finish(task.contract, json.loads(json.dumps(base)), overrides)


def _finish(c: AnswerContract, out: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    if c.rows and out.get(c.rows.field) is None:
        out[c.rows.field] = []
    if c.knowledge and out.get(c.knowledge.text_field) is None:
        out[c.knowledge.text_field] = ""
    out.update(overrides or {})
    return out
