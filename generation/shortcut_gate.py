"""The shortcut audit of a generation run, with its I/O: the run's admitted tasks are audited
against every no-understanding strategy (generation/shortcuts), a family whose best shortcut
passes more than the limit is not admitted (each of its tasks rejected with the reason, its
variants with it), and the table is stored on the Run node (`shortcut_audit`, JSON). Before it,
each knowledge task a lazy reader or a shortcut answers is refused on its own
(generation/knowledge_admission.py)."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from dibench.core.contracts import AnswerContract, task_contract
from dibench.core.pack import Pack
from dibench.generation.knowledge_admission import refusals
from dibench.generation.shortcuts import AuditTask, Corpus, registry, stem_of
from dibench.generation.shortcuts.audit import ShortcutAudit, audit, family_of
from dibench.generation.shortcuts.holdout import holdout_audit
from dibench.generation.writeback import with_variants
from dibench.stores.graph import Graph

SHORTCUT = "shortcut_family"


def _js(props: dict[str, Any], name: str) -> Any:
    raw = props.get(name)
    return json.loads(raw) if isinstance(raw, str) else None


def audit_task(props: dict[str, Any], rounding: int | None) -> AuditTask:
    """A Task node's properties as the audit reads them."""
    analysis = str(props["analysis_type"])
    contract = _js(props, "contract")
    parsed = (AnswerContract.model_validate(contract) if contract is not None
              else task_contract(analysis, int(rounding if rounding is not None else 2), _js(props, "gold_answer")))
    return AuditTask(key=str(props["key"]), stem=stem_of(str(props["key"])), analysis_type=analysis,
                     tier=str(props["tier"]), variant=str(props.get("variant") or "standard"),
                     question=str(props.get("question") or ""), metric_id=props.get("metric_id"),
                     dimension=props.get("dimension"), gold=_js(props, "gold_answer") or {}, contract=parsed,
                     facts=_js(props, "facts") or {}, base=_js(props, "base_answer"),
                     lifted=_js(props, "lifted_answer"))


def documents(pack: Pack) -> tuple[str, ...]:
    return tuple(f"{doc.front.title}\n{doc.body}" for doc in pack.rules)


def run_tasks(graph: Graph, domain: str, run_key: str) -> list[AuditTask]:
    return [audit_task(r["task"], r["rounding"])
            for r in graph.read("eval_tasks", domain=domain, run=run_key, statuses=["admitted"])]


def gate(graph: Graph, tasks: list[AuditTask], table: ShortcutAudit) -> dict[str, int]:
    """Reject the tasks of every family the audit does not admit (and the variants of a rejected
    standard task); {family: tasks rejected}."""
    reasons: dict[str, str] = {}
    by_family = {c.family: c for c in table.rejected()}
    for t in tasks:
        cell = by_family.get("/".join(family_of(t)))
        if cell is not None:
            reasons[t.key] = (f"{SHORTCUT}: the shortcut '{cell.best_shortcut}' passes {cell.best_passed}/"
                              f"{cell.tasks} ({cell.best_pct:.1f}%, 95% CI {cell.low_pct:.1f}-{cell.high_pct:.1f}) "
                              f"of {cell.family}, more than {table.limit_pct:g}%")
    with_variants(reasons, (t.key for t in tasks), f"{SHORTCUT}: its standard task {{}} is not admitted")
    if reasons:
        graph.write("tasks_reject_with_reason", rows=[{"key": k, "reason": r} for k, r in sorted(reasons.items())])
    fam = {t.key: "/".join(family_of(t)) for t in tasks}
    return dict(sorted(Counter(fam[k] for k in reasons).items()))


def refuse_knowledge(graph: Graph, pack: Pack, run_key: str) -> dict[str, int]:
    """Refuse every admitted knowledge task of the run that a lazy reader or a shortcut answers,
    with the reason; {reason: tasks refused}."""
    tasks = run_tasks(graph, pack.name, run_key)
    reasons = refusals(tasks, documents(pack), registry())
    with_variants(reasons, (t.key for t in tasks), "knowledge_shortcut: its standard task {} is refused")
    if reasons:
        graph.write("tasks_reject_with_reason", rows=[{"key": k, "reason": r} for k, r in sorted(reasons.items())])
    return dict(sorted(Counter(r.split(":", 1)[0] for r in reasons.values()).items()))


def audit_run(graph: Graph, pack: Pack, run_key: str) -> tuple[ShortcutAudit, dict[str, int]]:
    """Audit the run's admitted tasks, reject the families a shortcut solves, store the table on
    the run with the hold-out strategies' table of the tasks still admitted beside it. (the
    table, {family: tasks not admitted})."""
    tasks = run_tasks(graph, pack.name, run_key)
    table = audit(tasks, Corpus(tuple(tasks), documents(pack)), registry())
    rejected = gate(graph, tasks, table)
    kept = run_tasks(graph, pack.name, run_key) if rejected else tasks
    table = table.model_copy(update={"holdout": holdout_audit(kept, documents(pack))})
    graph.write("run_shortcut_audit", key=run_key, audit=table.model_dump_json(),
                rejected=json.dumps(rejected, sort_keys=True))
    return table, rejected
