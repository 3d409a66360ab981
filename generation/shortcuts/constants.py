"""Constants: one fixed value per answer field and analysis type (every other field at its most
common value in the domain), and answers whose numbers are all null or all zero, or whose rows
are none. A label a constant decides alone (a verdict scored without its figures) shows here."""
from __future__ import annotations

from functools import partial
from typing import Any

from dibench.core.contracts import ANALYSIS_TYPES, build_contract
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, filled_from


def _constant(analysis: str, field: str, value: Any, task: AuditTask, corpus: Corpus) -> Any:
    if task.analysis_type != analysis:
        return None
    return filled_from(task, corpus, {field: value})


def _all_numbers(value: float | None, task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    if not c.numbers and not c.rows:
        return None
    answer = filled_from(task, corpus, {n: value for n in c.numbers})
    if c.rows:
        rows = [{**r, **{n: value for n in c.rows.numbers}} for r in answer[c.rows.field] or []
                if isinstance(r, dict)]
        answer[c.rows.field] = rows
    return answer


def _no_rows(task: AuditTask, corpus: Corpus) -> Any:
    c = task.contract
    return filled_from(task, corpus, {c.rows.field: []}) if c.rows else None


def _label_constants() -> list[Shortcut]:
    out = []
    for analysis in ANALYSIS_TYPES:
        for name, label in build_contract(analysis, 2).labels.items():
            values: list[Any] = [True, False] if label.kind == "bool" else list(label.choices or [])
            out += [Shortcut(f"constant {analysis}.{name}={str(v).lower() if isinstance(v, bool) else v}",
                             partial(_constant, analysis, name, v)) for v in values]
    return out


SHORTCUTS: tuple[Shortcut, ...] = (
    *_label_constants(),
    Shortcut("constant numbers=null", partial(_all_numbers, None)),
    Shortcut("constant numbers=0", partial(_all_numbers, 0.0)),
    Shortcut("constant rows=[]", _no_rows),
)
