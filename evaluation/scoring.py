"""The scorer: one verdict per task from its stored contract, and accuracy aggregates for a run.

A wrong answer to a rule task (tier K+A+R with a stored base answer) is classified by checking
it, under the same contract, against the answers without rules: if it matches the answer with no
rule, or the answer without the task's featured rule (the rest of the policy applied), the agent
ignored a rule ("rule_ignored"); otherwise "computation_wrong".
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dibench.core.contracts import (
    ANALYSIS_TYPES, AnalysisType, AnswerContract, Check, ContractError, check_answer, shape_problems,
    validate_expected,
)
from dibench.core.errors import DibenchError
from dibench.evaluation.answer_values import loads, uncomparable
from dibench.evaluation.reliability import Reliability, reliability
from dibench.evaluation.reporting_tables import TIER_ORDER, Bucket, accuracy_by, bucket, failure_counts

Tier = Literal["K", "K+A", "K+A+R"]
FailureClass = Literal["no_answer", "malformed", "rule_ignored", "computation_wrong", "wrong_answer"]


class TaskRecordError(DibenchError):
    """A task record cannot be scored: names the task and the field at fault."""


class RecordFileError(DibenchError):
    """A tasks or answers JSONL file has a bad line: names the file and line."""

    hint = "each line must be one JSON object; the record shapes are in docs/contracts.md"

    def __init__(self, file: str | Path, line: int, problem: str) -> None:
        self.file = str(file)
        self.line = line
        self.problem = problem
        super().__init__(f"{file}:{line}: {problem}")


class ScoredTask(BaseModel):
    """The part of a task record the scorer reads."""

    # The task record belongs to generation and carries more (question, SQL, provenance);
    # the scorer validates strictly only what it uses, so new record fields do not break scoring.
    model_config = ConfigDict(extra="ignore", frozen=True)

    task_id: str = Field(min_length=1)
    domain: str
    analysis_type: AnalysisType
    tier: Tier
    gold_answer: dict[str, Any]
    base_answer: dict[str, Any] | None = None
    lifted_answer: dict[str, Any] | None = None
    featured_rule: str | None = None
    contract: AnswerContract
    variant: Literal["standard", "oracle", "no_rule"] = "standard"


class AnswerRecord(BaseModel):
    """One line of an answers file. `answer` is judged by the contract, not here: a wrong shape is
    the agent's malformed answer, not a broken file."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    answer: Any
    trial: int = Field(1, ge=1, description="which trial of a run of several (1 when absent)")


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    passed: bool
    reason: str
    failure_class: FailureClass | None = None


