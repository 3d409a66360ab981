"""Read queries users ask of the graph: which rules affect a metric, graph statistics."""
from __future__ import annotations

import json
from typing import Any

from dibench.core.errors import NotFound
from dibench.core.task_counts import count_tasks
from dibench.stores.graph import Graph
from dibench.stores.policies import policy_of


def resolve_one(graph: Graph, statement: str, kind: str, ident: str, domain: str | None,
                hint: str) -> dict[str, Any]:
    """The one row of `statement` (an id lookup returning `domain`) for `ident`: NotFound when it
    is in no domain, or in several and no `domain` was given."""
    rows = graph.read(statement, id=ident, domain=domain)
    if not rows:
        raise NotFound(f"no {kind} {ident!r} in the graph" + (f" for domain {domain!r}" if domain else ""), hint=hint)
    if len(rows) > 1:
        raise NotFound(f"{kind} {ident!r} exists in several domains {[r['domain'] for r in rows]}",
                       hint="pass --domain")
    return rows[0]


def resolve_metric(graph: Graph, metric_id: str, domain: str | None) -> str:
    return str(resolve_one(graph, "metric_by_id", "metric", metric_id, domain,
                           hint="run `dibench ingest <pack>` first; `dibench graph stats` shows what is loaded")["key"])


def rules_for(graph: Graph, metric_id: str, domain: str | None = None) -> list[dict[str, Any]]:
    """Direct rule -> metric edges and rules reaching the metric through composite paths, each
    with its place in the metric's policy (stores/policies.py, the definition gold answers use):
    `applied` (in force on this metric: its gold applies it), `applied (through its inputs)` (a
    derived metric's input's rule), `superseded` (another document takes precedence where both
    apply), `unverified` (never changes an answer on the data), or `informative` (a component's
    rule: a composite written as its own SQL does not apply it); `order` is an applied rule's
    place in the order the policy's effects apply (1 first; `after:` in a document sets it)."""
    key = resolve_metric(graph, metric_id, domain)
    dom, mid = key.split(":", 1)[1].split("/", 1)
    policy = policy_of(graph, dom, mid)
    applied = {e.rule_id for e in policy.edges}
    order = {r: i for i, r in enumerate(policy.order(), start=1)}
    out = []
    for r in graph.read("rules_for_metric", metric=key):
        op = json.loads(r["op"]) if r["op"] else None
        direct = len(r["path"]) == 1
        status = ("unverified" if not r["verified"] else "applied" if direct and r["rule_id"] in applied else
                  "superseded" if direct else
                  "applied (through its inputs)" if r["rule_id"] in applied and policy.inputs else "informative")
        if direct and r["rule_id"] in policy.state.superseded and r["rule_id"] in applied:
            status = "applied (partly superseded)"
        out.append({
            "rule_id": r["rule_id"], "title": r["title"], "rule_type": r["rule_type"], "version": r["version"],
            "content_hash": (r["content_hash"] or "")[:12], "verified": bool(r["verified"]),
            "via": "direct" if direct else "composite", "path": r["path"], "policy": status,
            "order": order.get(r["rule_id"]) if status.startswith("applied") else None,
            "applies_when": [a for a in r["applies_when"] if a], "operation": op,
            "changed_slices": r["changed_slices"] or [],
        })
    return out


def policy_summary(graph: Graph, metric_id: str, domain: str | None = None) -> dict[str, Any]:
    """The metric's policy in one record: rules in force (id@version), completeness, conflicts."""
    key = resolve_metric(graph, metric_id, domain)
    dom, mid = key.split(":", 1)[1].split("/", 1)
    return policy_of(graph, dom, mid).as_dict()


def graph_stats(graph: Graph, domain: str | None = None) -> dict[str, dict[str, int]]:
    """Nodes by label, edges by type, and the tasks in the one vocabulary of core.task_counts."""
    nodes = {r["label"]: r["count"] for r in graph.read("graph_stats_nodes", domain=domain)}
    edges = {r["type"]: r["count"] for r in graph.read("graph_stats_edges", domain=domain)}
    tasks = count_tasks(graph.read("graph_task_counts", domain=domain)).as_dict()
    return {"nodes": nodes, "edges": edges, "tasks": tasks}


def tasks_for_rules(graph: Graph, metric_id: str, domain: str | None, rule_ids: list[str]) -> dict[str, list[str]]:
    key = resolve_metric(graph, metric_id, domain)
    return {r["rule_id"]: r["tasks"] for r in graph.read("tasks_for_rules", metric=key, rules=rule_ids)}
