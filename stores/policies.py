"""The policy of each metric, read from the graph: the one definition that gold answers,
`rules-for`, `impact`, `update-rule`, export manifests and evaluation share.

A metric's policy is every verified, current rule -> metric edge, with `supersedes` precedence
applied (sqlops/policy.py), composed in the order of sqlops/ops.py. It is *complete* when
no two of its effects conflict and no rule without stated effects mentions the metric; generation
only grounds metrics whose policy is complete.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from dibench.core.models import LLMEffects
from dibench.sqlops.ops import AnyEffect
from dibench.sqlops.policy import MetricPolicy, metric_policy
from dibench.stores.graph import Graph


@dataclass(frozen=True)
class RuleEdge:
    """One verified rule -> metric edge as the graph holds it."""

    rule_id: str
    metric_id: str
    op: str  # the edge's effect JSON (one effect or a list)
    rule_type: str
    version: str
    content_hash: str
    applies_dimension: str | None = None
    applies_value: str | None = None
    supersedes: str | None = None

    def effects_json(self) -> list[dict[str, Any]]:
        data = json.loads(self.op)
        return data if isinstance(data, list) else [data]

    def effects(self) -> list[AnyEffect]:
        return list(LLMEffects.model_validate({"effects": self.effects_json()}).effects)

    @staticmethod
    def from_json(data: dict[str, Any], metric_id: str) -> "RuleEdge":
        """An edge as a skeleton stores it; a skeleton planned before edges carried their metric
        stored `id` for `rule_id` and no metric (then the skeleton's own)."""
        data = dict(data)
        if "id" in data:
            data["rule_id"] = data.pop("id")
        data.setdefault("metric_id", metric_id)
        return RuleEdge(**data)

    @property
    def tag(self) -> str:
        """How a task records the rule it considered: id @ version."""
        return f"{self.rule_id}@{self.version}"


@dataclass(frozen=True)
class Policy:
    """A metric's policy with the edges behind it (in force, in rule-id order). A derived metric's
    policy is its inputs' policies together (`inputs`; its edges point at the inputs)."""

    state: MetricPolicy
    edges: tuple[RuleEdge, ...]
    inputs: tuple[str, ...] = ()

    @property
    def metric(self) -> str:
        return self.state.metric

    @property
    def complete(self) -> bool:
        return self.state.complete

    def order(self) -> list[str]:
        """The rules of the policy in the order their effects apply (sqlops.ops.policy_order); a
        derived metric's inputs one after the other."""
        if not self.inputs:
            return self.state.order()
        by_input: dict[str, list[str]] = defaultdict(list)
        for e in self.edges:
            by_input[e.metric_id].append(e.rule_id)
        return list(dict.fromkeys(r for i in self.inputs for r in self.state.order() if r in by_input[i]))

    def problem(self) -> str | None:
        """Why generation skips the metric, in one line (None when the policy is complete)."""
        if self.state.conflicts:
            return "; ".join(c.line() for c in self.state.conflicts)
        if self.state.unknown:
            return (f"policy of metric {self.metric} unknown: rule(s) {', '.join(self.state.unknown)} mention it "
                    f"but state no effects (add `effects` or configure an LLM and re-ingest)")
        return None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "rules": list(dict.fromkeys(e.tag for e in self.edges)),
                "order": self.order(), "inputs": list(self.inputs), "complete": self.complete,
                "superseded": list(self.state.superseded), "conflicts": [c.line() for c in self.state.conflicts],
                "unknown": list(self.state.unknown)}


def _kept(edge: RuleEdge, state: MetricPolicy) -> RuleEdge:
    """The edge with only the effects the policy keeps (a superseded rule keeps its ordered ones)."""
    effects = [e for r, e in state.entries if r == edge.rule_id]
    if len(effects) == len(edge.effects()):
        return edge
    op = json.dumps([e.model_dump(mode="json", exclude_none=True) for e in effects], sort_keys=True)
    return replace(edge, op=op)


