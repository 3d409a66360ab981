"""`dibench impact RULE`: the metrics, dimensions and tasks one rule affects."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from dibench.core.keys import rule_key
from dibench.ingest.verify import BY_MONTH
from dibench.service.update import resolve_rule
from dibench.stores.graph import Graph
from dibench.stores.policies import domain_policies


def impact(graph: Graph, rule_id: str, domain: str | None = None) -> dict[str, Any]:
    d = resolve_rule(graph, rule_id, domain)
    key = rule_key(d, rule_id)
    r = graph.read("impact_rule", rule=key)[0]
    tasks = graph.read("impact_rule_tasks", rule=key)
    policies = domain_policies(graph, d, [m["metric"] for m in r["metrics"]])
    metrics = sorted(({"metric": m["metric"], "operation": json.loads(m["op"]) if m["op"] else None,
                       "verified": bool(m["verified"]), "changed_slices": m["changed_slices"] or [],
                       # the metric's policy in the order its effects apply, this rule among them
                       "policy_order": policies[m["metric"]].order() if m["metric"] in policies else []}
                      for m in r["metrics"]), key=lambda m: m["metric"])
    dims: dict[str, set[str]] = {}
    for a in r["applies"]:
        dims.setdefault(a["dimension"], set()).add(f"applies when = {a['value']}")
    for m in metrics:
        for s in m["changed_slices"]:
            if "=" in s and not s.startswith("month="):  # `region=North`, `region by month=North|2024-03`
                dims.setdefault(s.split("=", 1)[0].removesuffix(BY_MONTH), set()).add("answer changes on its slices")
    for t in tasks:
        if t["dimension"]:
            dims.setdefault(t["dimension"], set()).add("tasks")
    active = [t for t in tasks if t["status"] == "admitted"]
    return {
        "rule_id": r["rule_id"], "domain": r["domain"], "title": r["title"], "rule_type": r["rule_type"],
        "version": r["version"], "content_hash": (r["hash"] or "")[:12], "removed": bool(r["removed"]),
        "metrics": metrics,
        "composites": sorted({" -> ".join(p) for p in r["composites"]}),
        "dimensions": [{"dimension": k, "why": sorted(v)} for k, v in sorted(dims.items())],
        "tasks": tasks,
        "task_counts": {"total": len(tasks), "admitted": len(active),
                        "by_status": dict(sorted(Counter(t["status"] for t in tasks).items())),
                        "by_analysis_type": dict(sorted(Counter(t["analysis_type"] for t in active).items()))},
    }
