"""What the public surface may read of the graph: each node and edge type's public properties.

The public surface (public exports, the HTTP API's read routes) reads the graph only through
dibench's own statements, and shows or selects by these properties only; everything else is
private, and a node or edge type not declared here is private whole (`public_properties` of an
unknown type is empty). Every type the code writes is declared, public or private, with what it
holds (tests/test_public_surface.py checks both). docs/public-surface.md explains the choices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """One node or edge type: its public properties (None: the type is private whole, the public
    surface never reads it) and what it holds."""

    public: frozenset[str] | None
    holds: str


def _kind(public: str | None, holds: str) -> Kind:
    return Kind(frozenset(public.split()) if public is not None else None, holds)


NODES: dict[str, Kind] = {
    "Task": _kind("key domain analysis_type tier variant question answer_format status version data_fingerprint "
                  "run_key metric_id featured_rule",
                  "a task: its question and public facts; gold, base, lifted and featured answers, their SQL "
                  "and parameters, facts, judge, rejections, policy and rule versions are private"),
    "Run": _kind("key domain seed target code_version gold_version started_at finished_at data_fingerprint phraser "
                 "judge llm_model prompt_versions phrase_prompt_version judge_prompt_version workers resumed "
                 "shortcut_audit shortcut_rejected",
                 "a generation run: what produced its tasks (the export manifest lists it)"),
    "Domain": _kind("key name description schema update_seq", "a domain pack's name, schema and update sequence"),
    "Metric": _kind("key id domain name description formula tier unit rounding higher_is_better target dimensions "
                    "components tables time_column",
                    "a catalog metric (its SQL template and parameter defaults are private)"),
    "Rule": _kind("key id domain title rule_type owner version effective_date content_hash body supersedes removed "
                  "effects_source path",
                  "a business rule document: the knowledge an agent consults"),
    "RuleVersion": _kind("key domain rule_id version hash effective_date",
                         "a rule document's version (rules-for and impact show which is current)"),
    "Dimension": _kind("key domain column table name label type cardinality", "a declared dimension"),
    "Table": _kind("key domain name schema label columns column_types primary_key", "a warehouse table's shape"),
    "DriftCheck": _kind("key domain schema at at_ms counts applied not_computed seconds",
                        "a drift check's summary (the per-task old and new answers sit on CHECKED, private)"),
    "Review": _kind("task_version passed",
                    "a person's review of one task version: whether it passed (the public filter `review` reads "
                    "it); the reviewer, the dimensions failed, the note and the seconds are private"),
    "TaskVersion": _kind(None, "an earlier version of a task: its old gold answer, SQL and parameters"),
    "RuleUpdate": _kind(None, "an update's changelog: every affected task's gold answer before and after"),
    "GoldMigration": _kind(None, "a gold-meaning migration record: which run retired how many tasks"),
    "Skeleton": _kind(None, "a sampled skeleton: the policy and rules a task was grounded with"),
    "DomainLease": _kind(None, "a domain's write lease: the host and process holding it"),
    "Candidate": _kind(None, "reserved: a rejected candidate's record"),
    "CatalogSource": _kind(None, "routing: where a catalog was read from (private side; docs/routing.md)"),
    "CatalogDatabase": _kind(None, "routing: a catalog database, by its private catalog id"),
    "CatalogTable": _kind(None, "routing: a catalog table"),
    "CatalogColumn": _kind(None, "routing: a catalog column with its profile and overlap values"),
    "CatalogLocation": _kind(None, "routing: where a database lives"),
    "RoutingBenchmark": _kind(None, "routing: the mapping of a benchmark's public ids to catalog ids"),
    "RoutingTask": _kind(None, "routing: a contract with its gold SQL and intended reading"),
    "RoutingUnit": _kind(None, "routing: a source unit with its executed gold SQL"),
    "TestLock": _kind(None, "tests only: a node the lock tests write"),
}

EDGES: dict[str, Kind] = {
    "ON_METRIC": _kind("", "task -> its metric (the public filter `metric` follows it)"),
    "USES_RULE": _kind("version", "task -> a decisive rule (the public filter `rule` and impact follow it)"),
    "ON_DIMENSION": _kind("", "task or skeleton -> its dimension"),
    "MODIFIES": _kind("op op_type verified changed_slices slices_checked version",
                      "rule -> metric: the rule's effect on it, as its document states it"),
    "APPLIES_WHEN": _kind("value", "rule -> the dimension value it is conditioned on"),
    "USES": _kind("", "composite metric -> component"),
    "CURRENT_VERSION": _kind("", "rule -> its current version"),
    "HAS_DRIFT_CHECK": _kind("", "domain -> drift check"),
    "CHECKED": _kind("outcome reason tables changed_tables action analysis_type metric_id variant version_before "
                     "version_after", "drift check -> task (`old` and `new` answers are private)"),
    "REVIEWS": _kind("", "review -> the task it judges (the public filter `review` follows it)"),
    "VARIANT_OF": _kind("", "variant task -> its standard task"),
    "HAS_VERSION": _kind(None, "rule -> each of its versions"),
    "HAS_UPDATE": _kind(None, "rule -> update record"),
    "HAS_MIGRATION": _kind(None, "domain -> migration record"),
    "PREVIOUS": _kind(None, "task -> its previous version"),
    "USES_RULE_VERSION": _kind(None, "task -> the rule version it was computed with"),
    "FROM_SKELETON": _kind(None, "task -> skeleton"),
    "GENERATED_BY": _kind(None, "task -> run"),
    "PLANS": _kind(None, "run -> skeleton, with claim leases"),
    "OF_METRIC": _kind(None, "skeleton -> metric"),
    "READS": _kind(None, "metric or task -> table, with the columns read"),
    "JOINS": _kind(None, "table -> table"),
    "HAS_DIMENSION": _kind(None, "table -> dimension"),
    "SLICED_BY": _kind(None, "metric -> dimension"),
    "MENTIONS": _kind(None, "rule without effects -> a metric it names"),
    "CatalogHasColumn": _kind(None, "routing"),
    "CatalogHasTable": _kind(None, "routing"),
    "CatalogIngestedFrom": _kind(None, "routing"),
    "CatalogIsDomainTable": _kind(None, "routing"),
    "CatalogLocates": _kind(None, "routing"),
    "CatalogReferences": _kind(None, "routing"),
    "CatalogRelated": _kind(None, "routing"),
    "RoutingOwnedBy": _kind(None, "routing"),
    "RoutingReadsTable": _kind(None, "routing: a source unit -> a catalog table its gold SQL reads"),
    "RoutingRequires": _kind(None, "routing"),
    "RoutingUsesUnit": _kind(None, "routing"),
}


def public_properties(label: str) -> frozenset[str]:
    """The properties of node type `label` the public surface may read (none when undeclared)."""
    kind = NODES.get(label)
    return kind.public if kind is not None and kind.public is not None else frozenset()


def public_edge_properties(edge_type: str) -> frozenset[str]:
    kind = EDGES.get(edge_type)
    return kind.public if kind is not None and kind.public is not None else frozenset()


def is_public(kinds: dict[str, Kind], name: str) -> bool:
    """Whether the public surface may read (or follow) node or edge type `name` at all."""
    kind = kinds.get(name)
    return kind is not None and kind.public is not None


def public_view(label: str, props: dict[str, Any]) -> dict[str, Any]:
    """`props` of a node of type `label` with only its public properties."""
    keep = public_properties(label)
    return {k: v for k, v in props.items() if k in keep}


def public_edge_view(edge_type: str, props: dict[str, Any]) -> dict[str, Any]:
    keep = public_edge_properties(edge_type)
    return {k: v for k, v in props.items() if k in keep}
