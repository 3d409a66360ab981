"""The question itself: echoed as the answer, and the numbers and groups it names put in the
answer's fields (a threshold echoed as the value, the first or last number stated, the groups of a
comparison each declared the higher). A task whose question states its answer shows here."""
from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

from dibench.core.facts import stated
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, filled_from, text_field


def _echo(task: AuditTask, corpus: Corpus) -> Any:
    field = text_field(task.contract)
    return {field: task.question} if field else None


@lru_cache(maxsize=4096)
def question_numbers(question: str) -> tuple[float, ...]:
    """The numbers the question states (dates apart), in order."""
    return tuple(float(v.number) for v in stated(question) if v.number is not None)


def _named_number(which: int, result: str | None, task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    nums = question_numbers(task.question)
    if not c.numbers or not nums:
        return None
    value = nums[which]
    over: dict[str, Any] = {n: value for n in c.numbers}
    if result is not None:
        if "result" not in c.labels:
            return None
        over["result"] = result
    return filled_from(task, corpus, over)


def _named_groups(higher: str, task: AuditTask, corpus: Corpus) -> Any:
    a, b = task.facts.get("group_a"), task.facts.get("group_b")
    c = task.contract
    if a is None or b is None:
        return None
    if c.rows:
        return filled_from(task, corpus, {c.rows.field: [
            {c.rows.key: str(g), **{n: None for n in c.rows.numbers}} for g in (a, b)]})
    over: dict[str, Any] = {k: v for k, v in (("group_a", a), ("group_b", b)) if k in c.labels}
    if "higher" in c.labels:
        over["higher"] = {"a": a, "b": b}.get(higher, higher)
    return filled_from(task, corpus, over)


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("question echoed", _echo),
    Shortcut("question's first number", partial(_named_number, 0, None)),
    Shortcut("question's last number", partial(_named_number, -1, None)),
    Shortcut("question's first number, PASS", partial(_named_number, 0, "PASS")),
    Shortcut("question's first number, FAIL", partial(_named_number, 0, "FAIL")),
    Shortcut("question's last number, PASS", partial(_named_number, -1, "PASS")),
    Shortcut("question's last number, FAIL", partial(_named_number, -1, "FAIL")),
    Shortcut("named groups, the first higher", partial(_named_groups, "a")),
    Shortcut("named groups, the second higher", partial(_named_groups, "b")),
    Shortcut("named groups, equal", partial(_named_groups, "equal")),
)
