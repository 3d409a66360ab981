"""The unit pool: eligible units indexed the ways the contract builders need.

A unit is *eligible* when its result is non-empty (an empty gold result would be matched by
any empty answer). It is *distinctive* when no other database of the catalog has every table
and column its SQL names: only then does its intent point at one source.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from sqlglot import exp

from dibench.routing.models import SourceUnit
from dibench.routing.naming import entity_label, words
from dibench.routing.sqltree import identifiers, parse_select
from dibench.routing.view import CatalogView


def canonical_sql(tree: exp.Expression) -> str:
    """The query with schema names reduced to words: equal across databases that 'say the same'."""
    tree = tree.copy()
    for t in tree.find_all(exp.Table):
        t.set("this", exp.to_identifier("_".join(entity_label(t.name).split())))
        t.set("alias", None)
    for c in tree.find_all(exp.Column):
        if c.name and c.name != "*":
            c.set("this", exp.to_identifier("_".join(words(c.name))))
        c.set("table", None)
    return tree.sql(dialect="sqlite").lower()


def prefer_questions(infos: list["UnitInfo"]) -> list["UnitInfo"]:
    """The units with a released human question, or all when none has one (segments use questions first)."""
    return [i for i in infos if i.unit.intent_source == "question"] or infos


@dataclass
class UnitInfo:
    unit: SourceUnit
    tree: exp.Expression
    tables: frozenset[str]
    columns: frozenset[str]
    answerable_by: frozenset[str]  # databases holding every named table and column

    @property
    def distinctive(self) -> bool:
        return self.answerable_by == frozenset({self.unit.database})


@dataclass
class UnitPool:
    view: CatalogView
    infos: dict[str, UnitInfo] = field(default_factory=dict)

    @classmethod
    def build(cls, view: CatalogView, units: list[SourceUnit]) -> "UnitPool":
        tables_of = {pid: set(db.tables) for pid, db in view.databases.items()}
        columns_of = {pid: db.column_names() for pid, db in view.databases.items()}
        pool = cls(view)
        for u in units:
            if u.n_rows == 0:
                continue
            tree = parse_select(u.sql)
            tables = frozenset(u.tables)
            columns = frozenset(i for i in identifiers(tree) if i not in tables)
            able = frozenset(pid for pid in view.databases
                             if tables <= tables_of[pid] and columns <= (columns_of[pid] | tables_of[pid]))
            pool.infos[u.unit_id] = UnitInfo(u, tree, tables, columns, able | {u.database})
        return pool

    @cached_property
    def by_database(self) -> dict[str, list[UnitInfo]]:
        out: dict[str, list[UnitInfo]] = defaultdict(list)
        for info in sorted(self.infos.values(), key=lambda i: i.unit.unit_id):
            out[info.unit.database].append(info)
        return dict(out)

    @cached_property
    def distinctive_by_database(self) -> dict[str, list[UnitInfo]]:
        return {db: [i for i in infos if i.distinctive] for db, infos in self.by_database.items()
                if any(i.distinctive for i in infos)}

    @cached_property
    def canonical_groups(self) -> dict[str, list[UnitInfo]]:
        groups: dict[str, list[UnitInfo]] = defaultdict(list)
        for info in sorted(self.infos.values(), key=lambda i: i.unit.unit_id):
            groups[canonical_sql(info.tree)].append(info)
        return dict(groups)

    @staticmethod
    def prefer_asked(by_db: dict[str, list[UnitInfo]], at_least: int = 2) -> list[str]:
        """The databases of by_db that have a unit worded by a released question, when at least
        `at_least` do; else all of them (sorted).

        Segments use human questions first: where a release ships questions for only some of its
        databases (Spider without its train questions), contracts draw their sources from those.
        The others stay in the catalog as candidates a router must rule out.
        """
        asked = sorted(db for db, infos in by_db.items() if any(i.unit.intent_source == "question" for i in infos))
        return asked if len(asked) >= at_least else sorted(by_db)

    def entity_index(self) -> dict[str, frozenset[str]]:
        """capability (entity label) -> databases that hold it."""
        out: dict[str, set[str]] = defaultdict(set)
        for pid, db in self.view.databases.items():
            for e in db.entities:
                out[e].add(pid)
        return {k: frozenset(v) for k, v in out.items()}
