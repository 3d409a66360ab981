"""Selection: the quality scorers' tables, greedy MMR (lambda 0.3, Jaccard distance, first pick at
diversity 1.0), the coverage pass and seeded determinism. Pure functions: no services needed."""
from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence

import pytest

from dibench.generation.selection import (
    LAMBDA, WEIGHTS, cardinality_score, jaccard_distance, join_score, quality, rule_diversity, select,
    semantic_affinity,
)
from dibench.generation.skeletons import Skeleton
from dibench.stores.policies import RuleEdge


def rule(rid: str) -> RuleEdge:
    return RuleEdge(rid, "M", "{}", "definitional", "1", "0" * 16)


def skel(metric: str, dimension: str = "t.d", *, dtype: str = "categorical", card: int = 4,
         tables: Sequence[str] = ("t",), rules: Sequence[str] = ()) -> Skeleton:
    return Skeleton("sel", metric, dimension, dtype, "label", card, tuple(sorted(tables)),
                    tuple(rule(r) for r in rules))


# ------------------------------------------------------------------------------ scorers
def test_quality_weights_are_the_specified_ones() -> None:
    assert WEIGHTS == {"semantic": 0.25, "rule_diversity": 0.20, "metric_rarity": 0.20,
                       "dimension_cardinality": 0.20, "join_complexity": 0.15}
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)
    assert LAMBDA == 0.3


@pytest.mark.parametrize(("card", "score"), [(0, 0.1), (1, 0.1), (2, 0.5), (3, 0.8), (4, 0.8), (5, 0.8),
                                             (6, 1.0), (250, 1.0)])
def test_cardinality_score_table(card: int, score: float) -> None:
    assert cardinality_score(skel("m", card=card)) == score
    assert cardinality_score(skel("m", card=card, dtype="spatial")) == score


@pytest.mark.parametrize("card", [1, 2, 12, 700])
def test_temporal_dimensions_score_0_7_whatever_their_cardinality(card: int) -> None:
    assert cardinality_score(skel("m", dtype="temporal", card=card)) == 0.7


@pytest.mark.parametrize(("n_tables", "score"), [(1, 0.25), (2, 0.5), (3, 0.75), (4, 1.0), (7, 1.0)])
def test_join_complexity_table(n_tables: int, score: float) -> None:
    assert join_score(skel("m", tables=[f"t{i}" for i in range(n_tables)])) == score


def test_rule_diversity_is_the_mean_of_one_over_one_plus_prior_selections() -> None:
    s = skel("m", rules=["r1", "r2"])
    assert rule_diversity(s, Counter()) == 1.0
    assert rule_diversity(s, Counter({"r1": 1})) == pytest.approx((1 / 2 + 1) / 2)
    assert rule_diversity(s, Counter({"r1": 3, "r2": 1})) == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert rule_diversity(skel("m"), Counter({"r1": 3})) == 0.0  # no rule: nothing to diversify


def test_quality_is_the_weighted_sum_of_the_five_scorers() -> None:
    s = skel("m", card=2, tables=["a", "b", "c"], rules=["r1"])
    rules, metrics = Counter({"r1": 1}), Counter({"m": 3})
    want = (0.25 * semantic_affinity(s) + 0.20 * (1 / 2) + 0.20 * (1 / 4) + 0.20 * 0.5 + 0.15 * 0.75)
    assert quality(s, rules, metrics) == pytest.approx(want)
    # rarity and diversity fall as the metric and the rule are selected more often
    assert quality(s, Counter(), Counter()) > quality(s, rules, metrics)


def test_jaccard_distance() -> None:
    a, b = frozenset({"m:x", "d:y", "t:z"}), frozenset({"m:x", "d:w", "t:z"})
    assert jaccard_distance(a, b) == pytest.approx(1 - 2 / 4)
    assert jaccard_distance(a, a) == 0.0
    assert jaccard_distance(a, frozenset({"m:q"})) == 1.0
    assert jaccard_distance(a, b) == jaccard_distance(b, a)


def test_node_set_holds_metric_dimension_tables_and_rules() -> None:
    s = skel("m", "t.d", tables=["t", "u"], rules=["r"])
    assert s.node_set() == frozenset({"m:m", "d:t.d", "t:t", "t:u", "r:r"})


# ------------------------------------------------------------------------------ MMR
def reference_mmr(cands: Sequence[Skeleton], target: int, lam: float) -> list[str]:
    """The specification written out: argmax (1-lam) q(c) + lam min_s d_J(c, s), the first pick at
    diversity 1.0, rarity and diversity counting the picks so far. Candidates here have no ties."""
    picked: list[Skeleton] = []
    rest = list(cands)
    rc: Counter[str] = Counter()
    mc: Counter[str] = Counter()
    while rest and len(picked) < target:
        def score(c: Skeleton) -> float:
            div = min((jaccard_distance(c.node_set(), p.node_set()) for p in picked), default=1.0)
            return (1 - lam) * quality(c, rc, mc) + lam * div
        best = max(rest, key=score)
        rest.remove(best)
        picked.append(best)
        mc[best.metric] += 1
        rc.update(r.rule_id for r in best.rules)
    return [p.key for p in picked]


