"""`dibench drift DOMAIN`: keep the gold answers true when the warehouse data moves.

`plan_drift` decides one outcome per admitted task with SQL by re-executing its stored SQL with
its stored parameters and comparing the re-derived answers with the stored ones under the
task's contract: skipped (fingerprints unchanged), unchanged, drifted, failed. `write_drift`
writes the changelog (a DriftCheck with a CHECKED edge per task) and, with `apply`, the new task
versions, in one transaction. Details: docs/architecture.md, "Keeping gold true".
"""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from dibench.core.contracts import AnswerContract, ContractError, check_answer
from dibench.core.errors import NotFound, RewriteError, WarehouseError
from dibench.evaluation.rederive import DerivationError, derive_answer, needs_base_rows
from dibench.evaluation.tasks import TaskLoadError, TaskRecord, task_record
from dibench.generation.validation import rule_changes_answer
from dibench.service.rederive import canonical
from dibench.service.update import UpdateConflict
from dibench.stores import fingerprint as fpr
from dibench.stores.graph import Graph, Tx
from dibench.stores.lease import domain_lease
from dibench.stores.warehouse import Warehouse

# (SQL, parameters, answer) properties of a Task node that drift re-executes; a stored answer
# without SQL (knowledge tasks) is not data and is not checked.
ANSWERS = (("gold_sql", "gold_params", "gold_answer"), ("base_sql", "base_params", "base_answer"),
           ("lifted_sql", "lifted_params", "lifted_answer"))
OUTCOMES = ("skipped", "unchanged", "drifted", "failed")
FAILURES = (WarehouseError, DerivationError, ContractError, RewriteError, TaskLoadError)


@dataclass
class TaskDrift:
    key: str
    analysis_type: str
    metric_id: str
    variant: str
    tables: list[str]
    outcome: str = "unchanged"
    reason: str = ""
    changed_tables: list[str] = field(default_factory=list)
    version_before: int = 1
    version_after: int = 1
    action: str = "none"  # none | versioned | retired | refreshed
    old: dict[str, Any] = field(default_factory=dict)
    new: dict[str, Any] = field(default_factory=dict)
    fingerprint: fpr.Fingerprint | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "fingerprint"}


@dataclass
class DriftPlan:
    domain: str
    schema: str
    seq: int
    key: str
    at: str
    at_ms: int
    tasks: list[TaskDrift] = field(default_factory=list)
    not_computed: int = 0
    fingerprint_queries: int = 0
    fingerprint_seconds: float = 0.0
    sql_statements: int = 0
    sql_seconds: float = 0.0
    seconds: float = 0.0
    applied: bool = False

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(OUTCOMES, 0)
        for t in self.tasks:
            out[t.outcome] += 1
        return out

    def changelog(self) -> dict[str, Any]:
        return {"domain": self.domain, "schema": self.schema, "check_key": self.key, "at": self.at,
                "applied": self.applied, "counts": self.counts(), "not_computed": self.not_computed,
                "timing": {"seconds": self.seconds, "fingerprint_queries": self.fingerprint_queries,
                           "fingerprint_seconds": round(self.fingerprint_seconds, 3),
                           "sql_statements": self.sql_statements, "sql_seconds": round(self.sql_seconds, 3)},
                "tasks": [t.as_dict() for t in sorted(self.tasks, key=lambda t: t.key)]}


# ------------------------------------------------------------------------------ planning
@dataclass
class _Runner:
    """Executes stored SQL through the read-only path, each (SQL, parameters) once per check."""

    wh: Warehouse
    cache: dict[tuple[str, str], list[tuple[Any, ...]]] = field(default_factory=dict)
    statements: int = 0
    seconds: float = 0.0

    def rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        key = (sql, canonical(params))
        if key not in self.cache:
            res = self.wh.execute_readonly(sql, params, exact=True)
            self.statements += 1
            self.seconds += res.elapsed_s
            self.cache[key] = res.rows
        return self.cache[key]


def _one_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def reexecute(rec: TaskRecord, props: dict[str, Any], run: _Runner) -> dict[str, dict[str, Any]]:
    """{answer property: answer derived from today's data} for every stored answer with SQL."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for sql_field, params_field, answer in ANSWERS:
        sql = props.get(sql_field)
        if sql and (props.get(answer) is not None or (sql_field != "gold_sql" and needs_base_rows(rec))):
            rows[sql_field] = run.rows(sql, json.loads(props.get(params_field) or "{}"))
    out = {}
    # A counterfactual's hypothetical side is the policy without the featured rule (the rows
    # without any rule for a task stored without that SQL, e.g. the no-rule variant).
    hypothetical = rows.get("lifted_sql", rows.get("base_sql"))
    if props.get("gold_answer") is not None and "gold_sql" in rows:
        out["gold_answer"] = derive_answer(rec, rows["gold_sql"], hypothetical)
    if props.get("base_answer") is not None and "base_sql" in rows:
        # As the no-rule agent: without rules a counterfactual's two sides are the same rows.
        out["base_answer"] = derive_answer(rec, rows["base_sql"], rows["base_sql"])
    if props.get("lifted_answer") is not None and "lifted_sql" in rows:
        out["lifted_answer"] = derive_answer(rec, rows["lifted_sql"], rows["lifted_sql"])
    return out


def compare(rec: TaskRecord, props: dict[str, Any], new: dict[str, dict[str, Any]]) -> list[str]:
    """Mismatches of the new answers against the stored ones, under the task's contract."""
    contract = AnswerContract.model_validate(rec.contract)
    out = []
    for answer, value in new.items():
        check = check_answer(contract, json.loads(props[answer]), value)
        if check.malformed:
            raise ContractError(f"task {rec.task_id}: re-derived {answer} does not fit the contract")
        if not check.passed:
            out.append(f"{answer}: {check.reason}")
    return out


