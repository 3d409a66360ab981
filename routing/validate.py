"""Deterministic contract validation, run before any wording exists.

Checks, in order: structure (per behaviour), ownership, schema references, read-only SQL,
acyclic dependencies, bindings declared, execution (every unit reproduces its fingerprint,
bindings satisfied by a single upstream value of the declared type). After wording, a second
check makes sure the request keeps the wording rules (routing/wording_rules.py), states no bound
value, names no database, and (when asked) that no
word-matching of the catalog's names finds its sources (routing/word_match.py).
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from dibench.routing.build_common import MAX_EXTRA_ASKS
from dibench.routing.build_exploratory import MIN_COVER, minimum_covers
from dibench.routing.build_sequential import value_type
from dibench.routing.compare import CompareConfig, fingerprint
from dibench.routing.errors import ContractInvalid, UnitSQLError
from dibench.routing.models import Branch, Contract, ContractUnit, SourceUnit
from dibench.routing.naming import words
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.sqltree import parse_select, schema_problems, sql_placeholders
from dibench.routing.task_store import base_unit_id
from dibench.routing.view import CatalogView, Locations
from dibench.routing.word_match import matcher_finding
from dibench.routing.wording_rules import broken_rule

MIN_REQUEST_CHARS = 20


@dataclass
class Validator:
    view: CatalogView
    locations: Locations
    executor: SqliteExecutor
    registry: dict[str, SourceUnit]
    bound_values: dict[str, list[Any]] = field(default_factory=dict)  # task id -> values bound at execution
    refuse_word_matched: bool = False  # refuse a request whose sources a word-matching of names finds
    # (database, SQL) -> what is wrong with it, or None: candidate contracts share their units' statements
    _schema_checked: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict)

    def validate(self, c: Contract) -> None:
        """Raise ContractInvalid naming the first failed check."""
        self._structure(c)
        for branch in c.branches:
            for u in branch.units:
                self._ownership(c, u)
                self._schema(c, u)
            order = self._acyclic(c, branch)
            self._bindings_declared(c, branch)
            self._execute(c, branch, order)

    # -- structure -----------------------------------------------------------------------
    def _structure(self, c: Contract) -> None:
        def fail(detail: str) -> None:
            raise ContractInvalid(c.task_id, "structure", detail)

        if not c.branches:
            fail("no branch")
        for b in c.branches:
            if not b.units:
                fail(f"branch {b.branch_id} has no unit")
            if b.databases != sorted({u.database for u in b.units}):
                fail(f"branch {b.branch_id}: databases {b.databases} are not its units' owners")
            self._asks_per_source(c, b)
        n_units = len(c.branches[0].units)
        distinct_dbs = len(c.branches[0].databases)
        if c.behaviour == "interactive":
            if len(c.branches) != 2 or any(b.weight != 0.5 for b in c.branches):
                fail("interactive needs exactly two branches of weight 0.5")
            if c.branches[0].databases == c.branches[1].databases:
                fail("the two interpretations use the same sources")
            if c.intended not in {b.branch_id for b in c.branches}:
                fail("interactive needs the intended reading to be one of its branches")
            return
        if c.intended is not None:
            fail(f"{c.behaviour} has no intended reading to clarify")
        if len(c.branches) != 1 or c.branches[0].weight != 1.0:
            fail(f"{c.behaviour} needs one branch of weight 1")
        edges = c.branches[0].edges
        if c.behaviour == "single" and (distinct_dbs != 1 or edges):
            fail("single-target needs exactly one database and no edge")
        if c.behaviour == "parallel" and (not 2 <= distinct_dbs <= 8 or edges):
            fail("parallel needs 2-8 different databases and no edge")
        if c.behaviour == "sequential" and (not edges or distinct_dbs < 2):
            fail("sequential needs a dependency edge between two databases")
        if c.behaviour == "exploratory":
            self._cover(c)

    @staticmethod
    def _asks_per_source(c: Contract, b: Branch) -> None:
        """Single, parallel and exploratory contracts may ask their sources MAX_EXTRA_ASKS more
        questions than one each (the count of asks then does not give the count of sources);
        sequential and interactive ones ask each source once. Two asks of one source differ in
        question and in result."""
        per_db: dict[str, list[ContractUnit]] = defaultdict(list)
        for u in b.units:
            per_db[u.database].append(u)
        extra = len(b.units) - len(per_db)
        allowed = MAX_EXTRA_ASKS if c.behaviour in ("single", "parallel", "exploratory") else 0
        if extra > allowed:
            raise ContractInvalid(c.task_id, "structure", f"branch {b.branch_id}: {extra} asks beyond one per "
                                                          f"source, at most {allowed}")
        for db, units in per_db.items():
            if len({u.unit_id for u in units}) < len(units) or len({u.fingerprint for u in units}) < len(units) \
                    or len({u.intent for u in units}) < len(units):
                raise ContractInvalid(c.task_id, "structure", f"branch {b.branch_id}: two asks of {db} are not "
                                                              "different questions with different results")

    def _cover(self, c: Contract) -> None:
        holders: dict[str, frozenset[str]] = {}
        for cap in c.capabilities:
            holders[cap] = frozenset(pid for pid, db in self.view.databases.items() if cap in db.entities)
            if not holders[cap]:
                raise ContractInvalid(c.task_id, "structure", f"no database holds capability {cap!r}")
        if not c.capabilities:
            raise ContractInvalid(c.task_id, "structure", "exploratory contract names no capability")
        covers = minimum_covers(c.capabilities, holders)
        required = frozenset(c.branches[0].databases)
        if covers != [required]:
            raise ContractInvalid(c.task_id, "structure",
                                  f"required set is not the unique minimum cover of {c.capabilities}")
        if len(required) < MIN_COVER:
            raise ContractInvalid(c.task_id, "structure", f"the cover of {c.capabilities} is one database")

    # -- ownership and schema --------------------------------------------------------------
    def _ownership(self, c: Contract, u: ContractUnit) -> None:
        if u.database not in self.view.databases:
            raise ContractInvalid(c.task_id, "ownership", f"unit {u.unit_id}: unknown database {u.database}")
        base_id, _, owner_suffix = u.unit_id.partition("@")
        base_id = base_id.split("~")[0]
        base = self.registry.get(base_id)
        if base is None:
            raise ContractInvalid(c.task_id, "ownership", f"unit {u.unit_id} is no known source unit")
        expected_owner = owner_suffix or base.database
        if u.database != expected_owner:
            raise ContractInvalid(c.task_id, "ownership",
                                  f"unit {u.unit_id} belongs to {expected_owner}, contract says {u.database}")

    def _schema(self, c: Contract, u: ContractUnit) -> None:
        key = (u.database, u.sql)
        if key not in self._schema_checked:
            self._schema_checked[key] = self._schema_problem(u)
        if (problem := self._schema_checked[key]) is not None:
            check, detail = problem
            raise ContractInvalid(c.task_id, check, f"unit {u.unit_id}: {detail}")

    def _schema_problem(self, u: ContractUnit) -> tuple[str, str] | None:
        """(check, detail) of what is wrong with the unit's statement on its database's schema, or None."""
        try:
            tree = parse_select(u.sql)
        except UnitSQLError as exc:
            return "read-only", str(exc)
        problems = schema_problems(tree, self.view.databases[u.database].schema_map())
        return ("schema", ", ".join(f"{p.kind} {p.name}" for p in problems)) if problems else None

    # -- dependencies ------------------------------------------------------------------------
    def _acyclic(self, c: Contract, b: Branch) -> list[ContractUnit]:
        """Units in dependency order (Kahn); a cycle is a ContractInvalid."""
        units = {u.unit_id: u for u in b.units}
        incoming: dict[str, int] = {uid: 0 for uid in units}
        out: dict[str, list[str]] = defaultdict(list)
        for e in b.edges:
            if e.source_unit not in units or e.target_unit not in units:
                raise ContractInvalid(c.task_id, "bindings", f"edge {e.source_unit}->{e.target_unit} names a unit "
                                                             "outside its branch")
            if e.source != units[e.source_unit].database or e.target != units[e.target_unit].database:
                raise ContractInvalid(c.task_id, "bindings", f"edge {e.source}->{e.target} does not match its units")
            incoming[e.target_unit] += 1
            out[e.source_unit].append(e.target_unit)
        ready = sorted(uid for uid, n in incoming.items() if n == 0)
        order: list[ContractUnit] = []
        while ready:
            uid = ready.pop(0)
            order.append(units[uid])
            for nxt in out[uid]:
                incoming[nxt] -= 1
                if incoming[nxt] == 0:
                    ready.append(nxt)
        if len(order) != len(units):
            raise ContractInvalid(c.task_id, "acyclic", "the dependency edges form a cycle")
        return order

    def _bindings_declared(self, c: Contract, b: Branch) -> None:
        bound = defaultdict(set)
        for e in b.edges:
            bound[e.target_unit].add(e.binding.parameter)
        for u in b.units:
            needed = set(sql_placeholders(u.sql))
            if needed != bound[u.unit_id]:
                raise ContractInvalid(c.task_id, "bindings", f"unit {u.unit_id}: placeholders {sorted(needed)} "
                                                             f"but bindings {sorted(bound[u.unit_id])}")

    # -- execution -----------------------------------------------------------------------------
    def _execute(self, c: Contract, b: Branch, order: list[ContractUnit]) -> None:
        results: dict[str, Any] = {}
        for u in order:
            params: dict[str, Any] = {}
            for e in b.edges:
                if e.target_unit != u.unit_id:
                    continue
                up = results[e.source_unit]
                if len(up.rows) != 1 or e.binding.upstream_column not in up.columns:
                    raise ContractInvalid(c.task_id, "bindings", f"{e.source_unit} does not return one row with "
                                                                 f"column {e.binding.upstream_column!r}")
                value = up.rows[0][up.columns.index(e.binding.upstream_column)]
                if value_type(value) != e.binding.value_type:
                    raise ContractInvalid(c.task_id, "bindings", f"bound value is {value_type(value)}, "
                                                                 f"binding declares {e.binding.value_type}")
                params[e.binding.parameter] = value
                self.bound_values.setdefault(c.task_id, []).append(value)
            try:
                res = self.executor.run(self.locations.path(u.database), u.sql, params)
            except UnitSQLError as exc:
                raise ContractInvalid(c.task_id, "execution", f"unit {u.unit_id}: {exc}") from exc
            if not res.rows or fingerprint(res.rows, CompareConfig(u.ordered)) != u.fingerprint:
                raise ContractInvalid(c.task_id, "execution", f"unit {u.unit_id} does not reproduce its evidence")
            results[u.unit_id] = res

    # -- wording -------------------------------------------------------------------------------
    def validate_wording(self, c: Contract) -> None:
        text = c.request
        if len(text.strip()) < MIN_REQUEST_CHARS:
            raise ContractInvalid(c.task_id, "wording", "request is shorter than 20 characters")
        rule = broken_rule(text)
        if rule:
            raise ContractInvalid(c.task_id, "wording", f"the request {rule}")
        for value in self.bound_values.get(c.task_id, []):
            if re.search(rf"(?<!\w){re.escape(str(value))}(?!\w)", text, re.IGNORECASE):
                raise ContractInvalid(c.task_id, "wording", "the request states a bound value")
        if re.search(r"\bdb_[0-9a-f]{10}\b", text):
            raise ContractInvalid(c.task_id, "wording", "the request names a database id")
        if self.refuse_word_matched and c.behaviour != "interactive":  # an interactive request's readings are split by the turn alone
            found = matcher_finding(text, frozenset(c.required_databases()), self.view)
            if found:
                raise ContractInvalid(c.task_id, "word-match", f"a word-matching of the catalog's names ({found}) "
                                                               "finds the request's sources")
        asked = [u.intent for u in c.units() if self._is_question(u.unit_id)]
        for name in self.locations.ids:
            if any(names_database(text, spelling) and not any(names_database(q, spelling) for q in asked)
                   for spelling in database_spellings(name)):
                raise ContractInvalid(c.task_id, "wording", "the request names a database")

    def _is_question(self, unit_id: str) -> bool:
        source = self.registry.get(base_unit_id(unit_id))
        return source is not None and source.intent_source == "question"


def database_spellings(name: str) -> list[list[str]]:
    """The word sequences a database name may be written as: `greater_manchester_crime`,
    `GreaterManchesterCrime` and `greater manchester crime` are all [greater, manchester, crime];
    `pets_1` is [pets, 1], and without its number only when more than one word remains."""
    ws = words(name)
    out = [ws] if ws else []
    bare = [w for w in ws if not w.isdigit()]
    if len(bare) >= 2 and bare != ws:
        out.append(bare)
    return out


def names_database(text: str, spelling: list[str]) -> bool:
    """Whether `text` writes the word sequence `spelling` within one phrase, in any case, spacing or
    camel case (a multi-word name also written as one word: `greatermanchestercrime`). Punctuation
    ends a phrase: a listing "concert, singer" does not write `concert_singer`."""
    n = len(spelling)
    for phrase in _PHRASE_END.split(text):
        ws = words(phrase)
        if any(ws[i:i + n] == spelling for i in range(len(ws) - n + 1)) or (n >= 2 and "".join(spelling) in ws):
            return True
    return False


_PHRASE_END = re.compile(r"[,;:.?!()\[\]]\s|\s[-–]\s")
