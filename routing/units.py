"""Source units from the release's gold SQL: parse, check, execute read-only, fingerprint.

Human questions come first. A release ships them as JSON lists of {db_id, query, question}:
Spider's `dev.json`, `train_spider.json`, `train_others.json` (the copy under ../shared/data has
only dev.json; a full original has all three) and KaggleDBQA-style `examples/*.json`. Gold SQL
files without questions (`dev_gold.sql`, `train_gold.sql`: `query<TAB>db_id`) add the queries
no question file holds. One query (same database, same SQL once parsed) is one unit, with the
first question released for it: a release that asks the same SQL twice gives no duplicate task.
Only a query no question file asks gets an intent rendered from the SQL tree. A unit whose SQL
fails any step is kept as a UnitFailure (with the error) and never used in a contract.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot

from dibench.routing.compare import CompareConfig, fingerprint
from dibench.routing.errors import CatalogSourceError, UnitSQLError
from dibench.routing.intents import hides_needed_value, render_intent
from dibench.routing.models import SourceUnit, UnitFailure
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.sqltree import (
    DIALECT, has_order_by, normalise_quoted, parse_select, render, schema_problems, table_names,
)
from dibench.routing.view import CatalogView, Locations

# Question files in the order their questions win; origins are "<file stem>:<index in the file>".
QUESTION_FILES = ("dev.json", "train_spider.json", "train_others.json")
QUESTION_FOLDERS = ("examples",)  # KaggleDBQA: examples/<db>.json, <db>_test.json, <db>_fewshot.json
GOLD_FILES = (("dev_gold.sql", "dev"), ("train_gold.sql", "train"))


@dataclass(frozen=True)
class ReleaseQuery:
    origin: str
    db_name: str
    sql: str
    question: str | None


@dataclass(frozen=True)
class Release:
    queries: list[ReleaseQuery]  # one per distinct (database, SQL)
    records: int  # question items and gold lines read
    merged: int  # records that repeat an earlier query (their question, if any, is not used)


@dataclass
class UnitBuild:
    units: list[SourceUnit]
    failures: list[UnitFailure]
    read: int
    by_source: dict[str, int] = field(default_factory=dict)
    merged: int = 0

    def failure_counts(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.failures))


def _gold_lines(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            sql, _, db = line.rpartition("\t")
            out.append((sql.strip(), db.strip()))
    return out


def _question_items(path: Path) -> list[tuple[str, str, str]]:
    """(db_id, query, question) of every item; a malformed file is one error line naming it."""
    try:
        items = json.loads(path.read_text())
        return [(str(i["db_id"]), str(i["query"]).strip(), str(i["question"]).strip()) for i in items]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CatalogSourceError(f"{path}: not a list of {{db_id, query, question}} items ({type(exc).__name__}: "
                                 f"{str(exc)[:80]})") from exc


def question_files(root: Path) -> list[Path]:
    files = [root / name for name in QUESTION_FILES if (root / name).is_file()]
    return files + [p for folder in QUESTION_FOLDERS if (root / folder).is_dir()
                    for p in sorted((root / folder).glob("*.json"))]


def sql_key(db_name: str, sql: str) -> tuple[str, str]:
    """Equal for the same query however it is spaced, cased or quoted (its parsed, normalised tree)."""
    try:
        text = sqlglot.parse_one(sql, read=DIALECT).sql(dialect=DIALECT, normalize=True)
    except sqlglot.errors.SqlglotError:
        text = sql  # kept as written; it fails as a unit later, with its own error
    return db_name.lower(), " ".join(text.replace('"', "'").split()).rstrip(";")


def _records(root: Path) -> list[ReleaseQuery]:
    records = [ReleaseQuery(f"{p.relative_to(root).with_suffix('').as_posix()}:{i}", db, sql, question or None)
               for p in question_files(root) for i, (db, sql, question) in enumerate(_question_items(p))]
    for name, origin in GOLD_FILES:
        if (root / name).is_file():
            records += [ReleaseQuery(f"{origin}:{i}", db, sql, None)
                        for i, (sql, db) in enumerate(_gold_lines(root / name))]
    return records


def read_release(root: Path) -> Release:
    """Every distinct gold query of the release, with its human question where one was released."""
    records = _records(root)
    if not records:
        raise CatalogSourceError(f"{root}: no question file ({', '.join(QUESTION_FILES)}, examples/*.json) "
                                 "and no dev_gold.sql or train_gold.sql")
    first: dict[tuple[str, str], ReleaseQuery] = {}
    for r in records:
        key = sql_key(r.db_name, r.sql)
        if key not in first:
            first[key] = r
        elif first[key].question is None and r.question:
            first[key] = ReleaseQuery(first[key].origin, first[key].db_name, first[key].sql, r.question)
    return Release(list(first.values()), len(records), len(records) - len(first))


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
    release = read_release(root)
    units, failures = [], []
    for q in release.queries:
        try:
            units.append(build_unit(q, catalog, view, locations, executor))
        except UnitSQLError as exc:
            failures.append(UnitFailure(origin=q.origin, database=locations.ids.get(q.db_name, "not-ingested"),
                                        kind=exc.kind,
                                        error=str(exc)))
        if progress:
            progress(1)
    by_source = dict(Counter(u.origin.split(":")[0] for u in units))
    return UnitBuild(units, failures, len(release.queries), by_source, release.merged)
