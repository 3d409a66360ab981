"""`dibench domain remove`: a domain's whole graph (artifacts, tasks, runs, skeletons, rule and
task versions, update records, its write lease) and, on request, its schema: on PostgreSQL the
schema; on DuckDB the whole file when dibench created it and it holds nothing else, else the
schema in it (the file is kept, and the summary says why).

Planned before anything is deleted (`plan_removal`: what exists, whether the schema may be
dropped), then executed (`remove_domain`). Refused while a writer holds the domain's live lease,
and the schema is dropped only when `dibench domain load` created it (never a user's own schema,
read in place) and no other domain in the graph reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dibench.core.errors import DibenchError, NotFound
from dibench.core.pack import forget_pack
from dibench.service.queries import graph_stats
from dibench.stores.graph import Graph, delete_domain
from dibench.stores.lease import lease_state, unlock
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse


@dataclass(frozen=True)
class Removal:
    domain: str
    nodes: dict[str, int] = field(default_factory=dict)  # label -> count, the Domain node included
    schema: str | None = None  # dropped (or to drop) with --data
    tables: int = 0
    file: Path | None = None  # an embedded engine's file deleted with the schema
    file_note: str = ""  # which file goes, or which is kept and why

    def summary(self) -> str:
        total = sum(self.nodes.values())
        by_label = ", ".join(f"{n} {label}" for label, n in sorted(self.nodes.items())) or "nothing"
        data = f"; schema {self.schema!r} ({self.tables} tables)" if self.schema else ""
        note = f"; {self.file_note}" if self.file_note else ""
        return f"domain {self.domain!r}: {total} graph nodes ({by_label}){data}{note}"


def plan_removal(graph: Graph, wh: Warehouse, domain: str, data: bool) -> Removal:
    """What `remove_domain` would delete; raises when it must not (a live writer, a shared schema)."""
    lease = lease_state(graph, domain)
    if lease is not None and not lease.stale:
        raise DibenchError(f"domain {domain!r} is being written by {lease.holder} (lease until {lease.until})",
                           hint="wait for it, or release it with `dibench domain unlock --force`")
    nodes = dict(graph_stats(graph, domain)["nodes"])
    info = graph.read("domain_schema_users", domain=domain)
    if info:
        nodes["Domain"] = nodes.get("Domain", 0) + 1
    if lease is not None:
        nodes["DomainLease"] = 1
    if not nodes:
        raise NotFound(f"no domain {domain!r} in the graph", hint="`dibench graph stats` shows what is loaded")
    if not data:
        return Removal(domain, nodes)
    if not info or not info[0]["schema"]:
        raise DibenchError(f"domain {domain!r} has no Domain node naming its schema: its data cannot be located",
                           hint="remove it without --data")
    schema, shared = str(info[0]["schema"]), list(info[0]["shared_with"])
    if shared:
        raise DibenchError(f"schema {schema!r} of domain {domain!r} is also read by {', '.join(sorted(shared))}",
                           hint="remove it without --data, or remove those domains first")
    origin = wh.schema_origin(schema)
    if origin == "foreign":
        kept = wh.data_file(schema)[1]
        raise DibenchError(f"schema {schema!r} of domain {domain!r} was not created by `dibench domain load`: "
                           "dibench never drops data it did not create" + (f" ({kept})" if kept else ""),
                           hint="remove the domain without --data (the graph only); drop the schema yourself "
                                "if you mean to")
    if origin == "absent":
        return Removal(domain, nodes)
    file, note = wh.data_file(schema)
    return Removal(domain, nodes, schema, len(schema_columns(wh, schema)), file, note)


def remove_domain(graph: Graph, wh: Warehouse, plan: Removal) -> int:
    """Delete what `plan` names; returns the graph nodes deleted. The schema goes last, so a
    failure leaves at worst the data without its graph (removing again completes it)."""
    # A stale lease (plan_removal checked it) is released; one taken since by a live writer raises.
    released = unlock(graph, plan.domain)
    deleted = delete_domain(graph, plan.domain) + (1 if released else 0)
    if plan.file is not None:
        wh.remove_file()
    elif plan.schema:
        wh.drop_schema(plan.schema)
    if plan.file is not None or plan.schema:
        forget_pack(plan.domain)  # its data is gone: the name no longer leads to a loaded pack
    return deleted
