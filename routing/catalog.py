"""Profile one database through SQLAlchemy: tables, columns, keys, samples and capabilities.

Works for any SQLAlchemy engine (+ optional schema): SQLite files opened read-only, or a
PostgreSQL schema. Identifiers reach SQL only through SQLAlchemy Core constructs, which quote
them; no value is ever written into SQL text.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, column, create_engine, event, func, inspect, select, table
from sqlalchemy.exc import SAWarning, SQLAlchemyError

from dibench.routing.errors import CatalogSourceError
from dibench.routing.naming import entity_label, natural, words

SAMPLE_DISPLAY = 5       # sample values shown to routers per column
SAMPLE_OVERLAP = 200     # distinct values kept per text column for cross-database overlaps
_NUMERIC = ("int", "real", "float", "double", "numeric", "decimal", "number", "money", "bit")
_TEMPORAL = ("date", "time", "year")
_KEYISH_SUFFIXES = ("id", "_id", "code", "_key", "number", "num", "no")


@dataclass
class ColumnProfile:
    name: str
    type: str
    category: str  # numeric | temporal | text
    pk: bool
    nullable: bool
    samples: list[str] = field(default_factory=list)
    overlap_values: list[str] = field(default_factory=list)
    min: str | None = None
    max: str | None = None


@dataclass
class TableProfile:
    name: str
    entity: str
    n_rows: int
    columns: list[ColumnProfile]
    foreign_keys: list[tuple[str, str, str]]  # (column, referred table, referred column)


@dataclass
class DatabaseProfile:
    """Everything the catalog records about one database; `name`/`location` are private."""

    name: str
    engine: str
    location: str
    schema: str | None
    tables: list[TableProfile]

    @property
    def n_rows(self) -> int:
        return sum(t.n_rows for t in self.tables)

    def content_hash(self) -> str:
        shape = [(t.name, [(c.name, c.type, c.pk) for c in t.columns], t.foreign_keys, t.n_rows) for t in self.tables]
        return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()

    def schema_map(self) -> dict[str, set[str]]:
        return {t.name.lower(): {c.name.lower() for c in t.columns} for t in self.tables}


def sqlite_engine(path: Path) -> Engine:
    """A read-only SQLAlchemy engine over one SQLite file."""
    engine = create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")

    @event.listens_for(engine, "connect")
    def _text_factory(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")

    return engine


def category(type_name: str, column_name: str) -> str:
    t = type_name.lower()
    name_words = set(words(column_name))
    if any(k in t for k in _TEMPORAL) or name_words & {"date", "year", "yr"}:
        return "temporal"
    if any(k in t for k in _NUMERIC):
        return "numeric"
    return "text"


def is_measure(col: ColumnProfile) -> bool:
    """A numeric column that is not a key or identifier: something one would aggregate."""
    name = col.name.lower()
    return col.category == "numeric" and not col.pk and not name.endswith(_KEYISH_SUFFIXES)


def _text(value: Any) -> str:
    return value.hex() if isinstance(value, bytes) else str(value)


def _column_stats(conn: Any, tbl: Any, col: ColumnProfile) -> None:
    c = tbl.c[col.name]
    if col.category == "text":
        rows = conn.execute(select(c).where(c.is_not(None)).distinct().limit(SAMPLE_OVERLAP)).all()
        values = [_text(r[0]) for r in rows if _text(r[0]).strip()]
        col.samples = values[:SAMPLE_DISPLAY]
        col.overlap_values = values
    else:
        lo, hi = conn.execute(select(func.min(c), func.max(c))).one()
        col.min = None if lo is None else _text(lo)
        col.max = None if hi is None else _text(hi)
        rows = conn.execute(select(c).where(c.is_not(None)).distinct().limit(SAMPLE_DISPLAY)).all()
        col.samples = [_text(r[0]) for r in rows]


def profile_database(engine: Engine, *, name: str, location: str, schema: str | None = None) -> DatabaseProfile:
    """Read tables, columns, keys and sample values of one database (or one Postgres schema)."""
    try:
        with warnings.catch_warnings():
            # Spider's DDL carries type arguments and foreign keys SQLite never enforced;
            # SQLAlchemy warns about each, and the profile keeps what it could reflect.
            warnings.simplefilter("ignore", SAWarning)
            return _profile(engine, name=name, location=location, schema=schema)
    except SQLAlchemyError as exc:
        raise CatalogSourceError(f"{location}: cannot profile database: {str(exc).splitlines()[0]}") from exc


def _table_profile(conn: Any, insp: Any, tname: str, schema: str | None) -> TableProfile:
    pk_cols = set(insp.get_pk_constraint(tname, schema=schema).get("constrained_columns") or [])
    cols = [ColumnProfile(c["name"], str(c["type"]), category(str(c["type"]), c["name"]),
                          c["name"] in pk_cols, bool(c.get("nullable", True)))
            for c in insp.get_columns(tname, schema=schema)]
    fks = [(local, fk["referred_table"], remote)
           for fk in insp.get_foreign_keys(tname, schema=schema)
           for local, remote in zip(fk["constrained_columns"], fk["referred_columns"])
           if remote]
    tbl = table(tname, *[column(c.name) for c in cols], schema=schema)
    n_rows = int(conn.execute(select(func.count()).select_from(tbl)).scalar_one())
    for col in cols:
        _column_stats(conn, tbl, col)
    return TableProfile(tname, entity_label(tname), n_rows, cols, fks)


def _profile(engine: Engine, *, name: str, location: str, schema: str | None) -> DatabaseProfile:
    insp = inspect(engine)
    with engine.connect() as conn:
        tables = [_table_profile(conn, insp, t, schema) for t in sorted(insp.get_table_names(schema=schema))]
    return DatabaseProfile(name, engine.dialect.name, location, schema, tables)


@dataclass(frozen=True)
class Capabilities:
    entities: list[str]
    measures: list[str]
    time_ranges: list[str]
    summary: str


def capabilities(profile: DatabaseProfile) -> Capabilities:
    """What a router may learn about a database without seeing its data: a short summary."""
    entities = sorted({t.entity for t in profile.tables})
    measures: list[str] = []
    time_ranges: list[str] = []
    samples: list[str] = []
    for t in profile.tables:
        for c in t.columns:
            if is_measure(c):
                measures.append(f"{natural(c.name)} of {t.entity}")
            if c.category == "temporal" and c.min is not None:
                time_ranges.append(f"{natural(c.name)} of {t.entity}: {c.min} .. {c.max}")
            if c.category == "text" and c.samples and not c.pk:
                samples.append(f"{natural(c.name)} ({', '.join(c.samples[:3])})")
    columns = sorted({natural(c.name) for t in profile.tables for c in t.columns})
    summary = " ".join([
        f"Entities: {', '.join(entities)}.",
        f"Measures: {', '.join(measures) or 'none'}.",
        f"Time ranges: {'; '.join(time_ranges) or 'none'}.",
        f"Columns: {', '.join(columns)}.",
        f"Sample values: {'; '.join(samples[:25]) or 'none'}.",
    ])
    return Capabilities(entities, measures, time_ranges, summary)
