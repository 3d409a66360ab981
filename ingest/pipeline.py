"""`dibench ingest`: the ordered steps schema -> catalog -> rules (+ verification) -> write.

Plans are built before anything is written. A plan of at most `DIBENCH_INGEST_TX_ROWS` rows is
one transaction, all or nothing; a larger one goes in concurrent batch transactions, each all or
nothing, and running the ingest again completes it. The domain's write lease keeps other writers
out. With LLM extraction the schema and catalog are written first (candidate metrics are chosen
through them). Why edges are created, not merged: docs/architecture.md, "Ingest".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.config import get_settings
from dibench.core.keys import props_hash
from dibench.core.pack import Pack
from dibench.ingest.catalog import CatalogPlan, plan_catalog
from dibench.ingest.extract import PROMPT_VERSION as EXTRACT_PROMPT_VERSION
from dibench.ingest.indexes import missing_indexes
from dibench.ingest.rules import RulePlan, needs_extraction, plan_rules
from dibench.ingest.schema import SchemaPlan, plan_schema
from dibench.ingest.validate import catalog_problems, refuse_problems
from dibench.stores.graph import Graph, Tx, add_counters, batched
from dibench.stores.lease import domain_lease
from dibench.stores.llm import describe
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse


@dataclass
class IngestReport:
    domain: str
    counters: dict[str, int] = field(default_factory=dict)
    verified: int = 0
    unverified: int = 0
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unverified_edges: list[str] = field(default_factory=list)
    rows: int = 0
    transactions: int = 0
    # With LLM extraction: the model and prompt version, and how many documents got their effects from it.
    extraction: dict[str, Any] = field(default_factory=dict)
    catalog_links: int = 0  # routing catalog tables of this domain's schema linked to its Table nodes
    # Filled by the service: the tasks re-derived because the ingest changed a rule's policy state
    # (rules, counts by action, update keys); empty when nothing needed it.
    rederived: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def plan_steps(schema: SchemaPlan | None, catalog: CatalogPlan | None,
               rules: RulePlan) -> list[tuple[str, list[dict[str, Any]]]]:
    """(statement, rows) in write order: nodes before the edges that need them."""
    steps: list[tuple[str, list[dict[str, Any]]]] = []
    if schema is not None:
        steps += [("ingest_tables", schema.tables), ("ingest_joins", schema.joins),
                  ("ingest_dimensions", schema.dimensions)]
    if catalog is not None:
        steps += [("ingest_metrics", catalog.metrics), ("ingest_metric_reads", catalog.reads),
                  ("ingest_metric_uses", catalog.uses), ("ingest_metric_slices", catalog.slices)]
    steps += [("ingest_rules", rules.rules), ("prune_rule_edges", rules.prune),
              ("ingest_rule_modifies", modifies_by_rule(rules.modifies)), ("ingest_rule_applies", rules.applies),
              ("ingest_rule_mentions", rules.mentions)]
    return [(name, rows) for name, rows in steps if rows]


def modifies_by_rule(modifies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The planner's rule -> metric edge rows as one row per rule, {rule, edges: [{metric, props,
    hash}]}: the rule is looked up once, not once per edge, and its key is sent once."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for m in modifies:
        grouped.setdefault(m["rule"], []).append({"metric": m["metric"], "props": m["props"], "hash": m["hash"]})
    return [{"rule": rule, "edges": edges} for rule, edges in grouped.items()]


# A batched write sorts an edge statement's rows by the end node that many rows share (thousands
# of metrics are sliced by one dimension), so that concurrent batches seldom lock the same node.
# (Rows of READS stay in metric order: every batch reads nearly every table either way.)
SHARED_END = {"ingest_metric_slices": "dimension", "ingest_metric_uses": "component",
              "ingest_rule_applies": "dimension"}


# Rows that stand for several edges: a batch holds `batch_size` edges, not rows.
ROW_WEIGHT = {"ingest_rule_modifies": lambda r: len(r["edges"])}


def write_batched(graph: Graph, name: str, rows: list[dict[str, Any]], *, batch_size: int,
                  workers: int) -> dict[str, int]:
    """One statement of a large plan (rows as `plan_steps` gives them): batches of `batch_size`
    rows, `workers` transactions at a time."""
    if name in SHARED_END:
        rows = sorted(rows, key=lambda r: r[SHARED_END[name]])
    return graph.write_concurrently(name, rows, batch_size=batch_size, workers=workers, weight=ROW_WEIGHT.get(name))


def _domain_params(pack: Pack) -> dict[str, Any]:
    spec = pack.spec
    props = {"name": spec.name, "description": spec.description, "schema": spec.db_schema}
    return {"key": f"domain:{spec.name}", "hash": props_hash(props), **props}


def write_plans(tx: Tx, pack: Pack, schema: SchemaPlan | None, catalog: CatalogPlan | None, rules: RulePlan) -> None:
    """All of a plan in the caller's transaction (the caller holds the domain's lease)."""
    tx.run("ingest_domain", **_domain_params(pack))
    for name, rows in plan_steps(schema, catalog, rules):
        tx.run_rows(name, rows)


def _write(graph: Graph, pack: Pack, schema: SchemaPlan | None, catalog: CatalogPlan | None,
           rules: RulePlan) -> tuple[dict[str, int], int, int]:
    """Write a plan under the domain's lease: (counters, transactions, rows)."""
    steps = plan_steps(schema, catalog, rules)
    settings = get_settings()
    n_rows = sum(len(rows) for _, rows in steps)
    with domain_lease(graph, pack.name) as lease:
        if n_rows <= settings.ingest_tx_rows:
            def work(tx: Tx) -> dict[str, int]:
                write_plans(tx, pack, schema, catalog, rules)
                return tx.counters

            return graph.transaction(work), 1, n_rows
        counters = dict(graph.write("ingest_domain", **_domain_params(pack)))
        transactions = 1
        for name, rows in steps:
            lease.renew()
            add_counters(counters, write_batched(graph, name, rows, batch_size=settings.write_batch,
                                                 workers=settings.write_workers))
            transactions += len(list(batched(rows, settings.write_batch, ROW_WEIGHT.get(name))))
    return counters, transactions, n_rows


