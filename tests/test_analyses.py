"""The nine analysis types on the mini data, each answer checked against the test's own computation
in Python over the raw rows (exact fractions; the same rows, the rules as their documents state
them). Each analysis draws its window, groups and k from a seeded generator; the test reads what
was drawn from the outcome's facts and runs several seeds."""
from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from scipy import stats

from dibench.core.contracts import AnswerContract, check_answer, fact_found, make_contract
from dibench.core.pack import Pack, load_pack
from dibench.generation.analyses import (
    Outcome, comparison, counterfactual, decomposition, knowledge, point_query, ranking, registry, significance,
    threshold, trend,
)
from dibench.generation.document_text import sentences
from dibench.generation.executor import Executor
from dibench.generation.grounding import Context, data_window
from dibench.generation.skeletons import Skeleton
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import MINIPACK, ensure_mini_loaded
from tests.fixtures.skeletons import policy_rules, skeleton

SEEDS = range(4)
Row = dict[str, Any]
STRICT_FROM = dt.datetime(2024, 6, 1)


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def pack() -> Pack:
    return load_pack(MINIPACK)


@pytest.fixture(scope="module")
def rows(warehouse: Warehouse) -> list[Row]:
    ensure_mini_loaded(warehouse)
    out = warehouse.execute_readonly(
        "SELECT o.ordered_at, (o.amount * 100)::bigint AS cents, o.channel, o.rating, c.region, c.plan "
        "FROM mini.orders o JOIN mini.customers c ON c.customer_id = o.customer_id", {}).records()
    for r in out:
        r["amount"] = Fraction(r["cents"], 100)
    return out


def context(pack: Pack, wh: Warehouse, sk: Skeleton, seed: int, grouped: bool = True) -> Context:
    metric = pack.metric_by_id[sk.metric]
    return Context(metric, sk, Executor(wh, grouped=grouped), random.Random(seed), data_window(wh, metric),
                   {r.id: r for r in pack.rules})


def run(analysis: Any, pack: Pack, wh: Warehouse, sk: Skeleton, seed: int,
        grouped: bool = True) -> tuple[Outcome, Context]:
    """`grouped`=False: one statement per answer (the tests that count the statements of that path;
    the grouped plan's are compared with it in test_grouped_plan)."""
    assert analysis.compatible(sk), f"{analysis.NAME} is not compatible with {sk.key}"
    ctx = context(pack, wh, sk, seed, grouped)
    out = analysis.build(ctx)
    assert out is not None, f"{analysis.NAME} gave no outcome for {sk.key}, seed {seed}"
    return out, ctx


# ------------------------------------------------------------------------------ the metric in Python
def in_window(rows: list[Row], facts: dict[str, Any]) -> list[Row]:
    lo, hi = dt.datetime.fromisoformat(facts["start"]), dt.datetime.fromisoformat(facts["end"])
    return [r for r in rows if lo <= r["ordered_at"] < hi]


def metric_value(metric: str, rows: list[Row], rules: set[str]) -> Fraction | None:
    """The mini metrics, with the rules applied as the mini pack's documents state them."""
    if "MINI-R-OUTLIER" in rules and metric in ("MINI-REV-001", "MINI-AOV-001"):
        rows = [r for r in rows if not r["amount"] > 2000]
    if "MINI-R-PHONE" in rules and metric == "MINI-SAT-001":
        rows = [r for r in rows if not (r["channel"] == "phone" and r["plan"] == "basic")]
    if not rows:
        return None
    if "MINI-R-PRIVACY" in rules and metric == "MINI-SAT-001" and len(rows) < 100:
        return None
    if metric == "MINI-REV-001":
        return sum((r["amount"] for r in rows), Fraction(0))
    if metric == "MINI-AOV-001":
        return sum((r["amount"] for r in rows), Fraction(0)) / len(rows)
    if metric == "MINI-SAT-001":
        strict = "MINI-R-STRICT" in rules
        good = sum(1 for r in rows if r["rating"] >= (5 if strict and r["ordered_at"] >= STRICT_FROM else 4))
        return Fraction(100 * good, len(rows))
    raise AssertionError(metric)


