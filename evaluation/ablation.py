"""Ablations: what the graph's rule -> metric edges are worth, and the matched task variants.

`pairing` re-pairs each rule task's featured slot with (a) the rule the graph selected, (b) the
most similar other rule (BM25 over rule documents), (c) a seeded random other rule, runs each
pairing read-only and counts how often it changes the answer (published: 82% / 29% / 22%); an
operation that does not fit the metric is "not applicable". `variant_rows` reads a scored run's
rule tasks by variant. The method: docs/architecture.md, "Evaluation".
"""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dibench.core.contracts import AnswerContract, check_answer
from dibench.core.errors import DibenchError, NotFound, RewriteError, WarehouseError
from dibench.core.models import LLMEffects, MetricSpec
from dibench.evaluation.kb import Bm25Index
from dibench.evaluation.rederive import DerivationError, derive_answer, needs_base_rows
from dibench.evaluation.reporting_tables import Bucket, bucket
from dibench.evaluation.scoring import Report
from dibench.evaluation.tasks import TaskLoadError, TaskRecord, domain_schema, load_tasks, task_record
from dibench.sqlops.dialect import parse, placeholders, render
from dibench.sqlops.ops import AnyEffect, Bound, apply_effects
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse

Pairing = Literal["graph", "similar", "random"]
PAIRINGS: tuple[Pairing, ...] = ("graph", "similar", "random")
PUBLISHED_PCT: dict[str, float] = {"graph": 82.0, "similar": 29.0, "random": 22.0}
Outcome = Literal["changed", "unchanged", "not_applicable"]
FILTER_CHECK = "rule_not_discriminative"


@dataclass(frozen=True)
class RuleInfo:
    id: str
    title: str
    body: str
    effects: tuple[dict[str, Any], ...]


class PairingDetail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    analysis_type: str
    metric_id: str
    pairing: Pairing
    rule_ids: list[str]
    own_effect: bool = Field(description="the rule has its own effect on this metric (not re-targeted)")
    outcome: Outcome
    reason: str


class PairingRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pairing: Pairing
    pairings: int
    changed: int
    unchanged: int
    not_applicable: int
    own_effect: int = Field(description="pairings whose rule has its own effect on the metric")
    changed_pct: float = Field(description="changed / pairings (not applicable counts as no change)")
    changed_pct_of_applicable: float
    published_pct: float


class PairingReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: str
    seed: int
    run: str | None
    tasks: int
    tasks_rejected_by_filter: int = Field(description="of `tasks`, candidates the counterfactual filter rejected")
    rows: list[PairingRow]
    graph_reproduces_gold: int = Field(description="graph pairings whose answer equals the stored gold answer")
    details: list[PairingDetail]


# ------------------------------------------------------------------------------ inputs from the graph
def metric_spec(props: dict[str, Any]) -> MetricSpec:
    """A Metric node back into the catalog model that sqlops.ops applies effects with."""
    data = {k: props[k] for k in MetricSpec.model_fields if k in props and k not in ("params", "derived")}
    data["params"] = json.loads(props.get("params_json") or "{}")
    if props.get("derived_json"):
        data["derived"] = json.loads(props["derived_json"])
    return MetricSpec.model_validate(data)


def load_rules(graph: Graph, domain: str) -> list[RuleInfo]:
    out = []
    for r in graph.read("eval_rules", domain=domain):
        rule = r["rule"]
        effects = json.loads(r["effects_json"] or "[]")
        out.append(RuleInfo(rule["id"], str(rule.get("title", "")), str(rule.get("body", "")), tuple(effects)))
    return out


def _pairable(t: TaskRecord) -> bool:
    return bool(t.featured_rule and t.lifted_sql and t.lifted_answer is not None)