def varied_candidates() -> list[Skeleton]:
    return [
        skel("sales", "orders.channel", card=3, tables=["orders", "customers"], rules=["r1"]),
        skel("sales", "orders.channel", card=3, tables=["orders", "customers"], rules=["r2"]),
        skel("sales", "customers.region", card=7, tables=["orders", "customers"], rules=["r1"]),
        skel("sales", "orders.day", dtype="temporal", card=30, tables=["orders", "customers"]),
        skel("csat", "orders.channel", card=3, tables=["orders", "surveys", "customers"], rules=["r3"]),
        skel("csat", "customers.region", card=7, tables=["orders", "surveys", "customers"]),
        skel("aov", "orders.channel", card=2, tables=["orders"]),
        skel("aov", "customers.plan", card=1, tables=["orders", "customers", "plans", "regions"], rules=["r4"]),
    ]


def test_first_pick_is_the_best_quality_with_diversity_one() -> None:
    cands = varied_candidates()
    first = select(cands, 1, coverage_share=0.0).picked[0]
    assert first == max(cands, key=lambda c: quality(c, Counter(), Counter()))


def test_mmr_follows_the_specification_step_by_step() -> None:
    cands = varied_candidates()
    got = [s.key for s in select(cands, len(cands), coverage_share=0.0).picked]
    assert got == reference_mmr(cands, len(cands), 0.3)
    # lambda matters: ranking by quality alone orders these candidates differently
    assert got != reference_mmr(cands, len(cands), 0.0)
    assert [s.key for s in select(cands, len(cands), lam=0.0, coverage_share=0.0).picked] == \
        reference_mmr(cands, len(cands), 0.0)


def test_diversity_beats_a_near_duplicate_of_the_first_pick() -> None:
    a = skel("sales", "orders.channel", card=8, tables=["orders", "customers"], rules=["r1"])
    near = skel("sales", "orders.channel", card=4, tables=["orders", "customers"], rules=["r1", "r2"])
    far = skel("stock", "items.kind", card=1, tables=["items"])
    picks = [s.key for s in select([a, near, far], 2, coverage_share=0.0).picked]
    assert picks[0] == a.key
    rc, mc = Counter({"r1": 1}), Counter({"sales": 1})
    # after the first pick `near` has the better quality, but it is 1/6 away from `a` (Jaccard)
    assert quality(near, rc, mc) > quality(far, rc, mc)
    assert jaccard_distance(near.node_set(), a.node_set()) == pytest.approx(1 / 6)
    assert picks[1] == far.key
    assert [s.key for s in select([a, near, far], 2, lam=0.0, coverage_share=0.0).picked] == [a.key, near.key]


# ------------------------------------------------------------------------------ coverage
def test_coverage_pass_adds_the_best_skeleton_for_each_uncovered_metric_and_rule() -> None:
    cands = varied_candidates()
    sel = select(cands, 4)  # MMR leaves the coverage pass the two slots it needs
    assert (len(sel.picked), len(sel.coverage_added)) == (2, 2)
    chosen = list(sel.picked) + list(sel.coverage_added)
    assert {c.metric for c in chosen} == {c.metric for c in cands}
    assert {r.rule_id for c in chosen for r in c.rules} == {r.rule_id for c in cands for r in c.rules}
    # each added skeleton brings something the selection lacked when it was added
    have_m = {s.metric for s in sel.picked}
    have_r = {r.rule_id for s in sel.picked for r in s.rules}
    for s in sel.coverage_added:
        assert s.metric not in have_m or any(r.rule_id not in have_r for r in s.rules), s.key
        have_m.add(s.metric)
        have_r.update(r.rule_id for r in s.rules)
    assert not set(sel.picked) & set(sel.coverage_added)


def test_coverage_pass_adds_nothing_when_everything_is_covered() -> None:
    cands = varied_candidates()
    assert select(cands, len(cands)).coverage_added == ()


def test_coverage_pass_picks_the_best_of_the_candidates_for_a_metric() -> None:
    base = skel("sales", "orders.channel", card=6, tables=["orders", "customers", "regions"])
    weak = skel("stock", "items.kind", card=1, tables=["items"])
    strong = skel("stock", "items.kind2", card=8, tables=["items", "warehouses"])
    sel = select([base, weak, strong], 2)
    assert [s.key for s in sel.picked] == [base.key]
    assert [s.key for s in sel.coverage_added] == [strong.key]


def test_the_target_is_the_number_of_skeletons_selected() -> None:
    cands = varied_candidates()
    for target in range(1, len(cands) + 1):
        sel = select(cands, target)
        assert len(sel.picked) + len(sel.coverage_added) == target
        assert len(sel.coverage_added) <= target // 2  # a small target is mostly MMR's choice


# ------------------------------------------------------------------------------ determinism
def tied_candidates() -> list[Skeleton]:
    """Equal quality, pairwise disjoint node sets: every MMR step is a tie."""
    return [skel(f"m{i}", f"t{i}.d", card=4, tables=[f"t{i}"]) for i in range(7)]


def test_same_seed_same_selection_whatever_the_input_order() -> None:
    cands = varied_candidates() + tied_candidates()
    first = select(cands, 6, seed=42)
    for perm_seed in range(5):
        shuffled = list(cands)
        random.Random(perm_seed).shuffle(shuffled)
        assert select(shuffled, 6, seed=42) == first


def test_ties_break_by_the_seed() -> None:
    cands = tied_candidates()
    orders = {tuple(s.key for s in select(cands, len(cands), seed=seed, coverage_share=0.0).picked)
              for seed in (42, 7, 1234)}
    assert len(orders) > 1, "another seed must give another order where candidates tie"
    for a, b in itertools.combinations(orders, 2):
        assert sorted(a) == sorted(b)  # same set, different order
