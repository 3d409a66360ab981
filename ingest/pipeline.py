"""`dibench ingest`: the ordered steps schema -> catalog -> rules (+ verification) -> write.

Plans are built first without touching the graph; the write happens in one Neo4j
transaction, so a failure leaves no half-written batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from ingest.catalog import CatalogPlan, plan_catalog
from ingest.keys import props_hash
from ingest.pack import Pack
from ingest.rules import RulePlan, plan_rules
from ingest.schema import SchemaPlan, plan_schema
from service.graph import Graph, Tx
from service.warehouse import Warehouse


@dataclass
class IngestReport:
    domain: str
    counters: dict[str, int] = field(default_factory=dict)
    verified: int = 0
    unverified: int = 0
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unverified_edges: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def write_plans(tx: Tx, pack: Pack, schema: SchemaPlan | None, catalog: CatalogPlan | None, rules: RulePlan) -> None:
    spec = pack.spec
    props = {"name": spec.name, "description": spec.description, "schema": spec.db_schema}
    tx.run("ingest_domain", key=f"domain:{spec.name}", name=spec.name, description=spec.description,
           schema=spec.db_schema, hash=props_hash(props))
    if schema is not None:
        tx.run_rows("ingest_tables", schema.tables)
        tx.run_rows("ingest_joins", schema.joins)
        tx.run_rows("ingest_dimensions", schema.dimensions)
    if catalog is not None:
        tx.run_rows("ingest_metrics", catalog.metrics)
        tx.run_rows("ingest_metric_reads", catalog.reads)
        tx.run_rows("ingest_metric_uses", catalog.uses)
        tx.run_rows("ingest_metric_slices", catalog.slices)
    tx.run_rows("ingest_rules", rules.rules)
    tx.run_rows("prune_rule_edges", rules.prune)
    tx.run_rows("ingest_rule_modifies", rules.modifies)
    tx.run_rows("ingest_rule_applies", rules.applies)


def ingest_pack(pack: Pack, graph: Graph, wh: Warehouse, llm: BaseChatModel | None = None, *,
                verify: bool = True, only_rules: set[str] | None = None) -> IngestReport:
    schema = plan_schema(pack, wh) if only_rules is None else None
    catalog = plan_catalog(pack) if only_rules is None else None
    rules = plan_rules(pack, wh, llm, verify=verify, only=only_rules)

    def work(tx: Tx) -> dict[str, int]:
        write_plans(tx, pack, schema, catalog, rules)
        return tx.counters

    counters = graph.transaction(work)
    report = IngestReport(pack.name, counters, warnings=rules.warnings, failures=rules.failures)
    for c in rules.checks:
        if c.verified:
            report.verified += 1
        else:
            report.unverified += 1
            report.unverified_edges.append(f"{c.rule_id} -> {c.metric_id}" + (f" ({c.error})" if c.error else ""))
    return report