def _changed(stored: fpr.Fingerprint, reads: fpr.Reads, fp: fpr.Fingerprinter) -> list[str]:
    """Tables whose fingerprint moved; all of them when a fingerprint cannot be taken any more
    (a recorded column is gone): the task's own SQL then says whether it still runs."""
    try:
        return fpr.changed_tables(stored, reads, fp)
    except WarehouseError:
        return sorted(reads)


def _fingerprint(stored: fpr.Fingerprint | None, reads: fpr.Reads | None,
                 fp: fpr.Fingerprinter) -> fpr.Fingerprint | None:
    """Today's fingerprint for a re-executed task; None (re-execute next time) if it cannot be taken."""
    try:
        return fpr.refreshed(stored, reads, fp)
    except WarehouseError:
        return None


def check_task(props: dict[str, Any], rounding: int | None, schema: str, run: _Runner,
               fp: fpr.Fingerprinter) -> TaskDrift:
    reads: fpr.Reads | None = None
    td = TaskDrift(str(props["key"]), str(props.get("analysis_type")), str(props.get("metric_id") or ""),
                   str(props.get("variant") or "standard"), [], version_before=int(props.get("version") or 1))
    td.version_after = td.version_before
    stored = fpr.loads(props.get("data_fingerprint"))
    try:
        rec = task_record(props, rounding)
        reads = fpr.sql_reads(props.get(f) for f, _p, _a in ANSWERS)
        td.tables = sorted(reads or {})
        if fpr.covers(stored, reads, schema):
            assert stored is not None and reads is not None
            td.changed_tables = _changed(stored, reads, fp)
            if not td.changed_tables:
                td.outcome, td.reason = "skipped", "no table the task reads changed since its gold was computed"
                return td
        new = reexecute(rec, props, run)
        mismatches = compare(rec, props, new)
    except FAILURES as exc:
        td.outcome, td.reason = "failed", _one_line(exc)
        return td
    td.fingerprint = _fingerprint(stored, reads, fp)
    changed = ", ".join(td.changed_tables) if td.changed_tables else "no recorded fingerprint"
    if mismatches:
        td.outcome, td.reason = "drifted", f"changed: {changed}; " + "; ".join(mismatches)
        td.old = {a: json.loads(props[a]) for a in new}
        td.new = new
    else:
        td.reason = f"re-executed ({changed}): every stored answer still matches"
    return td


def plan_drift(graph: Graph, wh: Warehouse, domain: str) -> DriftPlan:
    """Check every admitted task of `domain` against the data as it is now. Reads only."""
    started = time.perf_counter()
    info = graph.read("drift_domain", domain=domain)
    if not info or not info[0]["schema"]:
        raise NotFound(f"no ingested domain {domain!r}", hint="`dibench graph stats` shows what is loaded")
    schema, seq = str(info[0]["schema"]), int(info[0]["seq"])
    stamp = dt.datetime.now(dt.timezone.utc)
    plan = DriftPlan(domain, schema, seq, f"drift:{domain}/{stamp:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}",
                     stamp.isoformat(timespec="seconds"), int(stamp.timestamp() * 1000))
    run, fp = _Runner(wh.for_schema(schema)), fpr.Fingerprinter(wh, schema)
    for row in graph.read("eval_tasks", domain=domain, run=None, statuses=["admitted"]):
        props = row["task"]
        if not props.get("gold_sql"):
            plan.not_computed += 1
            continue
        plan.tasks.append(check_task(props, row["rounding"], schema, run, fp))
    plan.fingerprint_queries, plan.fingerprint_seconds = fp.queries, fp.seconds
    plan.sql_statements, plan.sql_seconds = run.statements, run.seconds
    plan.seconds = round(time.perf_counter() - started, 3)
    return plan


# ------------------------------------------------------------------------------ writing
def _still_a_rule_task(td: TaskDrift, props_tier: str, rounding: int) -> bool:
    gold, base = td.new.get("gold_answer"), td.new.get("base_answer")
    if props_tier != "K+A+R" or td.variant != "standard" or gold is None or base is None:
        return True
    return rule_changes_answer(td.analysis_type, gold, base, rounding)


