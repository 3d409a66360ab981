"""Re-derive a task's structured answer from executed rows, with generation's own analysis code.

The reference agents and the pairing ablation execute a task's SQL (gold, base or re-paired)
and must turn the rows into an answer exactly as generation did; otherwise a 100% oracle would
prove nothing about the scorer. Every branch calls the function of `core/answers.py` that the
analysis's `build()` itself uses, with what the question fixed (`facts`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dibench.core import answers
from dibench.core.errors import DibenchError
from dibench.evaluation.tasks import TaskRecord

Rows = list[tuple[Any, ...]]


class DerivationError(DibenchError):
    """Rows cannot be turned into an answer (too few periods, a missing fact ...): names the task."""


def _fact(task: TaskRecord, name: str) -> Any:
    if name not in task.facts:
        raise DerivationError(f"task {task.task_id}: facts lack {name!r}, needed for {task.analysis_type}")
    return task.facts[name]


def _point(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    return answers.point_value(rows, task.rounding)


def _threshold(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    value = answers.point_value(rows, task.rounding)["value"]
    return answers.threshold_crossing(value, float(_fact(task, "threshold")), bool(_fact(task, "higher_is_better")))


def _trend(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    if "empty_period" in task.facts:  # on the window's calendar, as generation computed it
        periods = answers.months(str(_fact(task, "start")), str(_fact(task, "end")))
        return answers.trend_summary(rows, task.rounding, periods, task.facts["empty_period"])
    return answers.trend_summary(rows, task.rounding)


def _comparison(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    return answers.comparison(rows, str(_fact(task, "group_a")), str(_fact(task, "group_b")), task.rounding)


def _ranking(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    return answers.ranking(rows, int(_fact(task, "k")), bool(_fact(task, "higher_is_better")), task.rounding)


def _significance(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    a, b = str(_fact(task, "group_a")), str(_fact(task, "group_b"))
    if "empty_period" in task.facts:  # on the window's calendar, as generation computed it
        periods = answers.months(str(_fact(task, "start")), str(_fact(task, "end")))
        return answers.welch(rows, a, b, periods, task.facts["empty_period"])
    return answers.welch(rows, a, b)


def _counterfactual(task: TaskRecord, rows: Rows, base: Rows) -> dict[str, Any] | None:
    if "empty_period" in task.facts:  # by month on the window's calendar, as generation computed it
        periods = answers.months(str(_fact(task, "start")), str(_fact(task, "end")))
        return answers.counterfactual(rows, base, task.rounding, periods, task.facts["empty_period"])
    # by group: every group the data has without rules, as generation listed them (older tasks: the rows' own)
    return answers.counterfactual(rows, base, task.rounding, groups=task.facts.get("all_groups"))


def _decomposition(task: TaskRecord, rows: Rows, _base: Rows) -> dict[str, Any] | None:
    return answers.decomposition(rows, task.rounding, task.facts.get("all_groups"))


DERIVERS: dict[str, Callable[[TaskRecord, Rows, Rows], dict[str, Any] | None]] = {
    "point_query": _point, "threshold_crossing": _threshold, "trend_analysis": _trend,
    "comparison": _comparison, "ranking": _ranking, "significance_testing": _significance,
    "counterfactual": _counterfactual, "decomposition": _decomposition,
}


def needs_base_rows(task: TaskRecord) -> bool:
    """Counterfactual answers put the rows without the rule beside the rows with it."""
    return task.analysis_type == "counterfactual"


def hypothetical_statement(task: TaskRecord) -> tuple[str | None, dict[str, Any]]:
    """The SQL of a counterfactual's hypothetical side: the policy with the featured rule lifted
    (the base SQL for a task stored without it, e.g. the no-rule variant)."""
    if task.lifted_sql:
        return task.lifted_sql, task.lifted_params
    return task.base_sql, task.base_params


def derive_answer(task: TaskRecord, rows: Rows, base_rows: Rows | None = None) -> dict[str, Any]:
    """The answer `rows` (from the task's query shape) give; base_rows only for counterfactual tasks."""
    derive = DERIVERS.get(task.analysis_type)
    if derive is None:
        raise DerivationError(f"task {task.task_id}: {task.analysis_type} answers are not derived from rows")
    if needs_base_rows(task) and base_rows is None:
        raise DerivationError(f"task {task.task_id}: a counterfactual answer needs the rows without the rule")
    out = derive(task, rows, base_rows if base_rows is not None else rows)
    if out is None:
        raise DerivationError(f"task {task.task_id}: the rows give no {task.analysis_type} answer "
                              f"({len(rows)} row(s): too few periods or groups)")
    return out
