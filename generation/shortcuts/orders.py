"""Rows without computation: every group the domain's other answers name for the task's
dimension, listed alphabetically or in reverse (a ranking cut at the question's k), each with the
value other answers on the same metric give it (null where none does), or all null."""
from __future__ import annotations

from functools import partial
from typing import Any

from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, filled_from, mode


def known_groups(task: AuditTask, corpus: Corpus) -> list[str]:
    """The groups other tasks on the same dimension name (rows, or the two groups compared)."""
    out: set[str] = set()
    for o in corpus.tasks:
        if o.stem == task.stem or o.dimension != task.dimension:
            continue
        for r in o.gold.get("rows") or []:
            if isinstance(r, dict) and isinstance(r.get("group"), str):
                out.add(r["group"])
        out.update(str(o.gold[k]) for k in ("group_a", "group_b") if isinstance(o.gold.get(k), str))
    return sorted(out)


def _borrowed(task: AuditTask, corpus: Corpus, group: str, column: str) -> Any:
    vals = [r.get(column, r.get("value")) for o in corpus.others(task, same_metric=True)
            for r in o.gold.get("rows") or [] if isinstance(r, dict) and r.get("group") == group]
    return mode(vals)


def _listed(reverse: bool, borrow: bool, task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    if not c.rows:
        return None
    groups = sorted(known_groups(task, corpus), reverse=reverse)
    if not groups:
        return None
    if task.analysis_type == "ranking" and isinstance(task.facts.get("k"), int):
        groups = groups[:task.facts["k"]]
    rows = [{c.rows.key: g, **{n: _borrowed(task, corpus, g, n) if borrow else None for n in c.rows.numbers}}
            for g in groups]
    return filled_from(task, corpus, {c.rows.field: rows})


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("every known group, alphabetical, borrowed values", partial(_listed, False, True)),
    Shortcut("every known group, reverse, borrowed values", partial(_listed, True, True)),
    Shortcut("every known group, alphabetical, null values", partial(_listed, False, False)),
    Shortcut("every known group, reverse, null values", partial(_listed, True, False)),
)