def rounded(v: Fraction | None, digits: int = 2) -> float | None:
    return None if v is None else round(float(v), digits)


def by_group(rows: list[Row], key: Callable[[Row], str]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def month(r: Row) -> str:
    return r["ordered_at"].strftime("%Y-%m")


def dim_key(dimension: str) -> Callable[[Row], str]:
    col = dimension.split(".")[1]
    return lambda r: str(r[col])


def in_force(sk: Skeleton) -> set[str]:
    return {r.rule_id for r in sk.policy}


def expect_both(out: Outcome, rules: set[str], expected: Callable[[set[str]], Any]) -> None:
    """Gold = the computation under the metric's whole policy; base = without any rule."""
    assert out.gold_answer == expected(rules)
    assert out.base_answer == expected(set())


# ------------------------------------------------------------------------------ the nine types
def test_registry_has_the_nine_types_in_a_fixed_order() -> None:
    assert [a.NAME for a in registry()] == [
        "knowledge_retrieval", "point_query", "trend_analysis", "comparison", "ranking", "significance_testing",
        "threshold_crossing", "counterfactual", "decomposition"]


@pytest.mark.parametrize("seed", SEEDS)
def test_point_query(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"])
    out, _ = run(point_query, pack, warehouse, sk, seed)
    g = out.facts["group"]
    assert g == "basic", "a conditional rule's own value is the slice (else the rule cannot matter)"
    sliced = [r for r in in_window(rows, out.facts) if r["plan"] == g]
    expect_both(out, in_force(sk), lambda rules: {"value": rounded(metric_value(sk.metric, sliced, rules))})


@pytest.mark.parametrize("seed", SEEDS)
def test_point_query_without_a_dimension_value(seed: int, pack: Pack, warehouse: Warehouse,
                                               rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-REV-001", "orders.ordered_at", ["MINI-R-OUTLIER"])
    out, _ = run(point_query, pack, warehouse, sk, seed)
    assert "group" not in out.facts
    win = in_window(rows, out.facts)
    expect_both(out, in_force(sk), lambda rules: {"value": rounded(metric_value(sk.metric, win, rules))})


def expected_trend(values: dict[str, Fraction]) -> dict[str, Any]:
    series = sorted(values.items())
    first, last = series[0][1], series[-1][1]
    change = float((last - first) / abs(first) * 100) if first else 0.0
    direction = "flat" if abs(change) < 1.0 else ("increasing" if change > 0 else "decreasing")
    peak = max(series, key=lambda p: (p[1], p[0]))[0]  # the later month wins a tie
    return {"direction": direction, "total_change_pct": round(change, 1), "peak_period": peak}


@pytest.mark.parametrize("seed", SEEDS)
def test_trend_is_one_group_by_over_the_months(seed: int, pack: Pack, warehouse: Warehouse,
                                               rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "orders.ordered_at", ["MINI-R-STRICT"])
    out, ctx = run(trend, pack, warehouse, sk, seed, grouped=False)
    win = in_window(rows, out.facts)
    months = by_group(win, month)
    assert out.facts["periods"] == len(months) >= 3

    def expected(rules: set[str]) -> dict[str, Any]:
        vals = {m: metric_value(sk.metric, rs, rules) for m, rs in months.items()}
        return expected_trend({m: v for m, v in vals.items() if v is not None})

    expect_both(out, in_force(sk), expected)
    # one statement with the rule and one without: a GROUP BY over the periods, not one per month
    assert ctx.ex.statements == 2
    assert out.gold_sql is not None and "GROUP BY" in out.gold_sql.upper()


def test_trend_without_rule_runs_exactly_one_statement(pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-AOV-001", "orders.ordered_at", policy=())
    out, ctx = run(trend, pack, warehouse, sk, 3, grouped=False)
    assert ctx.ex.statements == 1
    months = by_group(in_window(rows, out.facts), month)
    values = {m: metric_value(sk.metric, rs, set()) for m, rs in months.items()}
    assert out.gold_answer == expected_trend({m: v for m, v in values.items() if v is not None})
    assert out.gold_answer == out.base_answer


@pytest.mark.parametrize("seed", SEEDS)
def test_comparison(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-REV-001", "customers.region", ["MINI-R-OUTLIER"])
    out, _ = run(comparison, pack, warehouse, sk, seed)
    a, b = out.facts["group_a"], out.facts["group_b"]
    assert a != b
    groups = by_group(in_window(rows, out.facts), dim_key(sk.dimension))

    def expected(rules: set[str]) -> dict[str, Any]:
        va, vb = (rounded(metric_value(sk.metric, groups.get(g, []), rules)) for g in (a, b))
        assert va is not None and vb is not None  # both groups drawn from those with data
        higher = "equal" if va == vb else (a if va > vb else b)
        return {"group_a": a, "group_b": b, "value_a": va, "value_b": vb, "higher": higher}

    expect_both(out, in_force(sk), expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_ranking(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-REV-001", "customers.region", ["MINI-R-OUTLIER"])
    out, _ = run(ranking, pack, warehouse, sk, seed)
    k = out.facts["k"]
    assert out.facts["higher_is_better"] is True
    groups = by_group(in_window(rows, out.facts), dim_key(sk.dimension))

    def expected(rules: set[str]) -> dict[str, Any]:
        vals = [(g, rounded(metric_value(sk.metric, rs, rules))) for g, rs in groups.items()]
        ordered = sorted(((g, v) for g, v in vals if v is not None), key=lambda p: (-p[1], p[0]))
        return {"k": k, "rows": [{"group": g, "value": v} for g, v in ordered[:k]]}

    expect_both(out, in_force(sk), expected)
    assert 1 <= k < len(groups)


@pytest.mark.parametrize("seed", SEEDS)
def test_significance_is_welch_on_the_monthly_values(seed: int, pack: Pack, warehouse: Warehouse,
                                                    rows: list[Row]) -> None:
    # The privacy rule would suppress most monthly groups: the test keeps a policy that leaves them.
    sk = skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"], policy=["MINI-R-PHONE", "MINI-R-STRICT"])
    out, ctx = run(significance, pack, warehouse, sk, seed, grouped=False)
    a, b = out.facts["group_a"], out.facts["group_b"]
    win = in_window(rows, out.facts)

    def expected(rules: set[str]) -> dict[str, Any]:
        def monthly(g: str) -> list[float]:
            months = by_group([r for r in win if r["plan"] == g], month)
            vals = (metric_value(sk.metric, rs, rules) for _, rs in sorted(months.items()))
            return [float(v) for v in vals if v is not None]
        res = stats.ttest_ind(monthly(a), monthly(b), equal_var=False)
        p = float(res.pvalue)
        return {"significant": p < 0.05, "p_value": round(p, 4), "t_statistic": round(float(res.statistic), 3),
                "test_name": "Welch's t-test (two-tailed)", "alpha": 0.05}

    expect_both(out, in_force(sk), expected)
    # the monthly values come from one GROUP BY (group, month) per variant, after the value lookup
    assert ctx.ex.statements == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_threshold_crossing(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-REV-001", "customers.region", ["MINI-R-OUTLIER"])
    out, _ = run(threshold, pack, warehouse, sk, seed)
    assert out.facts["threshold"] == 50000.0  # the metric's business target
    sliced = [r for r in in_window(rows, out.facts) if r["region"] == out.facts["group"]]

    def expected(rules: set[str]) -> dict[str, Any]:
        v = rounded(metric_value(sk.metric, sliced, rules))
        return {"value": v, "threshold": 50000.0, "result": "PASS" if v is not None and v >= 50000 else "FAIL"}

    expect_both(out, in_force(sk), expected)


def test_threshold_without_target_lies_between_the_answers(pack: Pack, warehouse: Warehouse,
                                                          rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-AOV-001", "customers.region", ["MINI-R-OUTLIER"])
    out, _ = run(threshold, pack, warehouse, sk, 0)
    g, b = out.gold_answer["value"], out.base_answer["value"]
    assert min(g, b) < out.facts["threshold"] < max(g, b)  # the verdict tells gold from no-rule
    assert out.facts["threshold"] == threshold.roundest_between(g, b)  # a round business number
    sliced = [r for r in in_window(rows, out.facts) if r["region"] == out.facts["group"]]
    assert g == rounded(metric_value(sk.metric, sliced, in_force(sk)))


@pytest.mark.parametrize("seed", SEEDS)
def test_counterfactual_by_group(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"])
    out, _ = run(counterfactual, pack, warehouse, sk, seed)
    groups = by_group(in_window(rows, out.facts), dim_key(sk.dimension))
    # current: the whole policy; hypothetical: the policy with only the featured rule lifted
    cur = {g: rounded(metric_value(sk.metric, rs, in_force(sk))) for g, rs in groups.items()}
    hyp = {g: rounded(metric_value(sk.metric, rs, in_force(sk) - {"MINI-R-PHONE"})) for g, rs in groups.items()}
    none = {g: rounded(metric_value(sk.metric, rs, set())) for g, rs in groups.items()}

    def rows_of(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"group": g, "current": a[g], "hypothetical": b[g]} for g in sorted(groups)
                if a[g] is not None or b[g] is not None]

    assert out.gold_answer == {"rows": rows_of(cur, hyp)}
    assert out.base_answer == {"rows": rows_of(none, none)}
    assert out.facts["rules"] == ["MINI-R-PHONE"]


@pytest.mark.parametrize("seed", SEEDS)
def test_counterfactual_by_month(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "orders.ordered_at", ["MINI-R-STRICT"])
    out, _ = run(counterfactual, pack, warehouse, sk, seed)
    assert out.facts["by_month"] is True
    months = by_group(in_window(rows, out.facts), month)
    assert len(months) == 6
    want = [{"group": m, "current": rounded(metric_value(sk.metric, rs, in_force(sk))),
             "hypothetical": rounded(metric_value(sk.metric, rs, in_force(sk) - {"MINI-R-STRICT"}))}
            for m, rs in sorted(months.items())]
    assert out.gold_answer == {"rows": want}


@pytest.mark.parametrize("seed", SEEDS)
def test_decomposition_with_a_privacy_rule(seed: int, pack: Pack, warehouse: Warehouse, rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "customers.region", ["MINI-R-PRIVACY"])
    out, _ = run(decomposition, pack, warehouse, sk, seed)
    groups = by_group(in_window(rows, out.facts), dim_key(sk.dimension))

    def expected(rules: set[str]) -> dict[str, Any]:
        # a group the privacy rule suppresses is listed with no value
        vals = {g: rounded(metric_value(sk.metric, rs, rules)) for g, rs in groups.items()}
        return {"rows": [{"group": g, "value": v} for g, v in sorted(vals.items())]}

    expect_both(out, in_force(sk), expected)
    assert len(out.base_answer["rows"]) == len(groups)


def test_a_small_group_is_suppressed_in_the_decomposition(pack: Pack, warehouse: Warehouse,
                                                          rows: list[Row]) -> None:
    sk = skeleton(pack, "MINI-SAT-001", "customers.region", ["MINI-R-PRIVACY"])
    outs = [run(decomposition, pack, warehouse, sk, s)[0] for s in SEEDS]
    # the suppressed group is listed with no value: an agent listing every group is not wrong
    assert any({r["group"] for r in o.gold_answer["rows"] if r["value"] is None} == {"islands"}
               and {r["group"] for r in o.base_answer["rows"]} == {r["group"] for r in o.gold_answer["rows"]}
               for o in outs)


def test_a_breakdown_the_policy_withholds_whole_is_not_asked(pack: Pack, warehouse: Warehouse) -> None:
    # library fines by branch in a quarter: every branch under the privacy rule's minimum, a gold of
    # nulls alone, which a constant answer passes
    import dataclasses
    import json

    sk = skeleton(pack, "MINI-SAT-001", "customers.region", ["MINI-R-PRIVACY"])
    [ref] = sk.rules
    effects = json.loads(ref.op)
    for e in effects if isinstance(effects, list) else [effects]:
        e["min_n"] = 10 ** 9
    whole = dataclasses.replace(ref, op=json.dumps(effects))
    sk = dataclasses.replace(sk, rules=(whole,), policy=tuple(whole if r.rule_id == ref.rule_id else r
                                                                  for r in sk.policy))
    for seed in SEEDS:
        ctx = context(pack, warehouse, sk, seed)
        assert decomposition.build(ctx) is None
        assert counterfactual.build(context(pack, warehouse, sk, seed)) is not None  # lifted: the values return


# Each mini rule document and the one thing its knowledge task asks for, typed: the outlier cap
# (written "2,000"), the slice of the conditional rule, the minimum group size, and the date of
# effect of the temporal rule ("1 June 2024").
KNOWLEDGE = [
    ("MINI-REV-001", "MINI-R-OUTLIER", 2000),
    ("MINI-SAT-001", "MINI-R-PHONE", "phone"),
    ("MINI-SAT-001", "MINI-R-PRIVACY", 100),
    ("MINI-SAT-001", "MINI-R-STRICT", "2024-06-01"),
]


@pytest.mark.parametrize(("metric", "rule_id", "value"), KNOWLEDGE, ids=[k[1] for k in KNOWLEDGE])
def test_knowledge_retrieval_asks_one_typed_thing(metric: str, rule_id: str, value: Any, pack: Pack,
                                                  warehouse: Warehouse) -> None:
    # the rule alone in force: with others, a fact of another rule may be asked in its place when
    # a lazy reader finds every fact of this one (generation.analyses.knowledge.build)
    sk = skeleton(pack, metric, "customers.region", [rule_id], policy=[rule_id])
    out, ctx = run(knowledge, pack, warehouse, sk, 0)
    doc = pack.rule(rule_id)
    assert out.facts["rule"] == rule_id and out.gold_answer["value"] == value
    assert out.gold_sql is None and ctx.ex.statements == 0  # answered from the document, no SQL
    text = out.gold_answer["text"]
    # the reference is the document's own sentences, whole, stating what is asked
    own = sentences(doc.body)
    picked = [x for x in own if x in text]
    assert " ".join(picked) == text and 0 < len(picked) <= 2
    assert fact_found(str(value), text)
    # the oracle's answer (the typed value) passes; the reference text alone does not
    contract = AnswerContract.model_validate(make_contract("knowledge_retrieval", out.gold_answer, 2))
    typed = {k: v for k, v in out.gold_answer.items() if k in ("value", "unit")}
    assert check_answer(contract, out.gold_answer, typed).passed
    assert not check_answer(contract, out.gold_answer, {"value": text}).passed


@pytest.mark.parametrize(("dimension", "types"), [
    ("orders.ordered_at", {"point_query", "trend_analysis", "threshold_crossing"}),
    ("customers.plan", {"point_query", "comparison", "ranking", "significance_testing", "threshold_crossing",
                        "decomposition"}),
])
def test_compatibility_follows_the_dimension_type(dimension: str, types: set[str], pack: Pack) -> None:
    plain = skeleton(pack, "MINI-REV-001", dimension)
    assert {a.NAME for a in registry() if a.compatible(plain)} == types
    ruled = skeleton(pack, "MINI-REV-001", dimension, ["MINI-R-OUTLIER"])
    assert {a.NAME for a in registry() if a.compatible(ruled)} == types | {"knowledge_retrieval", "counterfactual"}


def test_a_filtered_count_or_sum_is_additive_on_the_calendar() -> None:
    """The clinic's consultation revenue, `SUM(a.fee) FILTER (WHERE a.status = 'attended')`, is a
    sum: a month without rows is 0, as the answer format says, not a month left out."""
    from dibench.generation.analyses.trend import additive

    assert additive("SELECT SUM(a.fee) FILTER (WHERE a.status = 'attended') AS value FROM t a")
    assert additive("SELECT COUNT(*) FILTER (WHERE a.status = 'attended') AS value FROM t a")
    assert additive("SELECT COALESCE(SUM(a.fee) FILTER (WHERE a.ok), 0) AS value FROM t a")
    assert not additive("SELECT AVG(a.wait) FILTER (WHERE a.ok) AS value FROM t a")
    assert not additive("SELECT 100.0 * COUNT(*) FILTER (WHERE a.ok) / NULLIF(COUNT(*), 0) AS value FROM t a")
