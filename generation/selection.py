"""Selection: quality q(S) and greedy Maximal Marginal Relevance, then a coverage pass, `target`
skeletons in all (the coverage pass takes at most half of them).

q(S) = 0.25 semantic + 0.20 rule_diversity + 0.20 metric_rarity + 0.20 dimension_cardinality
       + 0.15 join_complexity;  pick argmax (1-λ)·q(c) + λ·min_{s∈S} d_J(c, s), λ = 0.3.
Rarity and diversity count prior selections, so they change as the selection grows.
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dibench.generation.skeletons import Skeleton

WEIGHTS = {"semantic": 0.25, "rule_diversity": 0.20, "metric_rarity": 0.20, "dimension_cardinality": 0.20,
           "join_complexity": 0.15}
LAMBDA = 0.3


def semantic_affinity(s: Skeleton) -> float:
    """Does slicing this metric by this dimension make business sense? Declared slicing
    dimensions (spatial/categorical) score 1.0; the metric's own time axis 0.9; others 0.5."""
    if s.dimension_type in ("spatial", "categorical"):
        return 1.0
    if s.dimension_type == "temporal":
        return 0.9
    return 0.5


def cardinality_score(s: Skeleton) -> float:
    if s.dimension_type == "temporal":
        return 0.7
    n = s.cardinality
    if n <= 1:
        return 0.1
    if n == 2:
        return 0.5
    if n <= 5:
        return 0.8
    return 1.0


def join_score(s: Skeleton) -> float:
    return {1: 0.25, 2: 0.5, 3: 0.75}.get(len(s.tables), 1.0)


def rule_diversity(s: Skeleton, rule_counts: Counter[str]) -> float:
    if not s.rules:
        return 0.0
    return sum(1.0 / (1 + rule_counts[r.rule_id]) for r in s.rules) / len(s.rules)


def quality(s: Skeleton, rule_counts: Counter[str], metric_counts: Counter[str]) -> float:
    parts = {
        "semantic": semantic_affinity(s),
        "rule_diversity": rule_diversity(s, rule_counts),
        "metric_rarity": 1.0 / (1 + metric_counts[s.metric]),
        "dimension_cardinality": cardinality_score(s),
        "join_complexity": join_score(s),
    }
    return sum(WEIGHTS[k] * v for k, v in parts.items())


def jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return 1.0 - (len(a & b) / len(union)) if union else 0.0


@dataclass(frozen=True)
class Selection:
    picked: tuple[Skeleton, ...]
    coverage_added: tuple[Skeleton, ...]


def select(candidates: Sequence[Skeleton], target: int, *, seed: int = 42, lam: float = LAMBDA,
           coverage_share: float = 0.5) -> Selection:
    """`target` skeletons in all: greedy MMR, then a coverage pass for metrics and rules not yet
    represented. MMR leaves the coverage pass the slots it needs, up to `coverage_share` of the
    target, so a small target is still mostly MMR's choice (0: MMR alone, coverage only if room).
    Ties break by a seeded shuffle of the candidates, so runs are reproducible."""
    pool = sorted(candidates, key=lambda s: s.key)
    random.Random(seed).shuffle(pool)
    rule_counts: Counter[str] = Counter()
    metric_counts: Counter[str] = Counter()
    picked: list[Skeleton] = []
    remaining = list(pool)
    # Parallel to `remaining`: each candidate's node set, and its distance to the nearest picked
    # skeleton, updated by one distance per pick (1.0 before the first: distances are at most 1).
    node_sets = [c.node_set() for c in remaining]
    nearest = [1.0] * len(remaining)
    while remaining and len(picked) < target:
        reserve = min(len(coverage(picked, remaining, rule_counts, metric_counts)), int(target * coverage_share))
        if len(picked) + reserve >= target:
            break
        best_i, best_score = 0, float("-inf")
        for i, c in enumerate(remaining):
            score = (1 - lam) * quality(c, rule_counts, metric_counts) + lam * nearest[i]
            if score > best_score:
                best_i, best_score = i, score
        chosen, chosen_set = remaining.pop(best_i), node_sets.pop(best_i)
        del nearest[best_i]
        nearest = [min(d, jaccard_distance(cs, chosen_set)) for d, cs in zip(nearest, node_sets)]
        picked.append(chosen)
        metric_counts[chosen.metric] += 1
        for r in chosen.rules:
            rule_counts[r.rule_id] += 1
    added = coverage(picked, remaining, rule_counts, metric_counts)[:max(0, target - len(picked))]
    return Selection(tuple(picked), tuple(added))


def coverage(picked: Sequence[Skeleton], remaining: Sequence[Skeleton], rule_counts: Counter[str],
             metric_counts: Counter[str]) -> list[Skeleton]:
    """The best remaining skeleton for each metric or rule `picked` does not represent, best first."""
    added: list[Skeleton] = []
    covered_m = {s.metric for s in picked}
    covered_r = {r.rule_id for s in picked for r in s.rules}
    for c in sorted(remaining, key=lambda s: -quality(s, rule_counts, metric_counts)):
        new_m = c.metric not in covered_m
        new_r = any(r.rule_id not in covered_r for r in c.rules)
        if new_m or new_r:
            added.append(c)
            covered_m.add(c.metric)
            covered_r.update(r.rule_id for r in c.rules)
    return added
