"""The exact set cover behind exploratory contracts and the label lookups: every cover it returns is of
minimum size, and it finds as many as asked for when that many exist."""
from __future__ import annotations

import itertools
import random

from dibench.routing.build_exploratory import minimum_covers


def _all_minimum(caps: list[str], holders: dict[str, frozenset[str]], max_size: int | None) -> list[frozenset[str]]:
    dbs = sorted(set().union(*holders.values()))
    for size in range(1, min(len(caps), max_size or len(caps)) + 1):
        found = [frozenset(c) for c in itertools.combinations(dbs, size) if all(holders[x] & set(c) for x in caps)]
        if found:
            return found
    return []


def test_covers_are_minimum_and_as_many_as_asked() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        dbs = [f"d{i}" for i in range(rng.randint(2, 10))]
        caps = [f"c{i}" for i in range(rng.randint(1, 6))]
        holders = {c: frozenset(rng.sample(dbs, rng.randint(1, len(dbs)))) for c in caps}
        limit, max_size = rng.choice([1, 2, 3, 100]), rng.choice([None, 2, 3])
        got, want = minimum_covers(caps, holders, limit, max_size), _all_minimum(caps, holders, max_size)
        assert len(got) == len(set(got)) == min(limit, len(want))
        assert set(got) <= set(want), (holders, got, want)


def test_a_label_every_database_holds_is_covered_by_the_others() -> None:
    # 400 databases hold `name`; the rarer labels need two of them, and only one pair holds them all
    dbs = [f"db{i:03d}" for i in range(400)]
    holders = {"name": frozenset(dbs), "a": frozenset({"db007"}), "b": frozenset({"db007", "db123"}),
               "c": frozenset({"db123", "db300"}), "d": frozenset({"db123"})}
    assert minimum_covers(["name", "a", "b", "c", "d"], holders) == [frozenset({"db007", "db123"})]
