"""Exploratory contracts: the request asks for the fewest sources covering named capabilities;
the required set is the unique minimum set of databases (two or more) whose capabilities cover them.
Some of them are asked a second question, as many as the request's drawn number of asks needs
(routing/build_common.py, ASKS).

Capabilities are entity labels of the public catalog (what `search entities` shows), so a
router can check the cover itself. A contract is kept only when the minimum cover is unique.
"""
from __future__ import annotations

from collections.abc import Iterator

from dibench.routing.build_common import BuildContext, distinct_units, extra_asks, one_branch_contract, open_sizes
from dibench.routing.models import AnswerCondition, Contract, ContractUnit
from dibench.routing.pool import prefer_questions

COVER_SIZES = (2, 3, 4)
COVER_WEIGHTS = (50, 35, 15)
MIN_COVER = 2  # an exploratory task's cover holds at least this many databases


def minimum_covers(capabilities: list[str], holders: dict[str, frozenset[str]], limit: int = 2,
                   max_size: int | None = None) -> list[frozenset[str]]:
    """All minimum-size sets of databases covering every capability (stops after `limit` found, and
    at covers of `max_size` databases)."""
    for size in range(1, min(len(capabilities), max_size or len(capabilities)) + 1):
        found: list[frozenset[str]] = []
        _search(capabilities, holders, frozenset(), size, found, limit, set())
        if found:
            return found
    return []


def _search(caps: list[str], holders: dict[str, frozenset[str]], chosen: frozenset[str], size: int,
            found: list[frozenset[str]], limit: int, seen: set[frozenset[str]]) -> None:
    # what is below a chosen set depends on the set alone: one reached again in another order finds nothing new
    if len(found) >= limit or chosen in seen:
        return
    seen.add(chosen)
    uncovered = [c for c in caps if not holders[c] & chosen]
    if not uncovered:
        if chosen not in found:
            found.append(chosen)
        return
    if len(chosen) >= size:
        return
    # branch on the databases able to cover the uncovered capability fewest databases hold (exact set cover)
    pivot = min(uncovered, key=lambda c: len(holders[c]))
    for db in sorted(holders[pivot]):
        _search(caps, holders, chosen | {db}, size, found, limit, seen)


def _units_for(ctx: BuildContext, db: str, caps: set[str], n: int) -> list[ContractUnit]:
    """Up to n units of db reading a table of the capabilities it covers (different questions with
    different results); none when it has no such unit."""
    db_view = ctx.pool.view.databases[db]
    tables = {name for name, t in db_view.tables.items() if t.entity in caps}
    options = [i for i in ctx.pool.by_database.get(db, []) if i.tables & tables]
    return distinct_units(ctx, prefer_questions([i for i in options if i.distinctive] or options), n)


def exploratory_candidates(ctx: BuildContext) -> Iterator[Contract]:
    holders = ctx.pool.entity_index()
    dbs = ctx.pool.prefer_asked({d: infos for d, infos in ctx.pool.by_database.items()
                                 if ctx.pool.view.databases[d].entities})
    sizes = open_sizes(COVER_SIZES, COVER_WEIGHTS, len(dbs))
    while sizes:  # a small catalog draws only the cover sizes that leave a choice of sets
        k = ctx.rng.choices([k for k, _ in sizes], weights=[w for _, w in sizes])[0]
        picked = ctx.rng.sample(dbs, k)
        caps = sorted({ctx.rng.choice(ctx.pool.view.databases[d].entities) for d in picked})
        covers = minimum_covers(caps, holders)
        if len(covers) != 1 or len(covers[0]) < MIN_COVER:
            # no unique minimum cover: the required set would be a matter of taste; one database:
            # nothing to explore, the request would be a parallel or single one in other words
            continue
        units: list[ContractUnit] = []
        # the sources asked a second question; the question for the sources is one ask too
        k = len(covers[0])
        twice = set(ctx.rng.sample(sorted(covers[0]), extra_asks(ctx, k + 1)))
        for db in sorted(covers[0]):
            found = _units_for(ctx, db, {c for c in caps if db in holders[c]}, 2 if db in twice else 1)
            if not found:
                break
            units += found
        else:
            yield one_branch_contract(ctx, "exploratory", units, AnswerCondition(
                kind="covering-set", description="the fewest sources that together cover every named capability, "
                                                 "and each one's result", final_units=[u.unit_id for u in units]),
                capabilities=caps)