def apply_rows(plan: DriftPlan, tiers: dict[str, tuple[str, int]]) -> dict[str, list[dict[str, Any]]]:
    """The archive / new-content / retire rows of `apply` (and each task's action set)."""
    archive, writes, retire = [], [], []
    for td in plan.tasks:
        if td.outcome == "unchanged" and td.fingerprint is not None:
            td.action = "refreshed"
            writes.append({"key": td.key, "version": td.version_before,
                           "props": {"data_fingerprint": fpr.dumps(td.fingerprint)}})
        if td.outcome != "drifted":
            continue
        td.action, td.version_after = "versioned", td.version_before + 1
        archive.append({"key": td.key, "prev_version": td.version_before,
                        "version_key": f"taskver:{td.key}@v{td.version_before}", "update": plan.key})
        props: dict[str, Any] = {k: canonical(v) for k, v in td.new.items()}
        props.update(version=td.version_after, updated_by=plan.key, data_fingerprint=fpr.dumps(td.fingerprint))
        writes.append({"key": td.key, "version": td.version_before, "props": props})
        tier, rounding = tiers[td.key]
        if not _still_a_rule_task(td, tier, rounding):
            td.action = "retired"
            retire.append({"key": td.key, "reason": "with today's data the rule no longer changes the answer",
                           "update": plan.key})
    return {"archive": archive, "writes": writes, "retire": retire}


def _edges(plan: DriftPlan) -> list[dict[str, Any]]:
    return [{"key": td.key, "props": {
        "outcome": td.outcome, "reason": td.reason, "action": td.action, "metric_id": td.metric_id,
        "analysis_type": td.analysis_type, "variant": td.variant, "tables": td.tables,
        "changed_tables": td.changed_tables, "version_before": td.version_before, "version_after": td.version_after,
        "old": canonical(td.old) if td.old else None, "new": canonical(td.new) if td.new else None}}
        for td in plan.tasks]


def _record_props(plan: DriftPlan) -> dict[str, Any]:
    return {"domain": plan.domain, "schema": plan.schema, "at": plan.at, "at_ms": plan.at_ms, "applied": plan.applied,
            "counts": json.dumps(plan.counts(), sort_keys=True), "not_computed": plan.not_computed,
            "seconds": plan.seconds}


def write_drift(plan: DriftPlan, graph: Graph, *, apply: bool = False) -> dict[str, int]:
    """Write the changelog (and, with `apply`, the new task versions) in one transaction."""
    rows: dict[str, list[dict[str, Any]]] = {"archive": [], "writes": [], "retire": []}
    if apply:
        tiers = {r["key"]: (str(r["tier"]), int(r["rounding"] or 0))
                 for r in graph.read("drift_task_tiers", keys=[t.key for t in plan.tasks if t.outcome == "drifted"])}
        rows = apply_rows(plan, tiers)
        plan.applied = True

    def work(tx: Tx) -> dict[str, int]:
        if rows["writes"] and not tx.run("update_claim_seq", domain=plan.domain, expected=plan.seq):
            raise UpdateConflict(f"domain {plan.domain!r} changed since this drift check was planned")
        tx.run_rows("update_tasks_archive", rows["archive"])
        tx.run_rows("drift_tasks_apply", rows["writes"])
        tx.run_rows("update_tasks_retire", rows["retire"])
        tx.run("drift_record", domain=plan.domain, key=plan.key, props=_record_props(plan))
        tx.run_rows("drift_record_tasks", _edges(plan), batch_size=500, check=plan.key)
        return tx.counters

    if not apply:
        return graph.transaction(work)
    with domain_lease(graph, plan.domain):
        return graph.transaction(work)


def run_drift(graph: Graph, wh: Warehouse, domain: str, *, apply: bool = False, retries: int = 3) -> DriftPlan:
    """Plan and write; an update of the domain that commits in between makes us re-plan (bounded)."""
    for attempt in range(retries):
        plan = plan_drift(graph, wh, domain)
        try:
            write_drift(plan, graph, apply=apply)
            return plan
        except UpdateConflict:
            if attempt == retries - 1:
                raise
    raise AssertionError("unreachable")


def latest_check(graph: Graph, domain: str) -> dict[str, Any]:
    """The newest DriftCheck of `domain` with its per-task edges (for the API and the report)."""
    rows = graph.read("drift_latest", domain=domain)
    if not rows:
        raise NotFound(f"no drift check of domain {domain!r}", hint=f"run `dibench drift {domain}`")
    check = dict(rows[0]["check"])
    check["counts"] = json.loads(check["counts"])
    check["tasks"] = sorted(({**t, "old": json.loads(t["old"]) if t.get("old") else None,
                              "new": json.loads(t["new"]) if t.get("new") else None} for t in rows[0]["tasks"]),
                            key=lambda t: t["key"])
    return check
