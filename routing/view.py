"""An in-memory view of one catalog's public evidence, loaded once from Neo4j.

Everything here is what a router may see. The private mapping (where each database lives)
is a separate object, `Locations`, that only execution and scoring receive.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dibench.routing.catalog_store import private_locations, read_public
from dibench.routing.errors import RoutingError
from dibench.routing.sqlite_exec import PgSchema
from dibench.stores.graph import Graph


@dataclass
class TableView:
    name: str
    entity: str
    n_rows: int
    columns: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DatabaseView:
    public_id: str
    entities: list[str]
    measures: list[str]
    time_ranges: list[str]
    summary: str
    n_rows: int
    tables: dict[str, TableView] = field(default_factory=dict)  # lower-case name -> table

    def schema_map(self) -> dict[str, set[str]]:
        return {k: {c["column"].lower() for c in t.columns} for k, t in self.tables.items()}

    def column_names(self) -> set[str]:
        return {c["column"].lower() for t in self.tables.values() for c in t.columns}


@dataclass
class CatalogView:
    catalog: str
    databases: dict[str, DatabaseView]
    related: list[dict[str, Any]]

    @classmethod
    def load(cls, graph: Graph, catalog: str) -> "CatalogView":
        dbs, cols, rels = read_public(graph, catalog)
        if not dbs:
            raise RoutingError(f"catalog {catalog!r} has no databases in Neo4j",
                               hint=f"run `dibench catalog ingest` (catalog name {catalog!r}) first")
        databases = {d["public_id"]: DatabaseView(d["public_id"], d["entities"] or [], d["measures"] or [],
                                                  d["time_ranges"] or [], d["summary"] or "", d["n_rows"] or 0)
                     for d in dbs}
        for c in cols:
            db = databases[c["public_id"]]
            t = db.tables.setdefault(c["table"].lower(), TableView(c["table"], c["entity"], c["n_rows"] or 0))
            t.columns.append(c)
        return cls(catalog, databases, rels)

    def aliased(self, public_of: dict[str, str]) -> "CatalogView":
        """The view under a benchmark's public ids (catalog id -> public id); unmapped databases left out."""
        databases = {public_of[cid]: replace(db, public_id=public_of[cid], tables={
            k: replace(t, columns=[{**c, "public_id": public_of[cid]} for c in t.columns]) for k, t in db.tables.items()})
            for cid, db in self.databases.items() if cid in public_of}
        related = [{**r, "a": public_of[r["a"]], "b": public_of[r["b"]]} for r in self.related
                   if r["a"] in public_of and r["b"] in public_of]
        return CatalogView(self.catalog, databases, related)

    def related_to(self, public_id: str) -> list[dict[str, Any]]:
        return [r for r in self.related if public_id in (r["a"], r["b"])]

    def ids(self) -> list[str]:
        return sorted(self.databases)


@dataclass(frozen=True)
class Locations:
    """Private: public id -> SQLite path or PostgreSQL schema. Never handed to a router or the environment."""

    paths: dict[str, Path | PgSchema]
    ids: dict[str, str] = field(default_factory=dict)  # database name in the release -> public id

    @classmethod
    def load(cls, graph: Graph, catalog: str) -> "Locations":
        paths: dict[str, Path | PgSchema] = {}
        rows = private_locations(graph, catalog)
        for pid, row in rows.items():
            if row["engine"] == "sqlite":
                paths[pid] = Path(row["location"])
            elif row["engine"] == "postgresql" and row["db_schema"]:
                paths[pid] = PgSchema(row["db_schema"])
        return cls(paths, {row["name"]: pid for pid, row in rows.items()})

    def aliased(self, public_of: dict[str, str]) -> "Locations":
        """The locations under a benchmark's public ids (catalog id -> public id)."""
        return Locations({public_of[cid]: p for cid, p in self.paths.items() if cid in public_of},
                         {name: public_of[cid] for name, cid in self.ids.items() if cid in public_of})

    def path(self, public_id: str) -> Path | PgSchema:
        if public_id not in self.paths:
            raise RoutingError(f"no executable location for database {public_id}")
        return self.paths[public_id]


def tables_by_name(view: CatalogView) -> dict[str, set[str]]:
    """lower-case table name -> public ids holding a table of that name."""
    out: dict[str, set[str]] = defaultdict(set)
    for pid, db in view.databases.items():
        for t in db.tables:
            out[t].add(pid)
    return out
