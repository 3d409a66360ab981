"""The review app's queues: which tasks a person sees, in which order, and which is next.

A queue is a pure function of the domain's admitted tasks, the sample size and the seed: all
admitted tasks ordered by key, or a stratified sample (`stratified_sample`). So it is the same
at every start of the app, and a person's place in it is what the graph holds of their reviews:
the next task is the first one without a review of its current version by them (`next_key`).
An update that gives a task a new version puts it back in the queue by itself.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TIER_ORDER = ("K", "K+A", "K+A+R")


@dataclass(frozen=True)
class QueueTask:
    key: str
    tier: str
    analysis_type: str
    version: int


def review_stratum(t: QueueTask) -> tuple[str, ...]:
    """The review sample's strata: knowledge tier x analysis type."""
    return t.tier, t.analysis_type


def blind_stratum(t: QueueTask) -> tuple[str, ...]:
    """The human baseline's strata: knowledge tier alone (the paper asks as many tasks per tier)."""
    return (t.tier,)


def allocate(sizes: dict[tuple[str, ...], int], n: int) -> dict[tuple[str, ...], int]:
    """How many of `n` draws each stratum gets: as equal as the strata's sizes allow (a stratum
    never gets more than it holds), the leftover of a small stratum going to the others in
    stratum order. Equal rather than proportional, so a rare tier x type is judged too."""
    left = min(n, sum(sizes.values()))
    out = {s: 0 for s in sizes}
    open_ = sorted(s for s, size in sizes.items() if size > 0)
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for i, s in enumerate(open_):
            give = min(share + (1 if i < extra else 0), sizes[s] - out[s])
            out[s] += give
            left -= give
        open_ = [s for s in open_ if out[s] < sizes[s]]
    return out


def stratified_sample(tasks: Sequence[QueueTask], n: int, seed: int,
                      stratum: Callable[[QueueTask], tuple[str, ...]] = review_stratum) -> list[QueueTask]:
    """`n` tasks drawn per stratum (`allocate`) with a generator seeded by `seed`, interleaved
    stratum by stratum (round robin), so the first tasks of a half-done review are already
    spread over the strata."""
    groups: dict[tuple[str, ...], list[QueueTask]] = {}
    for t in sorted(tasks, key=lambda t: t.key):
        groups.setdefault(stratum(t), []).append(t)
    counts = allocate({s: len(g) for s, g in groups.items()}, n)
    rng = random.Random(f"review|{seed}")
    drawn = {s: rng.sample(groups[s], counts[s]) for s in sorted(groups)}
    out: list[QueueTask] = []
    for i in range(max(counts.values(), default=0)):
        out += [drawn[s][i] for s in sorted(drawn) if i < len(drawn[s])]
    return out


def question_key(key: str) -> str:
    """The standard task's key of a task key: a variant's key is the standard one plus `:variant`."""
    return re.sub(r":(oracle|no_rule)$", "", key)


def build_queue(tasks: Sequence[QueueTask], sample: int | None, seed: int,
                stratum: Callable[[QueueTask], tuple[str, ...]] = review_stratum) -> list[QueueTask]:
    """All tasks by key (`sample` None), or the stratified sample of `sample` tasks."""
    if sample is None:
        return sorted(tasks, key=lambda t: t.key)
    return stratified_sample(tasks, sample, seed, stratum)


def reviewed_versions(reviews: Sequence[dict[str, Any]], reviewer: str) -> dict[str, int]:
    """Task key -> the version `reviewer` last reviewed."""
    out: dict[str, int] = {}
    for r in reviews:
        if r.get("reviewer") == reviewer:
            out[r["task_key"]] = max(out.get(r["task_key"], 0), int(r["task_version"]))
    return out


def next_key(queue: Sequence[QueueTask], done: dict[str, int], after: str | None = None) -> str | None:
    """The first task of `queue` (after `after`, wrapping round) whose current version is not
    among `done` (task key -> version reviewed); None when every task is reviewed."""
    keys = [t.key for t in queue]
    start = keys.index(after) + 1 if after in keys else 0
    for t in [*queue[start:], *queue[:start]]:
        if done.get(t.key) != t.version:
            return t.key
    return None
