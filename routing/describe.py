"""Capabilities of an exploratory request in words of the data they hold, not their labels.

An exploratory request used to list the public entity labels of its cover ("tv series, cartoon"):
an exact lookup of those labels in the catalog then solved the task without reading it. Here each
capability is described by a few of its table's own columns, paraphrased (`song names` for
`song_name`; never the label, an id column, a joining word or a column that reads badly), and the description is kept
only when the smallest set of databases holding tables with those columns is still exactly the
contract's cover and an exact lookup of the catalog's labels or column names in it does not find
that cover.
"""
from __future__ import annotations

import random

from dibench.routing.build_exploratory import minimum_covers
from dibench.routing.lookup import SOURCES, looked_up
from dibench.routing.models import Contract
from dibench.routing.naming import natural, tokens
from dibench.routing.view import CatalogView

COLUMNS_PER_CAPABILITY = 3
DRAWS = 4  # column draws tried before a contract is refused
PHRASES = ("records with {cols}", "data giving {cols}", "entries that have {cols}", "a list with {cols}")


# words a request's layout is read by (joiners, sequence cues): a description never brings one in
LAYOUT_WORDS = frozenset("and also then plus next besides separately first after using before".split())
# words that make a column name read badly as a description (`is_official`, `other_details`, `num_of_staff`)
FUNCTION_WORDS = frozenset("is has of other num from to by in on at for with the a an".split())


# participles a column name may end with: `final table made`, `year held` read as plurals already
PARTICIPLES = frozenset("made held won paid built sold given taken done born seen run set put hit".split())


def plural(word: str) -> str:
    if word.endswith(("s", "ed")) or word in PARTICIPLES:
        return word  # `details`, `status`: already read as a plural; `awarded` has none
    if word.endswith("y") and word[-2:-1] not in tuple("aeiou"):
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("x", "ch", "sh")) else "s")


def paraphrase(column: str) -> str:
    """A column as an analyst would write it, in other words than its name: `song name` -> `song
    names`, `country` -> `countries` (an exact lookup of the column's name does not find it)."""
    ws = column.split()
    if ws[0] == "number" and len(ws) > 1:  # `number products`: the numbers of products
        return " ".join(["numbers", "of", *ws[1:]])
    return " ".join([*ws[:-1], plural(ws[-1])])


def _listing(cols: list[str]) -> str:
    """`a, b, c`: no joining word, so a description weighs nothing in the layout."""
    return ", ".join(paraphrase(c) for c in cols)


def _describable(columns: list[str], caps: set[str], labels: set[str]) -> list[str]:
    """The columns (in words) that say something about a table without naming a capability of the
    request, any entity label of the catalog, or an id."""
    cap_words = {w for cap in caps for w in tokens(cap)}
    out = []
    for col in columns:
        ws = tokens(col)
        if not ws or ws[-1] in ("id", "code", "key", "no") or (cap_words | LAYOUT_WORDS | FUNCTION_WORDS) & set(ws) \
                or natural(col) in labels or len(natural(col)) < 3:
            continue
        out.append(natural(col))
    return sorted(set(out))


def _tables_with(view: CatalogView, cols: set[str]) -> frozenset[str]:
    return frozenset(pid for pid, tables in _column_sets(view).items() if any(cols <= t for t in tables))


# each database's tables as sets of column names in words, for the last view described
_LAST: list[tuple[CatalogView, dict[str, list[frozenset[str]]]]] = []


def _column_sets(view: CatalogView) -> dict[str, list[frozenset[str]]]:
    if not _LAST or _LAST[0][0] is not view:
        _LAST[:] = [(view, {pid: [frozenset(natural(c["column"]) for c in t.columns) for t in db.tables.values()]
                            for pid, db in view.databases.items()})]
    return _LAST[0][1]


def describe(c: Contract, view: CatalogView, rng: random.Random) -> list[str] | None:
    """One description per capability of c, or None when no draw keeps the cover unique."""
    cover = frozenset(c.required_databases())
    options: list[tuple[str, list[str]]] = []
    labels = {e for db in view.databases.values() for e in db.entities}
    for label in c.capabilities:
        tables = [t for d in sorted(cover) for t in view.databases[d].tables.values() if t.entity == label]
        if not tables:
            return None
        cols = _describable([col["column"] for col in tables[0].columns], set(c.capabilities), labels)
        if not cols:
            return None
        options.append((label, cols))
    for _ in range(DRAWS):
        drawn = [frozenset(rng.sample(cols, min(COLUMNS_PER_CAPABILITY, len(cols)))) for _, cols in options]
        holders = {str(i): _tables_with(view, set(d)) for i, d in enumerate(drawn)}
        covers = minimum_covers(sorted(holders), holders)
        if len(covers) == 1 and covers[0] == cover:
            described = [rng.choice(PHRASES).format(cols=_listing(sorted(d))) for d in drawn]
            text = " ".join(described)
            if all(set(looked_up(text, view, source)) != cover for source in SOURCES):
                return described
    return None
