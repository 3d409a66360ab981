"""Catalog ingest: profile every database of a catalog and write it to Neo4j.

Two sources: a Spider-style folder (`tables.json` + `database/<db>/<db>.sqlite`, SQLite files
opened read-only) and PostgreSQL schemas reached through an SQLAlchemy engine. A catalog is
profiled together whatever the number of ingests that fill it: the relations of the databases an
ingest brings are computed against every database already stored in the catalog (from their
stored profiles), so a schema ingested after a folder is related to the folder's databases.
"""
from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, inspect

from dibench.routing.catalog import DatabaseProfile, profile_database, sqlite_engine
from dibench.routing.catalog_store import (
    WriteReport, link_domain_tables, private_locations, stored_profiles, write_catalog,
)
from dibench.routing.errors import CatalogSourceError
from dibench.routing.naming import mint_public_id
from dibench.routing.relations import relations
from dibench.stores.graph import Graph

Progress = Callable[[str], None]
# Every gold result of such a database is empty or a zero count: nothing a route could be scored on.
EMPTY = "every table is empty (left out of the catalog)"


@dataclass(frozen=True)
class Removed:
    """What a re-ingest took out: sources gone from their folder or warehouse, and what needed them."""

    databases: int = 0
    units: int = 0
    tasks_retired: int = 0


@dataclass
class IngestReport:
    catalog: str
    databases: int
    skipped: list[str]
    tables: int
    columns: int
    foreign_keys: int
    relations: int
    seconds: float
    counters: dict[str, int] = field(default_factory=dict)
    domain_links: int = 0  # catalog tables linked to a dibench domain's Table nodes
    removed: Removed = field(default_factory=Removed)


def sqlite_path(root: Path, db_name: str) -> Path:
    return root / "database" / db_name / f"{db_name}.sqlite"


def discover(root: Path) -> list[str]:
    """Database names listed in tables.json or present as database/<name>/ folders."""
    if not root.is_dir():
        raise CatalogSourceError(f"{root}: no such folder")
    names: set[str] = set()
    tables_json = root / "tables.json"
    if tables_json.is_file():
        try:
            names |= {entry["db_id"] for entry in json.loads(tables_json.read_text())}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CatalogSourceError(f"{tables_json}: not a Spider tables.json: {exc}") from exc
    if (root / "database").is_dir():
        names |= {p.name for p in (root / "database").iterdir() if p.is_dir()}
    if not names:
        raise CatalogSourceError(f"{root}: neither tables.json nor database/<name>/ folders found")
    return sorted(names)


def profile_sqlite_folder(root: Path, *, only: list[str] | None = None,
                          progress: Progress | None = None) -> tuple[list[DatabaseProfile], list[str]]:
    """Profiles of every database with a SQLite file; the others as 'name: reason'."""
    profiles, skipped = [], []
    for name in discover(root):
        if only is not None and name not in only:
            continue
        path = sqlite_path(root, name)
        if not path.is_file():
            skipped.append(f"{name}: no SQLite file at database/{name}/{name}.sqlite (schema only in the release)")
        else:
            engine = sqlite_engine(path)
            try:
                profile = profile_database(engine, name=name, location=str(path))
            finally:
                engine.dispose()
            if profile.n_rows == 0:
                skipped.append(f"{name}: {EMPTY}")
            else:
                profiles.append(profile)
        if progress:
            progress(name)
    return profiles, skipped


def write_profiles(graph: Graph, catalog: str, profiles: list[DatabaseProfile], *, kind: str, root: str,
                   skipped: list[str]) -> WriteReport:
    """Write profiles into catalog, relating them to each other and to the catalog's stored databases."""
    # a database keeps its id across re-ingests (contracts refer to it); a new one gets a fresh random id
    known = {(row["engine"], row["name"]): pid for pid, row in private_locations(graph, catalog).items()}
    by_id = {known.get((p.engine, p.name)) or mint_public_id(): p for p in profiles}
    stored = {pid: p for pid, p in stored_profiles(graph, catalog).items() if pid not in by_id}
    # relations are computed over the whole catalog and replace the stored ones (the prune keeps only these)
    return write_catalog(graph, catalog, by_id, relations({**stored, **by_id}), kind=kind, root=root, skipped=skipped)


def ingest_sqlite_folder(graph: Graph, root: Path, *, catalog: str = "spider", only: list[str] | None = None,
                         progress: Progress | None = None) -> IngestReport:
    started = time.perf_counter()
    profiles, skipped = profile_sqlite_folder(root, only=only, progress=progress)
    # databases the folder no longer holds go first, so no relation is computed against them
    names = {p.name for p in profiles}
    keep = [pid for pid, row in private_locations(graph, catalog).items() if row["name"] in names]
    removed = prune_sources(graph, catalog, "sqlite", keep)
    w = write_profiles(graph, catalog, profiles, kind="sqlite-folder", root=str(root), skipped=skipped)
    return IngestReport(catalog, w.databases, skipped, w.tables, w.columns, w.foreign_keys, w.relations,
                        round(time.perf_counter() - started, 2), w.counters, removed=removed)


def prune_sources(graph: Graph, catalog: str, engine: str, keep: list[str]) -> Removed:
    """Remove the catalog's `engine` databases not in `keep` (catalog ids), then the units they owned
    and retire the routing tasks that required them (a retired task is no longer evaluated)."""
    pruned = graph.write_returning("routing_catalog_database_prune", catalog=catalog, engine=engine, keep=keep)
    orphans = graph.write_returning("routing_catalog_retire_orphans", catalog=catalog)[0]
    return Removed(int(pruned[0]["databases"]), int(orphans["units"]), int(orphans["tasks"]))


def ingest_postgres_schemas(graph: Graph, engine: Engine, schemas: list[str], *, catalog: str) -> IngestReport:
    """Each Postgres schema becomes one catalog database (named after the schema), profiled with the
    catalog's other databases (of this ingest and of earlier ones). A schema that does not exist is
    an error; one whose tables are all empty is skipped; a schema of an earlier ingest that the
    warehouse no longer holds leaves the catalog."""
    started = time.perf_counter()
    existing = set(inspect(engine).get_schema_names())
    for s in schemas:
        if s not in existing:
            close = difflib.get_close_matches(s, sorted(existing), n=3)
            raise CatalogSourceError(f"--postgres-schema {s!r}: no such schema in the warehouse",
                                     hint=f"did you mean {', '.join(close)}?" if close else
                                     "`dibench domain list` shows the domains' schemas")
    base = engine.url.render_as_string(hide_password=True)
    profiled = [profile_database(engine, name=s, location=f"{base}#{s}", schema=s) for s in schemas]
    profiles = [p for p in profiled if p.n_rows]
    empty = {p.name for p in profiled if not p.n_rows}
    skipped = [f"{name}: {EMPTY}" for name in sorted(empty)]
    keep = [pid for pid, row in private_locations(graph, catalog).items()
            if row["engine"] == "postgresql" and row["db_schema"] in existing - empty]
    removed = prune_sources(graph, catalog, "postgresql", keep)
    w = write_profiles(graph, catalog, profiles, kind="postgres-schema", root=base, skipped=skipped)
    return IngestReport(catalog, w.databases, skipped, w.tables, w.columns, w.foreign_keys, w.relations,
                        round(time.perf_counter() - started, 2), w.counters, link_domain_tables(graph, catalog),
                        removed)
