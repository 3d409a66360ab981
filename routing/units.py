"""Source units from the release's gold SQL: parse, check, execute read-only, fingerprint.

dev.json gives each dev query its question; train_gold.sql (`query<TAB>db_id`) has none,
so those units get an intent rendered from the SQL tree. A unit whose SQL fails any step is
kept as a UnitFailure (with the error) and never used in a contract.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from routing.compare import CompareConfig, fingerprint
from routing.errors import CatalogSourceError, UnitSQLError
from routing.intents import hides_needed_value, render_intent
from routing.models import SourceUnit, UnitFailure
from routing.sqlite_exec import SqliteExecutor
from routing.sqltree import has_order_by, normalise_quoted, parse_select, render, schema_problems, table_names
from routing.view import CatalogView, Locations


@dataclass(frozen=True)
class ReleaseQuery:
    origin: str
    db_name: str
    sql: str
    question: str | None


@dataclass
class UnitBuild:
    units: list[SourceUnit]
    failures: list[UnitFailure]
    read: int
    by_source: dict[str, int] = field(default_factory=dict)

    def failure_counts(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.failures))


def _gold_lines(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            sql, _, db = line.rpartition("\t")
            out.append((sql.strip(), db.strip()))
    return out


def read_release(root: Path) -> list[ReleaseQuery]:
    """Every gold query of dev.json/dev_gold.sql and train_gold.sql."""
    queries: list[ReleaseQuery] = []
    dev_json, dev_gold, train_gold = root / "dev.json", root / "dev_gold.sql", root / "train_gold.sql"
    if dev_json.is_file():
        for i, item in enumerate(json.loads(dev_json.read_text())):
            queries.append(ReleaseQuery(f"dev:{i}", item["db_id"], item["query"].strip(), item["question"].strip()))
    elif dev_gold.is_file():
        queries += [ReleaseQuery(f"dev:{i}", db, sql, None) for i, (sql, db) in enumerate(_gold_lines(dev_gold))]
    if train_gold.is_file():
        queries += [ReleaseQuery(f"train:{i}", db, sql, None) for i, (sql, db) in enumerate(_gold_lines(train_gold))]
    if not queries:
        raise CatalogSourceError(f"{root}: no dev.json, dev_gold.sql or train_gold.sql")
    return with_known_questions(queries)


def _sql_key(db_name: str, sql: str) -> tuple[str, str]:
    return db_name, " ".join(sql.lower().replace('"', "'").split()).rstrip(";")


def with_known_questions(queries: list[ReleaseQuery]) -> list[ReleaseQuery]:
    """A gold query without a question takes the human question released for the same SQL, if any."""
    asked = {_sql_key(q.db_name, q.sql): q.question for q in queries if q.question}
    return [q if q.question else ReleaseQuery(q.origin, q.db_name, q.sql, asked.get(_sql_key(q.db_name, q.sql)))
            for q in queries]


def unit_id(catalog: str, origin: str, sql: str) -> str:
    return "u_" + hashlib.sha256(f"{catalog}|{origin}|{sql}".encode()).hexdigest()[:12]


def build_unit(q: ReleaseQuery, catalog: str, view: CatalogView, locations: Locations,
               executor: SqliteExecutor) -> SourceUnit:
    """Raise UnitSQLError (with its kind) when the query cannot become a unit."""
    pid = locations.ids.get(q.db_name, "")
    db = view.databases.get(pid)
    if db is None or pid not in locations.paths:
        raise UnitSQLError("not-in-catalog", "owner database was not ingested", q.sql)
    schema = db.schema_map()
    tree = normalise_quoted(parse_select(q.sql), schema)
    problems = schema_problems(tree, schema)
    if problems:
        raise UnitSQLError("schema-reference", ", ".join(f"{p.kind} {p.name}" for p in problems), q.sql)
    intent = q.question or render_intent(tree)
    if not q.question and hides_needed_value(intent):
        raise UnitSQLError("unwordable", "no released question, and the SQL-rendered text would hide a needed value",
                           q.sql)
    sql = render(tree)
    ordered = has_order_by(tree)
    result = executor.run(locations.path(pid), sql)
    original = executor.run(locations.path(pid), q.sql)
    cfg = CompareConfig(ordered=ordered)
    if fingerprint(result.rows, cfg) != fingerprint(original.rows, cfg):
        raise UnitSQLError("render-mismatch", "the re-rendered SQL gives another result than the original", q.sql)
    return SourceUnit(unit_id=unit_id(catalog, q.origin, q.sql), catalog=catalog, database=pid, origin=q.origin,
                      intent=intent, intent_source="question" if q.question else "rendered",
                      sql=sql, ordered=ordered, fingerprint=fingerprint(result.rows, cfg), n_rows=len(result.rows),
                      columns=result.columns, tables=sorted(table_names(tree)))


def build_units(root: Path, catalog: str, view: CatalogView, locations: Locations, executor: SqliteExecutor,
                progress: Callable[[int], None] | None = None) -> UnitBuild:
    queries = read_release(root)
    units, failures = [], []
    for q in queries:
        try:
            units.append(build_unit(q, catalog, view, locations, executor))
        except UnitSQLError as exc:
            failures.append(UnitFailure(origin=q.origin, database=locations.ids.get(q.db_name, "not-ingested"),
                                        kind=exc.kind,
                                        error=str(exc)))
        if progress:
            progress(1)
    by_source = dict(Counter(u.origin.split(":")[0] for u in units))
    return UnitBuild(units, failures, len(queries), by_source)