class TaskVerdict(BaseModel):
    """A verdict with the task's grouping keys, as listed in a report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    domain: str
    analysis_type: str
    tier: str
    variant: str


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: list[TaskVerdict]
    overall: Bucket
    by_domain: dict[str, Bucket]
    by_analysis_type: dict[str, Bucket]
    by_tier: dict[str, Bucket]
    by_variant: dict[str, Bucket]
    failure_classes: dict[str, int]
    unmatched_answers: list[str] = Field(description="task ids in the answers that name no task")
    reliability: Reliability | None = Field(None, description="pass^k over trials (runs of more than one trial)")


def validate_task(task: Mapping[str, Any] | ScoredTask) -> ScoredTask:
    """Parse a task record and check that its gold (and base) answer fit its contract."""
    if isinstance(task, ScoredTask):
        return task
    task_id = task.get("task_id", "?") if isinstance(task, Mapping) else "?"
    try:
        parsed = ScoredTask.model_validate(task)
    except ValidationError as exc:
        raise TaskRecordError(f"task {task_id}: {_pydantic_problems(exc)}") from exc
    if parsed.contract.analysis_type != parsed.analysis_type:
        raise TaskRecordError(f"task {task_id}: contract is for {parsed.contract.analysis_type}, "
                              f"task is {parsed.analysis_type}")
    try:
        validate_expected(parsed.contract, parsed.gold_answer, what="gold_answer")
        if parsed.base_answer is not None:
            validate_expected(parsed.contract, parsed.base_answer, what="base_answer")
    except ContractError as exc:
        raise TaskRecordError(f"task {task_id}: {exc}") from exc
    return parsed


def score_task(task: Mapping[str, Any] | ScoredTask, answer: Any, no_answer_reason: str | None = None) -> Verdict:
    """The verdict on one answer (None = no answer, why if known). Raises TaskRecordError for an
    unscorable task."""
    t = validate_task(task)
    if answer is None:
        reason = f"no answer ({no_answer_reason})" if no_answer_reason else "no answer"
        return Verdict(task_id=t.task_id, passed=False, reason=reason, failure_class="no_answer")
    problem = uncomparable(answer)
    if problem is not None:
        return Verdict(task_id=t.task_id, passed=False, reason=f"malformed: the answer holds {problem}",
                       failure_class="malformed")
    check = _check(t.contract, t.gold_answer, answer)
    if check.passed:
        return Verdict(task_id=t.task_id, passed=True, reason=check.reason)
    if check.malformed:
        return Verdict(task_id=t.task_id, passed=False, reason=check.reason, failure_class="malformed")
    if t.tier != "K+A+R" or t.base_answer is None:
        return Verdict(task_id=t.task_id, passed=False, reason=check.reason, failure_class="wrong_answer")
    if _check(t.contract, t.base_answer, answer).passed:
        return Verdict(task_id=t.task_id, passed=False, failure_class="rule_ignored",
                       reason=f"matches the answer without any rule; {check.reason}")
    if t.lifted_answer is not None and not shape_problems(t.contract, t.lifted_answer) \
            and _check(t.contract, t.lifted_answer, answer).passed:
        return Verdict(task_id=t.task_id, passed=False, failure_class="rule_ignored",
                       reason=f"matches the answer without the rule {t.featured_rule}; {check.reason}")
    return Verdict(task_id=t.task_id, passed=False, reason=check.reason, failure_class="computation_wrong")


def _check(contract: AnswerContract, expected: dict[str, Any], answer: Any) -> Check:
    """check_answer, where an answer whose values defeat the comparison (a type the contract did
    not foresee inside a row, say) is malformed rather than the end of the run."""
    try:
        return check_answer(contract, expected, answer)
    except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
        return Check(passed=False, malformed=True, mismatches=(f"cannot be compared ({type(exc).__name__})",))


def score_run(tasks: Sequence[Mapping[str, Any] | ScoredTask], answers: Mapping[str, Any],
              reasons: Mapping[str, str] | None = None,
              trials: Mapping[tuple[str, int], Any] | None = None) -> Report:
    """Score every task (a task without an entry in `answers` has no answer; `reasons` says why)
    and aggregate. `trials` ((task_id, trial) -> answer, trial 1 included) adds pass^k over the
    trials; the verdicts and accuracies are those of `answers` (trial 1)."""
    parsed = [validate_task(t) for t in tasks]
    why = reasons or {}
    rows = [TaskVerdict(verdict=score_task(t, answers.get(t.task_id), why.get(t.task_id)), domain=t.domain,
                        analysis_type=t.analysis_type, tier=t.tier, variant=t.variant) for t in parsed]
    known = {t.task_id for t in parsed}
    return Report(
        tasks=rows,
        overall=bucket(r.verdict.passed for r in rows),
        by_domain=accuracy_by((r.domain, r.verdict.passed) for r in rows),
        by_analysis_type=accuracy_by(((r.analysis_type, r.verdict.passed) for r in rows), ANALYSIS_TYPES),
        by_tier=accuracy_by(((r.tier, r.verdict.passed) for r in rows), TIER_ORDER),
        by_variant=accuracy_by(((r.variant, r.verdict.passed) for r in rows), ("standard", "oracle", "no_rule")),
        failure_classes=failure_counts(r.verdict.failure_class for r in rows),
        unmatched_answers=sorted(a for a in answers if a not in known),
        reliability=trial_reliability(parsed, trials) if trials else None,
    )


def trial_reliability(tasks: Sequence[ScoredTask], attempts: Mapping[tuple[str, int], Any]) -> Reliability | None:
    """pass^k over the trials in `attempts` (None for a run of one trial)."""
    n = max((trial for _task, trial in attempts), default=1)
    if n < 2:
        return None
    by_id = {t.task_id: t for t in tasks}
    passed = {key: score_task(by_id[key[0]], answer).passed for key, answer in attempts.items() if key[0] in by_id}
    records = [{"task_id": t.task_id, "tier": t.tier, "analysis_type": t.analysis_type} for t in tasks]
    return reliability(records, passed, n)


# ------------------------------------------------------------------------------ JSONL files
def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank line; a bad line raises RecordFileError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordFileError(p, 0, f"cannot read: {exc}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, loads(line)
        except json.JSONDecodeError as exc:
            raise RecordFileError(p, number, f"not valid JSON: {exc.msg} (column {exc.colno})") from exc
        except ValueError as exc:
            raise RecordFileError(p, number, f"not valid JSON: {exc}") from exc


def load_tasks(path: str | Path) -> list[dict[str, Any]]:
    """The task records of a JSONL file, each checked to be scorable; duplicates and empty files fail."""
    records: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for number, record in read_jsonl(path):
        if not isinstance(record, dict):
            raise RecordFileError(path, number, "a task record must be a JSON object")
        try:
            task_id = validate_task(record).task_id
        except TaskRecordError as exc:
            raise RecordFileError(path, number, str(exc)) from exc
        if task_id in first_line:
            raise RecordFileError(path, number, f"task {task_id} repeats line {first_line[task_id]}")
        first_line[task_id] = number
        records.append(record)
    if not records:
        raise RecordFileError(path, 0, "no task records")
    return records


def load_answers(path: str | Path) -> dict[str, Any]:
    """task_id -> answer (of trial 1) from a JSONL file of {"task_id", "answer"} lines."""
    return {task: answer for (task, trial), answer in load_attempts(path).items() if trial == 1}


def load_attempts(path: str | Path) -> dict[tuple[str, int], Any]:
    """(task_id, trial) -> answer from a JSONL file of {"task_id", "answer"[, "trial"]} lines; a
    repeated (task_id, trial) fails."""
    answers: dict[tuple[str, int], Any] = {}
    first_line: dict[tuple[str, int], int] = {}
    for number, record in read_jsonl(path):
        try:
            parsed = AnswerRecord.model_validate(record)
        except ValidationError as exc:
            raise RecordFileError(path, number, _pydantic_problems(exc)) from exc
        key = (parsed.task_id, parsed.trial)
        if key in first_line:
            which = f" trial {parsed.trial}" if parsed.trial > 1 else ""
            raise RecordFileError(path, number, f"task {parsed.task_id}{which} repeats line {first_line[key]}")
        first_line[key] = number
        answers[key] = parsed.answer
    return answers


def _pydantic_problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())
