"""Catalog ingest: profile every database of a catalog and write it to Neo4j.

Two sources: a Spider-style folder (`tables.json` + `database/<db>/<db>.sqlite`, SQLite files
opened read-only) and one PostgreSQL schema reached through an SQLAlchemy engine.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine

from routing.catalog import DatabaseProfile, profile_database, sqlite_engine
from routing.catalog_store import WriteReport, link_domain_tables, private_locations, write_catalog
from routing.errors import CatalogSourceError
from routing.naming import mint_public_id
from routing.relations import relations
from service.graph import Graph, add_counters

Progress = Callable[[str], None]


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
                profiles.append(profile_database(engine, name=name, location=str(path)))
            finally:
                engine.dispose()
        if progress:
            progress(name)
    return profiles, skipped


def write_profiles(graph: Graph, catalog: str, profiles: list[DatabaseProfile], *, kind: str, root: str,
                   skipped: list[str]) -> WriteReport:
    # a database keeps its id across re-ingests (contracts refer to it); a new one gets a fresh random id
    known = {row["name"]: pid for pid, row in private_locations(graph, catalog).items()}
    by_id = {known.get(p.name) or mint_public_id(): p for p in profiles}
    return write_catalog(graph, catalog, by_id, relations(by_id), kind=kind, root=root, skipped=skipped)


def ingest_sqlite_folder(graph: Graph, root: Path, *, catalog: str = "spider", only: list[str] | None = None,
                         progress: Progress | None = None) -> IngestReport:
    started = time.perf_counter()
    profiles, skipped = profile_sqlite_folder(root, only=only, progress=progress)
    w = write_profiles(graph, catalog, profiles, kind="sqlite-folder", root=str(root), skipped=skipped)
    keep = [pid for pid, row in private_locations(graph, catalog).items() if row["name"] in {p.name for p in profiles}]
    add_counters(w.counters, graph.write("routing_catalog_database_prune", catalog=catalog, engine="sqlite", keep=keep))
    return IngestReport(catalog, w.databases, skipped, w.tables, w.columns, w.foreign_keys, w.relations,
                        round(time.perf_counter() - started, 2), w.counters)


def ingest_postgres_schema(graph: Graph, engine: Engine, schema: str, *, catalog: str,
                           extra: list[DatabaseProfile] | None = None) -> IngestReport:
    """One Postgres schema becomes one catalog database (named after the schema).

    `extra` profiles join the same catalog write, so relations to them are computed too.
    """
    started = time.perf_counter()
    location = f"{engine.url.render_as_string(hide_password=True)}#{schema}"
    profile = profile_database(engine, name=schema, location=location, schema=schema)
    w = write_profiles(graph, catalog, [profile, *(extra or [])], kind="postgres-schema", root=location, skipped=[])
    return IngestReport(catalog, w.databases, [], w.tables, w.columns, w.foreign_keys, w.relations,
                        round(time.perf_counter() - started, 2), w.counters, link_domain_tables(graph, catalog))
