"""`dibench ingest` as the service runs it: the ingest stage, then every task on a metric whose
policy or definition the ingest changed is re-derived exactly as `update-rule` would re-derive it.

A rule's policy state is its current version's hash, its removed mark and its edges; a rule
document of the pack whose state differs after the ingest (edited, re-verified, or back after
`remove-rule`) goes through `plan_update` and `run_update`, so the tasks keep gold under the
policy in force. A domain without tasks skips that step. `preview` plans the same for the new,
edited or restored documents before anything is written (all `ingest --dry-run` does); an
unchanged document whose edges verify differently (the data changed) is not previewed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.errors import DibenchError
from dibench.core.pack import Pack
from dibench.ingest.pipeline import IngestReport, ingest_pack as ingest_stage
from dibench.service.update import plan_metric_update, plan_update
from dibench.service.update_write import run_update
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse


@dataclass(frozen=True)
class RuleState:
    hash: str | None
    removed: bool
    modifies: tuple[str, ...]
    applies: tuple[str, ...]

    def metrics(self) -> tuple[str, ...]:
        """The metrics the rule modified (each `modifies` entry starts with the metric id)."""
        return tuple(sorted({m.split(" ", 1)[0] for m in self.modifies}))


@dataclass
class Rederived:
    """The tasks an ingest re-derived: per rule whose policy state changed, update-rule's counts."""

    rules: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"unchanged": 0, "updated": 0, "retired": 0,
                                                            "regenerated": 0})
    update_keys: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)  # metrics whose definition changed (a re-imported catalog)

    def as_dict(self) -> dict[str, Any]:
        return {"rules": self.rules, "counts": self.counts, "update_keys": self.update_keys, "metrics": self.metrics}

    def add(self, plan: Any) -> None:
        for k, v in plan.counts().items():
            self.counts[k] += v
        if plan.changed:
            self.update_keys.append(plan.update_key)


def rule_states(graph: Graph, domain: str) -> tuple[dict[str, RuleState], bool]:
    """{rule id: state} of the domain's rules, and whether the domain has any task."""
    rows = graph.read("ingest_rule_states", domain=domain)
    states = {str(r["id"]): RuleState(r["hash"], bool(r["removed"]), tuple(sorted(r["modifies"])),
                                      tuple(sorted(r["applies"]))) for r in rows}
    return states, bool(rows and rows[0]["has_tasks"])


def metric_states(graph: Graph, domain: str) -> dict[str, str]:
    """{metric id: content hash} of the domain's metrics in the graph."""
    return {str(r["id"]): str(r["hash"]) for r in graph.read("ingest_metric_states", domain=domain)}


def ingest_and_rederive(pack: Pack, graph: Graph, wh: Warehouse, llm: BaseChatModel | None, *,
                        verify: bool = True) -> IngestReport:
    """Ingest `pack`; then re-derive the tasks of every rule whose policy state the ingest changed
    (`report.rederived`). A failed ingest (failures in its report) re-derives nothing."""
    before, has_tasks = rule_states(graph, pack.name)
    metrics_before = metric_states(graph, pack.name)
    report = ingest_stage(pack, graph, wh, llm, verify=verify)
    done = Rederived()
    if report.failures or not has_tasks:
        return report
    after, _ = rule_states(graph, pack.name)
    # Definitions first: the rule updates below then plan on tasks that already hold the new ones.
    metrics_after = metric_states(graph, pack.name)
    changed = {m: h for m, h in metrics_after.items() if m in metrics_before and metrics_before[m] != h}
    if changed:
        plan, _ = run_update(partial(plan_metric_update, pack, graph, wh, llm, changed, metrics_before), graph,
                             pack.name)
        done.metrics = sorted(changed)
        done.add(plan)
    for doc in pack.rules:
        state = after.get(doc.id)
        if state is None or state == before.get(doc.id):
            continue
        formerly = before[doc.id].metrics() if doc.id in before else ()
        plan, _ = run_update(partial(plan_update, pack, doc, graph, wh, llm, formerly=formerly), graph, pack.name)
        done.rules.append(doc.id)
        done.add(plan)
    if done.rules or done.metrics:
        report.rederived = done.as_dict()
    return report


@dataclass
class Preview(Rederived):
    """What an ingest would re-derive, planned before it writes: per previewed rule, update-rule's counts."""

    retired_metrics: list[str] = field(default_factory=list)
    not_previewed: list[str] = field(default_factory=list)  # "RULE: why", a document update-rule refuses

    def as_dict(self) -> dict[str, Any]:
        return {"rules": self.rules, "counts": self.counts, "retired_metrics": self.retired_metrics,
                "not_previewed": self.not_previewed}

    def line(self) -> str | None:
        """One line for people, or None when the ingest re-derives nothing that is previewed."""
        c = self.counts
        if not self.rules:
            return None
        text = (f"this ingest re-derives the tasks of {len(self.rules)} changed rule document(s) "
                f"({', '.join(self.rules)}): {c['retired']} retired, {c['updated']} updated, "
                f"{c['unchanged']} unchanged")
        if self.retired_metrics:
            text += f"; retired tasks are on {', '.join(self.retired_metrics)}"
        return text


def preview(pack: Pack, graph: Graph, wh: Warehouse, llm: BaseChatModel | None) -> Preview:
    """What `ingest_and_rederive` would re-derive for the pack's new, edited or restored documents,
    planned on the graph as it is now; nothing is written."""
    out = Preview()
    before, has_tasks = rule_states(graph, pack.name)
    if not has_tasks:
        return out
    retired: set[str] = set()
    for doc in pack.rules:
        state = before.get(doc.id)
        if state is not None and state.hash == doc.content_hash and not state.removed:
            continue
        try:
            plan = plan_update(pack, doc, graph, wh, llm)
        except DibenchError as exc:
            out.not_previewed.append(f"{doc.id}: {str(exc).splitlines()[0]}")
            continue
        out.rules.append(doc.id)
        for k, v in plan.counts().items():
            out.counts[k] += v
        retired |= {c.metric_id for c in plan.changes if c.action == "retired"}
    out.retired_metrics = sorted(retired)
    return out