def extracts(pack: Pack, llm: BaseChatModel | None, only_rules: set[str] | None) -> bool:
    """Whether this ingest asks the model for some document's effects."""
    return llm is not None and any(needs_extraction(d) for d in pack.rules if only_rules is None or d.id in only_rules)


def ingest_pack(pack: Pack, graph: Graph, wh: Warehouse, llm: BaseChatModel | None = None, *,
                verify: bool = True, only_rules: set[str] | None = None) -> IngestReport:
    """Plan and write a pack. Without extraction, one plan in one transaction (or batches, see the
    module docstring). With extraction, the schema and catalog part goes first: candidate metrics
    are selected through the graph's metric -> table edges; then the rules, in a second write
    (a failure between them leaves the metrics and tables, and rerunning completes the ingest)."""
    if only_rules is None:  # `domain validate`'s catalog checks: a bad metric refuses the ingest whole
        refuse_problems(catalog_problems(pack, schema_columns(wh, pack.schema)))
    schema = plan_schema(pack, wh) if only_rules is None else None
    schema_warnings = schema.warnings if schema is not None else []
    catalog = plan_catalog(pack) if only_rules is None else None
    counters: dict[str, int] = {}
    transactions = n_rows = 0
    if extracts(pack, llm, only_rules) and catalog is not None:
        counters, transactions, n_rows = _write(graph, pack, schema, catalog, RulePlan())
        schema = catalog = None
    rules = plan_rules(pack, wh, llm, graph=graph, verify=verify, only=only_rules)
    more, more_tx, more_rows = _write(graph, pack, schema, catalog, rules)
    add_counters(counters, more)
    transactions, n_rows = transactions + more_tx, n_rows + more_rows
    # Advice, not a failure: a missing index makes generation slow, never wrong.
    advice = [n.line(pack.schema) for n in missing_indexes(pack, wh)] if only_rules is None else []
    report = IngestReport(pack.name, counters, warnings=schema_warnings + rules.warnings + advice,
                          failures=rules.failures + rules.conflicts, rows=n_rows, transactions=transactions)
    if only_rules is None:
        # A routing catalog that holds this schema may have been ingested first: whichever side comes
        # second makes the link (routing's catalog ingest does the same from its side).
        linked = graph.write_returning("ingest_catalog_links", domain=pack.name)
        report.catalog_links = int(linked[0]["linked"]) if linked else 0
    if extracts(pack, llm, only_rules):
        report.extraction = {"model": describe(llm), "prompt_version": EXTRACT_PROMPT_VERSION,
                             "documents": sum(1 for r in rules.rules if r["props"]["effects_source"] == "llm")}
    for c in rules.checks:
        if c.verified:
            report.verified += 1
        else:
            report.unverified += 1
            report.unverified_edges.append(f"{c.rule_id} -> {c.metric_id}" + (f" ({c.error})" if c.error else ""))
    return report