def rule_tasks(graph: Graph, domain: str, run: str | None, include_rejected: bool) -> list[TaskRecord]:
    """Standard rule tasks (a featured rule, SQL without it); with include_rejected, also the
    candidates rejected only by the counterfactual filter (their gold answer is otherwise valid)."""
    tasks = [t for t in load_tasks(graph, domain, run=run, variants=["standard"]) if _pairable(t)]
    if include_rejected:
        for row in graph.read("eval_tasks", domain=domain, run=run, statuses=["rejected"]):
            props = row["task"]
            reasons = props.get("rejections") or []
            if not props.get("featured_rule") or not reasons or not all(r.startswith(FILTER_CHECK) for r in reasons):
                continue
            try:
                tasks.append(task_record(props, row["rounding"]))
            except TaskLoadError as exc:
                raise TaskLoadError(f"rejected candidate kept for the ablation cannot be read: {exc}") from exc
    return [t for t in tasks if _pairable(t)]


# ------------------------------------------------------------------------------ choosing rules
def similar_rule(metric: MetricSpec, rules: Sequence[RuleInfo], index: Bm25Index, exclude: set[str]) -> str | None:
    """The rule (not in `exclude`) whose title + body BM25-scores best for the metric's catalog text."""
    query = f"{metric.name}. {metric.description} {metric.formula}"
    for i, _score in index.ranked(query, [r.id for r in rules]):
        if rules[i].id not in exclude:
            return rules[i].id
    return None


def random_rule(task_id: str, rules: Sequence[RuleInfo], exclude: set[str], seed: int) -> str | None:
    others = sorted(r.id for r in rules if r.id not in exclude)
    if not others:
        return None
    # Seeded per task, so a task's draw does not depend on which other tasks are in the run.
    return random.Random(f"{seed}|{task_id}").choice(others)


def has_own_effect(rule: RuleInfo, metric: MetricSpec) -> bool:
    return any(e.get("metric") == metric.id for e in rule.effects)


def effects_on(rule: RuleInfo, metric: MetricSpec) -> list[tuple[str, AnyEffect]]:
    """The rule's effect(s) on this metric; a rule without one has its effects re-targeted to it."""
    own = [e for e in rule.effects if e.get("metric") == metric.id]
    chosen = own or [{**e, "metric": metric.id} for e in rule.effects]
    try:
        return [(rule.id, LLMEffects.model_validate({"effects": [e]}).effects[0]) for e in chosen]
    except ValidationError as exc:
        raise RewriteError(f"rule {rule.id}: effect does not validate for {metric.id}: {exc.errors()[0]['msg']}") from exc


# ------------------------------------------------------------------------------ running one pairing
@dataclass
class PairingRun:
    wh: Warehouse
    task: TaskRecord
    metric: MetricSpec
    contract: AnswerContract
    base_rows: list[tuple[Any, ...]] | None

    def outcome(self, rules: Sequence[RuleInfo]) -> tuple[Outcome, str, dict[str, Any] | None]:
        """(outcome, reason, derived answer) of applying `rules` to the task's SQL without its featured rule."""
        assert self.task.lifted_sql is not None and self.task.lifted_answer is not None
        try:
            effects = [pair for r in rules for pair in effects_on(r, self.metric)]
            if not effects:
                return "not_applicable", "the rule has no structured effect", None
            bound = apply_effects(Bound(parse(self.task.lifted_sql, where=f"task {self.task.task_id}: lifted_sql")),
                                  effects, self.metric)
            params = {**self.task.lifted_params, **bound.params}
            unbound = sorted(placeholders(bound.tree) - set(params))
            if unbound:
                # e.g. an override formula written for another metric's parameters
                return "not_applicable", f"operation uses parameter(s) {unbound} this metric does not have", None
            rows = self.wh.execute_readonly(render(bound.tree), params, exact=True).rows
        except (RewriteError, WarehouseError) as exc:
            return "not_applicable", f"operation does not apply: {str(exc).splitlines()[0]}", None
        try:
            answer = derive_answer(self.task, rows, self.base_rows)
        except DerivationError as exc:
            # The rule emptied the analysis (e.g. too few periods left): the answer did change.
            return "changed", f"no answer any more: {exc}", None
        check = check_answer(self.contract, self.task.lifted_answer, answer)
        if check.malformed:
            raise DibenchError(f"task {self.task.task_id}: re-derived answer does not fit the contract: {check.reason}")
        if check.passed:
            return "unchanged", "same as without the featured rule", answer
        return "changed", check.reason, answer


