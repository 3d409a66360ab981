"""Read queries users ask of the graph: which rules affect a metric, graph statistics."""
from __future__ import annotations

import json
from typing import Any

from service.errors import NotFound
from service.graph import Graph


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
    """Direct rule -> metric edges and rules reaching the metric through composite paths."""
    key = resolve_metric(graph, metric_id, domain)
    out = []
    for r in graph.read("rules_for_metric", metric=key):
        op = json.loads(r["op"]) if r["op"] else None
        out.append({
            "rule_id": r["rule_id"], "title": r["title"], "rule_type": r["rule_type"], "version": r["version"],
            "content_hash": (r["content_hash"] or "")[:12], "verified": bool(r["verified"]),
            "via": "direct" if len(r["path"]) == 1 else "composite", "path": r["path"],
            "applies_when": [a for a in r["applies_when"] if a], "operation": op,
            "changed_slices": r["changed_slices"] or [],
        })
    return out


def graph_stats(graph: Graph, domain: str | None = None) -> dict[str, dict[str, int]]:
    nodes = {r["label"]: r["count"] for r in graph.read("graph_stats_nodes", domain=domain)}
    edges = {r["type"]: r["count"] for r in graph.read("graph_stats_edges", domain=domain)}
    return {"nodes": nodes, "edges": edges}


def tasks_for_rules(graph: Graph, metric_id: str, domain: str | None, rule_ids: list[str]) -> dict[str, list[str]]:
    key = resolve_metric(graph, metric_id, domain)
    return {r["rule_id"]: r["tasks"] for r in graph.read("tasks_for_rules", metric=key, rules=rule_ids)}
