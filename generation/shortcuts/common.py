"""The domain's answer distribution: the most common gold of the analysis type (leave-one-out:
the task's own variants never count), the most common gold of the same metric, each field at
its most common or median value among the metric's other golds, and the nearest sibling's gold
(another question on the same metric and dimension)."""
from __future__ import annotations

from typing import Any

from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, filled_from, mode


def _most_common(task: AuditTask, corpus: Corpus) -> Any:
    return mode(o.gold for o in corpus.others(task))


def _most_common_of_metric(task: AuditTask, corpus: Corpus) -> Any:
    return mode(o.gold for o in corpus.others(task, same_metric=True))


def _fields_of_metric(numbers: str, task: AuditTask, corpus: Corpus) -> Any:
    if not corpus.others(task, same_metric=True):
        return None
    return filled_from(task, corpus, same_metric=True, numbers=numbers)


def _sibling(task: AuditTask, corpus: Corpus) -> Any:
    same = corpus.others(task, same_metric=True)
    near = [o for o in same if o.dimension == task.dimension] or same
    return min(near, key=lambda o: o.key).gold if near else None


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("most common gold", _most_common),
    Shortcut("most common gold of the metric", _most_common_of_metric),
    Shortcut("most common fields of the metric", lambda t, c: _fields_of_metric("mode", t, c)),
    Shortcut("median fields of the metric", lambda t, c: _fields_of_metric("median", t, c)),
    Shortcut("sibling task's gold", _sibling),
)
