"""Cross-database relations: which databases *could* be used together, and why.

Three kinds of evidence, each computed from a pair of profiles alone (so a subset of a
catalog gets the same edges as the full catalog): shared entity names, shared non-generic
column names, and overlapping text values between two columns.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

from dibench.routing.catalog import DatabaseProfile
from dibench.routing.naming import natural

# Column names too generic to suggest that two databases describe the same things.
GENERIC_COLUMNS = frozenset({
    "id", "name", "description", "details", "other details", "type", "code", "date", "title", "value",
    "status", "note", "notes", "comment", "comments", "other", "text", "count", "number", "rank",
})
MIN_SHARED_VALUES = 3
MAX_VALUE_SPREAD = 25  # a value present in more databases than this ("yes", "male") is noise


@dataclass(frozen=True)
class Relation:
    a: str  # public id, a < b
    b: str
    shared_entities: tuple[str, ...]
    shared_columns: tuple[str, ...]
    value_overlaps: tuple[str, ...]  # "table.column ~ table.column (n shared values)"

    @property
    def kinds(self) -> list[str]:
        return [k for k, v in (("entity", self.shared_entities), ("column", self.shared_columns),
                               ("values", self.value_overlaps)) if v]

    @property
    def score(self) -> float:
        return len(self.shared_entities) + 0.5 * len(self.shared_columns) + len(self.value_overlaps)


def _is_generic(col_natural: str) -> bool:
    last = col_natural.split()[-1] if col_natural else ""
    return col_natural in GENERIC_COLUMNS or last == "id"


def _value_index(profiles: dict[str, DatabaseProfile]) -> dict[str, set[tuple[str, str]]]:
    """normalised value -> {(public id, 'table.column')}."""
    index: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for pid, prof in profiles.items():
        for t in prof.tables:
            for c in t.columns:
                if c.pk:
                    continue
                for v in c.overlap_values:
                    norm = v.strip().lower()
                    if len(norm) >= 3 and any(ch.isalpha() for ch in norm):
                        index[norm].add((pid, f"{t.name}.{c.name}"))
    return index


def _value_overlaps(profiles: dict[str, DatabaseProfile]) -> dict[tuple[str, str], list[str]]:
    pair_counts: dict[tuple[str, str], dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for holders in _value_index(profiles).values():
        if len({pid for pid, _ in holders}) > MAX_VALUE_SPREAD:
            continue
        for (pa, ca), (pb, cb) in combinations(sorted(holders), 2):
            if pa != pb:
                pair_counts[(pa, pb)][(ca, cb)] += 1
    out: dict[tuple[str, str], list[str]] = {}
    for pair, cols in pair_counts.items():
        kept = sorted((f"{ca} ~ {cb} ({n} shared values)" for (ca, cb), n in cols.items() if n >= MIN_SHARED_VALUES))
        if kept:
            out[pair] = kept
    return out


def relations(profiles: dict[str, DatabaseProfile]) -> list[Relation]:
    """All pairs with at least one kind of evidence, keyed by public id (a < b)."""
    entities = {pid: {t.entity for t in p.tables} for pid, p in profiles.items()}
    columns = {pid: {natural(c.name) for t in p.tables for c in t.columns} - {""} for pid, p in profiles.items()}
    columns = {pid: {c for c in cols if not _is_generic(c)} for pid, cols in columns.items()}
    overlaps = _value_overlaps(profiles)
    out: list[Relation] = []
    for a, b in combinations(sorted(profiles), 2):
        rel = Relation(a, b, tuple(sorted(entities[a] & entities[b])), tuple(sorted(columns[a] & columns[b])),
                       tuple(overlaps.get((a, b), [])))
        if rel.kinds:
            out.append(rel)
    return out
