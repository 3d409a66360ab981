"""Exact lookup of the public catalog's labels written verbatim in a text: entity labels and table
names in words, or column names in words, and the smallest set of databases holding all of them.
The label-lookup shortcuts route by it, and an exploratory request is refused when it finds the
request's cover."""
from __future__ import annotations

import re
from typing import Literal

from dibench.routing.build_exploratory import minimum_covers
from dibench.routing.naming import natural, tokens
from dibench.routing.view import CatalogView, DatabaseView

Source = Literal["tables", "columns"]
SOURCES: tuple[Source, ...] = ("tables", "columns")  # what an exploratory request must not give away
_WORD = re.compile(r"[a-z0-9]+")
# the index of the last view looked up, per source: every task of an audit or a generation reads
# the same view, and a process that moves on to another view keeps no index of the old one
_LAST: dict[Source, tuple[CatalogView, dict[str, frozenset[str]]]] = {}


def holders(view: CatalogView, source: Source = "tables") -> dict[str, frozenset[str]]:
    """Label -> databases holding it."""
    hit = _LAST.get(source)
    if hit is None or hit[0] is not view:
        hit = _LAST[source] = (view, _index(view, source))
    return hit[1]


def _labels(db: DatabaseView, source: Source) -> set[str]:
    if source == "tables":
        return {*db.entities, *(natural(t.name) for t in db.tables.values())}
    return {natural(c["column"]) for t in db.tables.values() for c in t.columns}


def _index(view: CatalogView, source: Source) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for pid, db in view.databases.items():
        for label in _labels(db, source):
            label = " ".join(_WORD.findall(label.lower()))
            if len(label) >= 3:
                out.setdefault(label, set()).add(pid)
    return {k: frozenset(v) for k, v in out.items()}


def _mentions(request: str, index: dict[str, frozenset[str]]) -> dict[str, int]:
    """Labels of index written in the request (as whole words), longest first, none inside another:
    label -> word position of its first mention."""
    ws = _WORD.findall(request.lower())
    longest = max((lab.count(" ") + 1 for lab in index), default=1)
    taken: set[int] = set()
    found: dict[str, int] = {}
    for n in range(min(longest, len(ws)), 0, -1):
        for i in range(len(ws) - n + 1):
            label = " ".join(ws[i:i + n])
            if label in index and label not in found and not taken & set(range(i, i + n)):
                found[label] = i
                taken |= set(range(i, i + n))
    return found


def looked_up(request: str, view: CatalogView, source: Source = "tables") -> list[str]:
    """The databases of the smallest cover of every label named verbatim, in order of first mention."""
    index = holders(view, source)
    found = _mentions(request, index)
    if not found:
        return []
    labels = sorted(found, key=found.__getitem__)
    covers = minimum_covers(labels, {lab: index[lab] for lab in labels})
    if not covers:
        return []
    first = {db: min(found[lab] for lab in labels if db in index[lab]) for db in covers[0]}
    return sorted(covers[0], key=lambda d: (first[d], d))


def looked_up_words(request: str, view: CatalogView) -> list[str]:
    """A looser lookup: every column whose words (singular) all occur somewhere in the request, in
    any order or form ("song names" holds `song_name`), and the smallest cover of them."""
    words = set(tokens(request))
    index = holders(view, "columns")
    found = [lab for lab in index if len(lab) >= 4 and set(tokens(lab)) <= words]
    # a column whose words are all inside a longer found one's says nothing more
    found = [lab for lab in found if not any(set(tokens(lab)) < set(tokens(o)) for o in found)]
    if not found:
        return []
    covers = minimum_covers(sorted(found), {lab: index[lab] for lab in found})
    return sorted(covers[0]) if covers else []
