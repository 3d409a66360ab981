"""Exact lookup of the public catalog's labels written verbatim in a text: entity labels and table
names in words, or column names in words, and the smallest set of databases holding all of them;
the same through crude stems, and a ranking of databases by the stems their names share with a
text. The lookup shortcuts route by these, and a request is refused when one finds its gold set
(routing/word_match.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import log
from typing import Literal

from dibench.routing.build_exploratory import minimum_covers
from dibench.routing.naming import natural, tokens, words
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


def mentioned_labels(request: str, index: dict[str, frozenset[str]]) -> list[str]:
    """Labels of index written verbatim in the request, in order of first mention."""
    found = _mentions(request, index)
    return sorted(found, key=found.__getitem__)


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


def word_labels(request: str, view: CatalogView) -> list[str]:
    """Every column whose words (singular) all occur somewhere in the request, in any order or form
    ("song names" holds `song_name`), save those inside a longer one found."""
    words = set(tokens(request))
    of = _column_tokens(view)
    found = [lab for lab, ws in of.items() if ws <= words]
    return [lab for lab in found if not any(of[lab] < of[o] for o in found)]


# the column labels (of four letters or more) of the last view read, with their words
_LAST_TOKENS: list[tuple[CatalogView, dict[str, frozenset[str]]]] = []


def _column_tokens(view: CatalogView) -> dict[str, frozenset[str]]:
    if not _LAST_TOKENS or _LAST_TOKENS[0][0] is not view:
        _LAST_TOKENS[:] = [(view, {lab: frozenset(tokens(lab)) for lab in holders(view, "columns") if len(lab) >= 4})]
    return _LAST_TOKENS[0][1]


def looked_up_words(request: str, view: CatalogView) -> list[str]:
    """A looser lookup: the smallest cover of the columns word_labels finds."""
    index = holders(view, "columns")
    found = word_labels(request, view)
    if not found:
        return []
    covers = minimum_covers(sorted(found), {lab: index[lab] for lab in found})
    return sorted(covers[0]) if covers else []


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")
# words every request or every catalog writes: they say nothing about which database
STOP = frozenset("a an the of in on at to for by with from and or is are was were be been do does did what which "
                 "who whom whose how many much when where why list show find give return tell me all each every "
                 "their its that this these those there have has had as than more most least number id name "
                 "names record records source sources data hi thanks please need".split())


def stem(word: str) -> str:
    """A crude suffix stripper (any reviewer writes one): `ratings`, `rated`, `rating` -> `rat`."""
    for suf in _SUFFIXES:
        if len(word) - len(suf) >= 3 and word.endswith(suf):
            return word[: -len(suf)]
    return word


def stems(text: str) -> list[str]:
    return [stem(w) for w in words(text) if w not in STOP and not w.isdigit()]


def _names(db: DatabaseView) -> set[str]:
    out = {*db.entities}
    for t in db.tables.values():
        out.add(t.name)
        out |= {c["column"] for c in t.columns}
    return out


def name_stems(db: DatabaseView) -> set[str]:
    return {s for name in _names(db) for s in stems(name)}


@dataclass(frozen=True)
class StemIndex:
    names: dict[str, set[str]]  # database -> stems of its labels, table and column names
    labels: dict[str, set[str]]  # stemmed table or entity label -> databases
    weight: dict[str, float] = field(default_factory=dict)  # stem -> log(databases / databases holding it)

    def __post_init__(self) -> None:
        held: dict[str, int] = {}
        for ns in self.names.values():
            for st in ns:
                held[st] = held.get(st, 0) + 1
        self.weight.update({st: log(len(self.names) / n) for st, n in held.items()})


# the stems of the last view read: every task of an audit or a generation reads the same view
_LAST_STEMS: list[tuple[CatalogView, StemIndex]] = []


def _stem_index(view: CatalogView) -> StemIndex:
    if not _LAST_STEMS or _LAST_STEMS[0][0] is not view:
        labels: dict[str, set[str]] = {}
        for pid, db in view.databases.items():
            for label in {*db.entities, *(t.name for t in db.tables.values())}:
                key = " ".join(stems(label))
                if len(key) >= 3:
                    labels.setdefault(key, set()).add(pid)
        _LAST_STEMS[:] = [(view, StemIndex({pid: name_stems(db) for pid, db in view.databases.items()}, labels))]
    return _LAST_STEMS[0][1]


def overlap_scores(request: str, view: CatalogView) -> dict[str, int]:
    """Database -> how many distinct stems of the request its names hold."""
    asked = set(stems(request))
    return {pid: len(asked & names) for pid, names in _stem_index(view).names.items()}


def overlap_ranked(request: str, view: CatalogView) -> list[str]:
    """Databases by overlap_scores (ties by id), those holding none left out."""
    score = overlap_scores(request, view)
    return [pid for pid in sorted(score, key=lambda p: (-score[p], p)) if score[pid]]


def top_overlap(text: str, view: CatalogView) -> frozenset[str]:
    """The databases tied first when each stem of text their names hold counts log(n / holders): a
    stem every database holds counts nothing, a stem one holds the most (none when nothing counts)."""
    index = _stem_index(view)
    asked = set(stems(text))
    score = {pid: round(sum(index.weight[st] for st in asked & ns), 9) for pid, ns in index.names.items()}
    best = max(score.values(), default=0.0)
    return frozenset(pid for pid, x in score.items() if x == best) if best > 0 else frozenset()


def stemmed_labels(request: str, view: CatalogView) -> list[str]:
    """The smallest cover of every table or entity label whose stems all occur, in order, in the request."""
    found = stemmed_holders(request, view)
    covers = minimum_covers(sorted(found), found) if found else []
    return sorted(covers[0]) if covers else []


def stemmed_holders(request: str, view: CatalogView) -> dict[str, frozenset[str]]:
    """Stemmed table or entity labels whose stems occur, in order, in the request's (none inside a
    longer one found) -> the databases holding them."""
    text = " " + " ".join(stems(request)) + " "
    hit = {k: v for k, v in _stem_index(view).labels.items() if f" {k} " in text}
    return {k: frozenset(v) for k, v in hit.items() if not any(k != o and f" {k} " in f" {o} " for o in hit)}
