"""Write catalog profiles to Neo4j and read them back (public and private views).

Public reads (databases, columns, relations) never touch CatalogLocation or CatalogSource;
`private_locations` is the single read of the physical mapping, used by execution only.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from dibench.routing.catalog import ColumnProfile, DatabaseProfile, TableProfile, capabilities
from dibench.routing.relations import Relation
from dibench.stores.graph import Graph, add_counters

PROFILER = "sqlalchemy-inspect+samples/v1"


def source_key(catalog: str, kind: str) -> str:
    """One CatalogSource per catalog and kind of source (a folder, the warehouse's schemas)."""
    return f"catalog-source:{catalog}/{kind}"


def table_key(public_id: str, table: str) -> str:
    return f"{public_id}/{table}"


def column_key(public_id: str, table: str, column: str) -> str:
    return f"{public_id}/{table}/{column}"


def _database_rows(catalog: str, kind: str, profiles: dict[str, DatabaseProfile]) -> list[dict[str, Any]]:
    rows = []
    for pid, p in profiles.items():
        cap = capabilities(p)
        rows.append({"public_id": pid, "catalog": catalog, "source_key": source_key(catalog, kind), "engine": p.engine,
                     "n_tables": len(p.tables), "n_rows": p.n_rows, "entities": cap.entities,
                     "measures": cap.measures, "time_ranges": cap.time_ranges, "summary": cap.summary,
                     "content_hash": p.content_hash(), "profiler": PROFILER})
    return rows


def _schema_rows(profiles: dict[str, DatabaseProfile]) -> tuple[list[dict[str, Any]], ...]:
    tables, columns, fks, prune = [], [], [], []
    for pid, p in profiles.items():
        tkeys, ckeys = [], []
        lower = {t.name.lower(): t for t in p.tables}
        for t in p.tables:
            tk = table_key(pid, t.name)
            tkeys.append(tk)
            tables.append({"public_id": pid, "key": tk, "name": t.name, "entity": t.entity, "n_rows": t.n_rows})
            for c in t.columns:
                ck = column_key(pid, t.name, c.name)
                ckeys.append(ck)
                columns.append({"table_key": tk, "key": ck, "public_id": pid, "name": c.name, "type": c.type,
                                "category": c.category, "pk": c.pk, "nullable": c.nullable,
                                "samples": c.samples, "overlap": c.overlap_values, "min": c.min, "max": c.max})
            for local, ref_table, ref_col in t.foreign_keys:
                target = lower.get(ref_table.lower())
                if target is None:
                    continue  # Spider declares some keys to tables that do not exist
                names = {c.name.lower(): c.name for c in target.columns}
                if ref_col.lower() in names:
                    fks.append({"from_key": column_key(pid, t.name, local),
                                "to_key": column_key(pid, target.name, names[ref_col.lower()])})
        prune.append({"public_id": pid, "table_keys": tkeys, "column_keys": ckeys})
    return tables, columns, fks, prune


@dataclass(frozen=True)
class WriteReport:
    databases: int
    tables: int
    columns: int
    foreign_keys: int
    relations: int
    counters: dict[str, int]


def write_catalog(graph: Graph, catalog: str, profiles: dict[str, DatabaseProfile], rels: list[Relation],
                  *, kind: str, root: str, skipped: list[str]) -> WriteReport:
    """Idempotent: MERGE on public ids and keys; stale tables, columns and relations are removed."""
    tables, columns, fks, prune = _schema_rows(profiles)
    locations = [{"public_id": pid, "catalog": catalog, "name": p.name, "engine": p.engine,
                  "location": p.location, "db_schema": p.schema or ""} for pid, p in profiles.items()]
    related = [{"a": r.a, "b": r.b, "kinds": r.kinds, "shared_entities": list(r.shared_entities),
                "shared_columns": list(r.shared_columns), "value_overlaps": list(r.value_overlaps),
                "score": r.score} for r in rels]
    counters: dict[str, int] = {}
    add_counters(counters, graph.write("routing_catalog_source_upsert", key=source_key(catalog, kind), catalog=catalog,
                                       kind=kind, root=root, n_databases=len(profiles), skipped=skipped,
                                       profiler=PROFILER))
    add_counters(counters, graph.write_rows("routing_catalog_database_upsert", _database_rows(catalog, kind, profiles)))
    add_counters(counters, graph.write_rows("routing_catalog_location_upsert", locations))
    add_counters(counters, graph.write_rows("routing_catalog_prune", prune, batch_size=50))
    add_counters(counters, graph.write_rows("routing_catalog_table_upsert", tables))
    add_counters(counters, graph.write_rows("routing_catalog_column_upsert", columns))
    add_counters(counters, graph.write_rows("routing_catalog_fk_upsert", fks))
    add_counters(counters, graph.write_rows("routing_catalog_related_upsert", related))
    add_counters(counters, graph.write("routing_catalog_related_prune", catalog=catalog,
                                       keep=[f"{r.a}|{r.b}" for r in rels]))
    return WriteReport(len(profiles), len(tables), len(columns), len(fks), len(rels), counters)


def read_public(graph: Graph, catalog: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(databases, columns, relations) exactly as public tools may show them."""
    return (graph.read("routing_catalog_public_databases", catalog=catalog),
            graph.read("routing_catalog_public_columns", catalog=catalog),
            graph.read("routing_catalog_public_related", catalog=catalog))


def stored_profiles(graph: Graph, catalog: str) -> dict[str, DatabaseProfile]:
    """Catalog id -> the profile stored for it (what relations need: tables, entities, columns, values)."""
    tables: dict[str, dict[str, TableProfile]] = defaultdict(dict)
    engines: dict[str, str] = {}
    for r in graph.read("routing_catalog_stored_profiles", catalog=catalog):
        engines[r["public_id"]] = r["engine"]
        t = tables[r["public_id"]].setdefault(r["table"], TableProfile(r["table"], r["entity"], r["n_rows"] or 0, [], []))
        t.columns.append(ColumnProfile(r["column"], r["type"], r["category"], bool(r["pk"]), bool(r["nullable"]),
                                       list(r["samples"] or []), list(r["overlap"] or []), r["min"], r["max"]))
    return {pid: DatabaseProfile("", engines[pid], "", None, list(ts.values())) for pid, ts in tables.items()}


def folder_root(graph: Graph, catalog: str) -> str | None:
    """The folder the catalog's SQLite databases were ingested from (its release), if any."""
    rows = graph.read("routing_catalog_folder_root", catalog=catalog)
    return str(rows[0]["root"]) if rows else None


def private_locations(graph: Graph, catalog: str) -> dict[str, dict[str, Any]]:
    """public id -> {name, engine, location, db_schema}. Execution and scoring only."""
    return {r["public_id"]: r for r in graph.read("routing_catalog_private_locations", catalog=catalog)}


def link_domain_tables(graph: Graph, catalog: str) -> int:
    """Link the catalog's PostgreSQL tables to the Table nodes of domains on the same schema; the count."""
    rows = graph.write_returning("routing_catalog_domain_link", catalog=catalog)
    return int(rows[0]["linked"]) if rows else 0


def domain_links(graph: Graph, catalog: str) -> list[dict[str, Any]]:
    return graph.read("routing_catalog_domain_links", catalog=catalog)


def delete_catalog(graph: Graph, catalog: str) -> dict[str, int]:
    return graph.write("routing_catalog_delete", catalog=catalog)


def counts(graph: Graph, catalog: str) -> dict[str, int]:
    rows = graph.read("routing_catalog_counts", catalog=catalog)
    return rows[0] if rows else {"databases": 0, "tables": 0, "columns": 0, "related": 0}