def first_applies(rows: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The (dimension, value) a rule's edge records of its applicability (the first, sorted)."""
    first = sorted((str(a["dimension"]), str(a["value"])) for a in rows if a and a.get("dimension"))
    return first[0] if first else (None, None)


def read_edges(graph: Graph, domain: str, metrics: list[str] | None = None) -> list[RuleEdge]:
    out = []
    for r in graph.read("policy_edges", domain=domain, metrics=metrics):
        dim, value = first_applies(r["applies"])
        out.append(RuleEdge(r["rule_id"], r["metric_id"], r["op"], r["rule_type"], str(r["version"]),
                            r["hash"] or "", dim, value, r["supersedes"]))
    return out


@dataclass
class PolicyInputs:
    """What policies are built from: candidate edges, effect-less mentions, supersedes."""

    edges: list[RuleEdge]
    unknown: dict[str, list[str]]  # metric -> rules mentioning it without effects
    supersedes: dict[str, str | None]
    derived: dict[str, list[str]] = field(default_factory=dict)  # derived metric -> its inputs

    def build(self) -> dict[str, Policy]:
        out = self._build_plain()
        for metric, inputs in sorted(self.derived.items()):
            parts = [out[i] for i in inputs if i in out]
            if not parts:
                continue
            state = MetricPolicy(
                metric, tuple(e for p in parts for e in p.state.entries),
                tuple(sorted({r for p in parts for r in p.state.superseded})),
                tuple(sorted({r for p in parts for r in p.state.winners})),
                tuple(c for p in parts for c in p.state.conflicts),
                tuple(sorted({r for p in parts for r in p.state.unknown})))
            out[metric] = Policy(state, tuple(e for p in parts for e in p.edges), tuple(inputs))
        return out

    def affected(self, metrics: set[str]) -> set[str]:
        """`metrics` and the derived metrics whose policy includes theirs."""
        return metrics | {d for d, inputs in self.derived.items() if metrics & set(inputs)}

    def _build_plain(self) -> dict[str, Policy]:
        by_metric: dict[str, list[RuleEdge]] = defaultdict(list)
        for e in self.edges:
            by_metric[e.metric_id].append(e)
        out: dict[str, Policy] = {}
        for metric in sorted(set(by_metric) | set(self.unknown)):
            found = sorted(by_metric.get(metric, []), key=lambda e: e.rule_id)
            state = metric_policy(metric, [(e.rule_id, eff) for e in found for eff in e.effects()],
                                  self.supersedes, self.unknown.get(metric, []))
            out[metric] = Policy(state, tuple(_kept(e, state) for e in found if e.rule_id in state.rule_ids))
        return out

    def replacing(self, rule_id: str, edges: list[RuleEdge], mentions: list[str],
                  supersedes: str | None) -> "PolicyInputs":
        """These inputs with one rule's edges, mentions and supersedes replaced (an update)."""
        unknown = {m: [r for r in rules if r != rule_id] for m, rules in self.unknown.items()}
        for m in mentions:
            unknown.setdefault(m, []).append(rule_id)
        return PolicyInputs([e for e in self.edges if e.rule_id != rule_id] + edges,
                            {m: r for m, r in unknown.items() if r}, {**self.supersedes, rule_id: supersedes},
                            self.derived)


def policy_inputs(graph: Graph, domain: str, metrics: list[str] | None = None) -> PolicyInputs:
    derived = {r["metric_id"]: sorted(r["inputs"]) for r in graph.read("policy_derived", domain=domain)}
    if metrics is not None:  # a derived metric asked for needs its inputs' edges
        metrics = sorted(set(metrics) | {i for d in metrics for i in derived.get(d, [])})
    unknown: dict[str, list[str]] = defaultdict(list)
    for r in graph.read("policy_unknown", domain=domain, metrics=metrics):
        unknown[r["metric_id"]].append(r["rule_id"])
    supersedes = {r["rule_id"]: r["supersedes"] for r in graph.read("policy_supersedes", domain=domain)}
    return PolicyInputs(read_edges(graph, domain, metrics), dict(unknown), supersedes, derived)


def domain_policies(graph: Graph, domain: str, metrics: list[str] | None = None) -> dict[str, Policy]:
    """{metric id: Policy} for the metrics of `domain` that any rule modifies or mentions (a metric
    absent from the result has the empty, complete policy)."""
    return policy_inputs(graph, domain, metrics).build()


def empty_policy(metric: str) -> Policy:
    return Policy(MetricPolicy(metric, ()), ())


def policy_of(graph: Graph, domain: str, metric: str) -> Policy:
    return domain_policies(graph, domain, [metric]).get(metric) or empty_policy(metric)
