"""Guesses a person makes without reading anything: for a number asked, a round number policies
like to set (a smallest group size of 10, a limit of 30 days), with no unit or with the unit
most common among the domain's other answers. A knowledge task whose answer is such a number is
answered by habit, not by retrieval."""
from __future__ import annotations

from functools import partial
from typing import Any

from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, asked_kind, mode

ROUND = (5, 10, 20, 25, 30, 50, 100)


def _round(n: int, with_unit: bool, task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    if c.fact is None or asked_kind(task) != "number":
        return None
    unit = mode(o.gold.get(c.fact.unit_field) for o in corpus.others(task) if o.gold.get(c.fact.unit_field)) \
        if with_unit else None
    return {c.fact.value_field: n, c.fact.unit_field: unit}


SHORTCUTS: tuple[Shortcut, ...] = tuple(
    Shortcut(f"round number {n}{' with the most common unit' if u else ''}", partial(_round, n, u))
    for n in ROUND for u in (False, True))
