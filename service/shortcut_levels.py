"""The shortcut audit of the tasks an agent was scored on (`eval`, `score`, `report`): the same
strategies and table as generation's audit (generation/shortcuts), run on exactly the scored task
records, so the "best shortcut" printed beside a score is the one for those tasks."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dibench.core.contracts import AnswerContract
from dibench.core.errors import ConfigError
from dibench.generation.shortcuts import AuditTask, Corpus, registry, stem_of
from dibench.generation.shortcuts.audit import ShortcutAudit, audit
from dibench.generation.shortcuts.holdout import holdout_audit
from dibench.stores.graph import Graph


def record_task(r: Mapping[str, Any]) -> AuditTask:
    """A private task record (evaluation/tasks.py, TaskRecord as JSON) as the audit reads it."""
    key = str(r["task_id"])
    metrics = list(r.get("metric_ids") or [])
    return AuditTask(key=key, stem=stem_of(key), analysis_type=str(r["analysis_type"]), tier=str(r["tier"]),
                     variant=str(r.get("variant") or "standard"), question=str(r.get("question") or ""),
                     metric_id=metrics[0] if metrics else None, dimension=r.get("dimension"),
                     gold=dict(r["gold_answer"]), contract=AnswerContract.model_validate(r["contract"]),
                     facts=dict(r.get("facts") or {}), base=r.get("base_answer"), lifted=r.get("lifted_answer"))


def rule_documents(graph: Graph, domain: str) -> tuple[str, ...]:
    """The domain's policy documents as the audit reads them: title, then body."""
    return tuple(f"{row['rule'].get('title', '')}\n{row['rule'].get('body', '')}"
                 for row in graph.read("eval_rules", domain=domain))


def records_audit(records: Sequence[Mapping[str, Any]], graph: Graph) -> ShortcutAudit:
    """The audit of private task records of one domain, the hold-out strategies' table in it."""
    domains = sorted({str(r.get("domain")) for r in records})
    if len(domains) != 1:
        raise ConfigError(f"the shortcut audit runs on one domain at a time; the tasks hold {', '.join(domains)}")
    try:
        tasks = [record_task(r) for r in records]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"the shortcut audit needs private task records (gold answer and contract): {exc}") from None
    docs = rule_documents(graph, domains[0])
    table = audit(tasks, Corpus(tuple(tasks), docs), registry())
    return table.model_copy(update={"holdout": holdout_audit(tasks, docs)})