def pairing_ablation(graph: Graph, wh: Warehouse, domain: str, *, seed: int = 42, run: str | None = None,
                     include_rejected: bool = False) -> PairingReport:
    wh = wh.for_schema(domain_schema(graph, domain))  # task SQL runs as the domain's read-only role
    metrics = {m["metric"]["id"]: metric_spec(m["metric"]) for m in graph.read("eval_metrics", domain=domain)}
    rules = load_rules(graph, domain)
    by_id = {r.id: r for r in rules}
    index = Bm25Index([f"{r.title}\n{r.body}" for r in rules])
    tasks = rule_tasks(graph, domain, run, include_rejected)
    if not tasks:
        raise NotFound(f"domain {domain!r} has no rule tasks with SQL", hint=f"run `dibench generate {domain}` first")
    details: list[PairingDetail] = []
    reproduces = 0
    for task in tasks:
        metric = metrics[task.metric_ids[0]]
        assert task.featured_rule is not None and task.lifted_sql is not None
        # A counterfactual answer puts the rows without the featured rule beside the rows with it.
        base_rows = wh.execute_readonly(task.lifted_sql, task.lifted_params, exact=True).rows if needs_base_rows(task) else None
        pr = PairingRun(wh, task, metric, AnswerContract.model_validate(task.contract), base_rows)
        # Other candidates exclude the rules already in force (applying one twice proves nothing).
        in_force = {p.split("@", 1)[0] for p in task.policy} | {task.featured_rule}
        choice: dict[Pairing, list[str]] = {"graph": [task.featured_rule]}
        sim = similar_rule(metric, rules, index, in_force)
        rnd = random_rule(task.task_id, rules, in_force, seed)
        choice["similar"] = [sim] if sim else []
        choice["random"] = [rnd] if rnd else []
        for pairing in PAIRINGS:
            ids = choice[pairing]
            if not ids:
                outcome: Outcome = "not_applicable"
                reason, answer = "no other rule in the domain", None
            else:
                outcome, reason, answer = pr.outcome([by_id[i] for i in ids if i in by_id])
            if pairing == "graph" and answer is not None and check_answer(pr.contract, task.gold_answer, answer).passed:
                reproduces += 1
            own_effect = bool(ids) and all(has_own_effect(by_id[i], metric) for i in ids if i in by_id)
            details.append(PairingDetail(task_id=task.task_id, analysis_type=task.analysis_type,
                                         metric_id=metric.id, pairing=pairing, rule_ids=ids, own_effect=own_effect,
                                         outcome=outcome, reason=reason))
    return PairingReport(domain=domain, seed=seed, run=run, tasks=len(tasks),
                         tasks_rejected_by_filter=sum(1 for t in tasks if t.status == "rejected"),
                         rows=summarise(details), graph_reproduces_gold=reproduces, details=details)


def summarise(details: Sequence[PairingDetail]) -> list[PairingRow]:
    rows = []
    for pairing in PAIRINGS:
        ds = [d for d in details if d.pairing == pairing]
        changed = sum(1 for d in ds if d.outcome == "changed")
        na = sum(1 for d in ds if d.outcome == "not_applicable")
        applicable = len(ds) - na
        rows.append(PairingRow(
            pairing=pairing, pairings=len(ds), changed=changed, unchanged=applicable - changed, not_applicable=na,
            own_effect=sum(1 for d in ds if d.own_effect),
            changed_pct=round(100.0 * changed / len(ds), 1) if ds else 0.0,
            changed_pct_of_applicable=round(100.0 * changed / applicable, 1) if applicable else 0.0,
            published_pct=PUBLISHED_PCT[pairing]))
    return rows


# ------------------------------------------------------------------------------ matched variants
def variant_rows(report: Report) -> dict[str, Bucket]:
    """Accuracy on rule tasks (tier K+A+R) by variant: standard, oracle (rule text given), no_rule."""
    out: dict[str, Bucket] = {}
    for variant in ("standard", "oracle", "no_rule"):
        flags = [t.verdict.passed for t in report.tasks if t.tier == "K+A+R" and t.variant == variant]
        if flags:
            out[variant] = bucket(flags)
    return out
