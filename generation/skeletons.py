"""Skeleton enumeration: connected subgraphs (metric, dimension, tables, rules) from Cypher.

A skeleton fixes the metric, data sources, one dimension and zero or one verified rule,
but no concrete values. A conditional rule is only paired with its own dimension or with
dimensions of other tables (its applicability value is then drawn into the slice).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from service.graph import Graph


@dataclass(frozen=True)
class RuleRef:
    id: str
    op: str
    rule_type: str
    version: str
    content_hash: str
    applies_dimension: str | None = None
    applies_value: str | None = None

    def effects_json(self) -> list[dict[str, Any]]:
        data = json.loads(self.op)
        return data if isinstance(data, list) else [data]


@dataclass(frozen=True)
class Skeleton:
    domain: str
    metric: str
    dimension: str
    dimension_type: str
    dimension_label: str
    cardinality: int
    tables: tuple[str, ...]
    rules: tuple[RuleRef, ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        rules = "+".join(r.id for r in self.rules) or "-"
        return f"skel:{self.domain}/{self.metric}|{self.dimension}|{rules}"

    def node_set(self) -> frozenset[str]:
        return frozenset({f"m:{self.metric}", f"d:{self.dimension}", *(f"t:{t}" for t in self.tables),
                          *(f"r:{r.id}" for r in self.rules)})

    def to_row(self) -> dict[str, Any]:
        return {"key": self.key, "domain": self.domain, "metric": self.metric, "dimension": self.dimension,
                "dimension_type": self.dimension_type, "dimension_label": self.dimension_label,
                "cardinality": self.cardinality, "tables": list(self.tables),
                "rules_json": json.dumps([r.__dict__ for r in self.rules], sort_keys=True)}

    @staticmethod
    def from_row(row: dict[str, Any]) -> "Skeleton":
        return Skeleton(row["domain"], row["metric"], row["dimension"], row["dimension_type"],
                        row["dimension_label"], int(row["cardinality"]), tuple(row["tables"]),
                        tuple(RuleRef(**r) for r in json.loads(row["rules_json"])))


def enumerate_skeletons(graph: Graph, domain: str, *, limit: int = 5000, seed: int = 42) -> list[Skeleton]:
    out: list[Skeleton] = []
    for r in graph.read("skeleton_candidates", domain=domain):
        rule = r["rule"]
        rules: tuple[RuleRef, ...] = ()
        if rule is not None:
            ref = RuleRef(rule["id"], rule["op"], rule["rule_type"], rule["version"], rule["hash"],
                          rule["applies_dimension"], None if rule["applies_value"] is None else str(rule["applies_value"]))
            # A rule that applies only to one value of dimension X cannot show its effect on a
            # breakdown where every group is a single value of X other than its own... it can,
            # so keep it; but a conditional rule on a temporal breakdown is kept too (trend).
            rules = (ref,)
        out.append(Skeleton(domain, r["metric"], r["dimension"], r["dimension_type"], r["dimension_label"],
                            int(r["cardinality"] or 0), tuple(sorted(r["tables"])), rules))
    if len(out) > limit:
        rng = random.Random(seed)
        out = sorted(rng.sample(out, limit), key=lambda s: s.key)
    return out
