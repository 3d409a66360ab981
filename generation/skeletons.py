"""Skeleton enumeration: connected subgraphs (metric, dimension, tables, rules) from Cypher.

A skeleton fixes the metric, data sources, one dimension, the metric's whole policy (every rule
in force on it: stores/policies.py) and zero or one *featured* rule from that policy, but no
concrete values. The gold answer applies the whole policy; the featured rule is the one a rule
task is about (it must be decisive). A conditional featured rule draws its applicability value
into the slice. Metrics whose policy is incomplete (a conflict, a rule without effects) yield no
skeleton: `enumerate_all` reports them instead.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dibench.stores.graph import Graph
from dibench.stores.policies import Policy, RuleEdge, domain_policies


@dataclass(frozen=True)
class Skeleton:
    domain: str
    metric: str
    dimension: str
    dimension_type: str
    dimension_label: str
    cardinality: int
    tables: tuple[str, ...]
    rules: tuple[RuleEdge, ...] = field(default_factory=tuple)  # the featured rule (zero or one)
    policy: tuple[RuleEdge, ...] = field(default_factory=tuple)  # every rule in force on the metric

    @property
    def featured(self) -> RuleEdge | None:
        return self.rules[0] if self.rules else None

    @property
    def key(self) -> str:
        rules = "+".join(r.rule_id for r in self.rules) or "-"
        return f"skel:{self.domain}/{self.metric}|{self.dimension}|{rules}"

    def node_set(self) -> frozenset[str]:
        return frozenset({f"m:{self.metric}", f"d:{self.dimension}", *(f"t:{t}" for t in self.tables),
                          *(f"r:{r.rule_id}" for r in self.rules)})

    def to_row(self) -> dict[str, Any]:
        return {"key": self.key, "domain": self.domain, "metric": self.metric, "dimension": self.dimension,
                "dimension_type": self.dimension_type, "dimension_label": self.dimension_label,
                "cardinality": self.cardinality, "tables": list(self.tables),
                "rules_json": json.dumps([asdict(r) for r in self.rules], sort_keys=True),
                "policy_json": json.dumps([asdict(r) for r in self.policy], sort_keys=True)}

    @staticmethod
    def from_row(row: dict[str, Any]) -> "Skeleton":
        # A skeleton planned before policies existed has no policy_json: read it as featured-only.
        metric = row["metric"]
        rules = tuple(RuleEdge.from_json(r, metric) for r in json.loads(row["rules_json"]))
        stored = json.loads(row.get("policy_json") or "null")
        policy = tuple(RuleEdge.from_json(r, metric) for r in stored) if stored is not None else rules
        return Skeleton(row["domain"], row["metric"], row["dimension"], row["dimension_type"],
                        row["dimension_label"], int(row["cardinality"]), tuple(row["tables"]), rules, policy)


@dataclass
class Enumeration:
    skeletons: list[Skeleton]
    skipped: dict[str, str] = field(default_factory=dict)  # metric id -> why its policy is incomplete


def enumerate_all(graph: Graph, domain: str, *, limit: int = 5000, seed: int = 42,
                  policies: dict[str, Policy] | None = None) -> Enumeration:
    """Skeletons of every metric whose policy is complete; the other metrics with the reason."""
    policies = domain_policies(graph, domain) if policies is None else policies
    out: list[Skeleton] = []
    skipped: dict[str, str] = {}
    for r in graph.read("skeleton_candidates", domain=domain):
        pol = policies.get(r["metric"])
        if pol is not None and not pol.complete:
            skipped[r["metric"]] = pol.problem() or "policy incomplete"
            continue
        in_force = pol.edges if pol is not None else ()
        rule = r["rule"]
        rules: tuple[RuleEdge, ...] = ()
        if rule is not None:
            featured = next((ref for ref in in_force if ref.rule_id == rule["id"]), None)
            if featured is None:
                continue  # superseded on this metric: not part of its policy, so not featured
            rules = (featured,)
        sk = Skeleton(domain, r["metric"], r["dimension"], r["dimension_type"], r["dimension_label"],
                      int(r["cardinality"] or 0), tuple(sorted(r["tables"])), rules, in_force)
        out.append(sk)
        if rule is None and pol is not None and pol.inputs:
            # A derived metric has no rule edge of its own: each rule of its inputs' policies can be featured.
            firsts = {ref.rule_id: ref for ref in reversed(in_force)}
            out += [replace(sk, rules=(ref,)) for _, ref in sorted(firsts.items())]
    if len(out) > limit:
        rng = random.Random(seed)
        out = sorted(rng.sample(out, limit), key=lambda s: s.key)
    return Enumeration(out, skipped)


def enumerate_skeletons(graph: Graph, domain: str, *, limit: int = 5000, seed: int = 42) -> list[Skeleton]:
    return enumerate_all(graph, domain, limit=limit, seed=seed).skeletons
