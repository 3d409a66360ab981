"""Whether a word-matching of the catalog's names finds a request's gold set, read without meaning.

Every request must pass this before it is kept: no exact lookup of labels, table or column names
written in it, no lookup of column words in any order, no lookup of labels through crude stems,
no ranking of the databases by the stems their names share with it, and no union of each ask's own
first database by that ranking may give its gold set. A
ranking "gives" the set when its top |gold| databases can be the gold set under some order of its
ties (a reviewer breaks ties their own way) with few such orders, and a lookup gives it when the
gold set is one of its smallest covers and there are few of them. What a reviewer's word router would find is thereby kept out of the benchmark,
whatever order of ids or guess of the number of sources they use.
"""
from __future__ import annotations

from math import comb, prod

from dibench.routing.build_exploratory import minimum_covers
from dibench.routing.lookup import (
    SOURCES, holders, mentioned_labels, overlap_scores, stemmed_holders, top_overlap, word_labels,
)
from dibench.routing.ask_split import ask_clauses
from dibench.routing.view import CatalogView

COVER_OPTIONS = 8  # a lookup narrowing the choice to this many smallest covers, gold among them, gives it
TIE_OPTIONS = 8  # a ranking whose ties leave at most this many top-k sets, gold among them, gives it
# one pick per ask of its first databases gives gold when at most this many picks exist: a
# reviewer's own tie-break (the lowest id) hit 6 of 555 full-Spider tasks past TIE_OPTIONS picks
PICK_OPTIONS = 64


def _covers_hold(gold: frozenset[str], found: dict[str, frozenset[str]]) -> bool:
    """Whether the labels found have at most COVER_OPTIONS smallest covers, gold one of them."""
    if not found or not all(gold & held for held in found.values()):
        return False
    covers = minimum_covers(sorted(found), found, limit=COVER_OPTIONS + 1, max_size=len(gold))
    return len(covers) <= COVER_OPTIONS and gold in covers


def _top_k_holds(gold: frozenset[str], scores: dict[str, int]) -> bool:
    k = len(gold)
    ranked = sorted(scores.values(), reverse=True)
    if k > len(ranked) or ranked[k - 1] == 0:
        return False
    cut = ranked[k - 1]
    above = {d for d, s in scores.items() if s > cut}
    tied = {d for d, s in scores.items() if s == cut}
    if not above <= gold <= above | tied:
        return False
    return comb(len(tied), k - len(above)) <= TIE_OPTIONS


def _per_ask_holds(gold: frozenset[str], tops: list[frozenset[str]]) -> bool:
    """Whether picking one of each ask's first databases can give gold, with few such picks."""
    tops = [t for t in tops if t]
    if not tops or not all(t & gold for t in tops) or not gold <= frozenset().union(*tops):
        return False
    return prod(len(t) for t in tops) <= PICK_OPTIONS


def matcher_finding(request: str, gold: frozenset[str], view: CatalogView) -> str | None:
    """The name of the first word-matching that finds gold in request, or None."""
    for source in SOURCES:
        index = holders(view, source)
        if _covers_hold(gold, {lab: index[lab] for lab in mentioned_labels(request, index)}):
            return f"{source} named verbatim"
    columns = holders(view, "columns")
    if _covers_hold(gold, {lab: columns[lab] for lab in word_labels(request, view)}):
        return "column words"
    if _covers_hold(gold, stemmed_holders(request, view)):
        return "stemmed labels"
    if _top_k_holds(gold, overlap_scores(request, view)):
        return "name-stem overlap"
    if _per_ask_holds(gold, [top_overlap(a, view) for a in ask_clauses(request)]):
        return "name-stem overlap per ask"
    return None
