"""Task records for evaluation, read from the graph.

A Task node stores its answers, SQL and parameters as JSON strings; `load_tasks` turns the
admitted tasks of a domain (optionally of one Run) into `TaskRecord`s, the private view that
the scorer, the reference agents and the ablations read (docs/contracts.md, "Files and
command"). An agent that stands for a model only ever sees `public_view`.

The answer contract is taken from the node when generation stored one (`contract`), else made
here as generation's counterfactual filter makes it (`core.contracts.task_contract`: the
metric's rounding, trend percentages their own), and the gold answer is checked against it.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dibench.core.contracts import AnalysisType, task_contract, validate_expected
from dibench.core.errors import DibenchError, NotFound
from dibench.evaluation.scoring import read_jsonl
from dibench.stores.graph import Graph

Variant = Literal["standard", "oracle", "no_rule"]
VARIANTS: tuple[str, ...] = ("standard", "oracle", "no_rule")


class TaskLoadError(DibenchError):
    """A Task node cannot become a task record: names the task and the property at fault."""


class TaskRecord(BaseModel):
    """One task as evaluation sees it (private view: gold, base, SQL, contract)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(min_length=1)
    domain: str
    analysis_type: AnalysisType
    tier: Literal["K", "K+A", "K+A+R"]
    variant: Variant
    question: str
    answer_format: str
    gold_answer: dict[str, Any]
    base_answer: dict[str, Any] | None
    gold_sql: str | None
    base_sql: str | None
    params: dict[str, Any] = Field(description="bind parameters of gold_sql")
    base_params: dict[str, Any]
    contract: dict[str, Any]
    metric_ids: list[str]
    rule_ids: list[str]
    facts: dict[str, Any] = Field(description="what the question fixes: window, groups, k, threshold ...")
    run_key: str | None = None
    status: Literal["admitted", "rejected"] = "admitted"
    rejections: list[str] = Field(default_factory=list)
    dimension: str | None = Field(None, description="table.column the task slices or groups by")
    featured_rule: str | None = Field(None, description="the rule a rule task is about")
    decisive_rules: list[str] = Field(default_factory=list, description="rules whose removal changes the gold")
    policy: list[str] = Field(default_factory=list, description="every rule considered, as id@version")
    lifted_answer: dict[str, Any] | None = Field(None, description="the answer without the featured rule")
    lifted_sql: str | None = None
    lifted_params: dict[str, Any] = Field(default_factory=dict)
    featured_sql: str | None = Field(None, description="the featured rule alone, shaped like gold_sql")
    featured_params: dict[str, Any] = Field(default_factory=dict)

    @property
    def rounding(self) -> int:
        return int(self.contract["rounding"])


def public_view(task: TaskRecord) -> dict[str, str]:
    """What an agent under evaluation is given: no answer, no SQL, no provenance."""
    return {"task_id": task.task_id, "question": task.question, "answer_format": task.answer_format}


def load_tasks(graph: Graph, domain: str, *, run: str | None = None, variants: Iterable[str] | None = None,
               limit: int | None = None, statuses: Sequence[str] = ("admitted",)) -> list[TaskRecord]:
    """Tasks of `domain` (of `run` if given; admitted ones unless `statuses` says otherwise), ordered
    by key, filtered by variant."""
    wanted = set(variants) if variants is not None else set(VARIANTS)
    unknown = wanted - set(VARIANTS)
    if unknown:
        raise TaskLoadError(f"unknown variant(s) {sorted(unknown)}; expected {', '.join(VARIANTS)}")
    rows = graph.read("eval_tasks", domain=domain, run=run, statuses=list(statuses))
    if not rows:
        where = f"run {run}" if run else f"domain {domain!r}"
        raise NotFound(f"no {'/'.join(statuses)} tasks for {where}", hint=f"run `dibench generate {domain}` first")
    records = [task_record(r["task"], r["rounding"]) for r in rows if r["task"].get("variant") in wanted]
    return records[:limit] if limit is not None else records


def task_record(props: dict[str, Any], rounding: int | None) -> TaskRecord:
    """One Task node's properties (+ its metric's rounding) -> a validated TaskRecord."""
    key = str(props.get("key", "?"))

    def js(name: str, default: Any = None) -> Any:
        raw = props.get(name)
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except (TypeError, json.JSONDecodeError) as exc:
            raise TaskLoadError(f"task {key}: property {name} is not valid JSON: {exc}") from exc

    analysis = props.get("analysis_type")
    gold = js("gold_answer")
    if not isinstance(gold, dict):
        raise TaskLoadError(f"task {key}: gold_answer is missing or not a JSON object")
    contract = js("contract")
    if contract is None:
        if rounding is None:
            raise TaskLoadError(f"task {key}: its metric has no rounding (no ON_METRIC edge?)")
        try:
            made = task_contract(str(analysis), int(rounding), gold)
            validate_expected(made, gold, what="gold answer")
            contract = made.model_dump(mode="json")
        except DibenchError as exc:
            raise TaskLoadError(f"task {key}: {exc}") from exc
    data = {
        "task_id": key, "domain": props.get("domain"), "analysis_type": analysis, "tier": props.get("tier"),
        "variant": props.get("variant", "standard"), "question": props.get("question"),
        "answer_format": props.get("answer_format"), "gold_answer": gold, "base_answer": js("base_answer"),
        "gold_sql": props.get("gold_sql"), "base_sql": props.get("base_sql"),
        "params": js("gold_params", {}), "base_params": js("base_params", {}), "contract": contract,
        "metric_ids": [props["metric_id"]] if props.get("metric_id") else [],
        "rule_ids": list(props.get("rule_ids") or []), "facts": js("facts", {}), "run_key": props.get("run_key"),
        "status": props.get("status", "admitted"), "rejections": list(props.get("rejections") or []),
        "dimension": props.get("dimension"),
        "featured_rule": props.get("featured_rule"), "decisive_rules": list(props.get("decisive_rules") or []),
        "policy": list(props.get("policy") or []), "lifted_answer": js("lifted_answer"),
        "lifted_sql": props.get("lifted_sql"), "lifted_params": js("lifted_params", {}),
        "featured_sql": props.get("featured_sql"), "featured_params": js("featured_params", {}),
    }
    try:
        return TaskRecord.model_validate(data)
    except ValueError as exc:
        raise TaskLoadError(f"task {key}: {exc}") from exc


def task_dicts(tasks: Sequence[TaskRecord]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json") for t in tasks]


def write_tasks_jsonl(tasks: Sequence[TaskRecord], path: Path) -> None:
    """The private task file that `dibench score TASKS ANSWERS` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for t in task_dicts(tasks):
            fh.write(json.dumps(t, sort_keys=True, default=str) + "\n")


def read_tasks_jsonl(path: Path) -> list[TaskRecord]:
    return [TaskRecord.model_validate(obj) for _n, obj in read_jsonl(path)]


def domain_schema(graph: Graph, domain: str) -> str:
    """The PostgreSQL schema of an ingested domain's data."""
    rows = graph.read("eval_domain", domain=domain)
    if not rows or not rows[0]["schema"]:
        raise NotFound(f"domain {domain!r} is not in the graph", hint=f"run `dibench ingest {domain}` first")
    return str(rows[0]["schema"])
