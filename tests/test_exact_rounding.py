"""Gold numbers are rounded on the exact value, half away from zero, as PostgreSQL's
ROUND(numeric, d): checked on a metric whose exact value is a tie at the cent (the freight
pack's two quotes average 417.325), against PostgreSQL itself and a recomputation with Python's
Decimal; and the answer contract accepts the rounded and the exact value, not the value a
binary float rounds to."""
from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from dibench.core.answers import rnd, tie_rounding, trend_summary, trend_tie
from dibench.core.contracts import check_answer, task_contract
from dibench.core.pack import Pack, load_pack
from dibench.generation.analyses import decomposition, point_query
from dibench.generation.executor import Executor
from dibench.generation.grounding import Context, data_window
from dibench.generation.skeletons import Skeleton
from dibench.generation.tasks import ground
from dibench.ingest.database import load_database
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse

FREIGHTPACK = Path(__file__).resolve().parent / "fixtures" / "freightpack"


@pytest.fixture(scope="module")
def pack(warehouse: Warehouse) -> Pack:
    pk = load_pack(FREIGHTPACK)
    if "quotes" not in schema_columns(warehouse, pk.schema):
        load_database(pk, warehouse)
    return pk


@pytest.mark.parametrize(("value", "digits", "rounded"), [
    (Decimal("417.325"), 2, 417.33),   # a float 417.325 is 417.32499999...: round() gives 417.32
    (Decimal("-417.325"), 2, -417.33),  # away from zero, as PostgreSQL
    (Decimal("2.5"), 0, 3.0),           # not to even, as Python's round() does
    (Decimal("417.32499999999999999"), 2, 417.32),  # exactly below the tie: down
    (Decimal("-0.001"), 2, 0.0),        # NUMERIC has no negative zero
    (417.325, 2, 417.33),               # a double precision value: through its 15 digits, as ROUND(x::numeric)
    (7, 2, 7.0),
])
def test_rounding_is_half_away_from_zero_on_the_exact_value(value: object, digits: int, rounded: float) -> None:
    assert rnd(value, digits) == rounded
    assert str(rnd(value, digits)) != "-0.0"


def test_rounding_matches_postgresql_round(warehouse: Warehouse) -> None:
    cases = ["417.325", "-417.325", "0.005", "-0.005", "1.0049999999999999", "123456789.125", "2.5", "-2.5"]
    for text in cases:
        for digits in (0, 1, 2, 3):
            pg = warehouse.execute_readonly("SELECT ROUND(CAST(:v AS NUMERIC), :d)", {"v": text, "d": digits},
                                            exact=True).rows[0][0]
            assert rnd(Decimal(text), digits) == float(pg), (text, digits)


def tie_skeleton(pack: Pack) -> Skeleton:
    return Skeleton(pack.name, "FR-QUOTE-001", "orders.shipped_at", "temporal", "shipping date", 500, ("quotes",),
                    (), ())


def test_a_tie_at_the_cent_is_rounded_up_in_the_gold(pack: Pack, warehouse: Warehouse) -> None:
    metric = pack.metric_by_id["FR-QUOTE-001"]
    for grouped in (True, False):  # the grouped plan and one statement per answer alike
        ctx = Context(metric, tie_skeleton(pack), Executor(warehouse, schema=pack.schema, grouped=grouped),
                      random.Random(0), data_window(warehouse, metric, schema=pack.schema), {})
        out = point_query.build(ctx)
        assert out is not None
        # the recomputation: the two quotes as PostgreSQL stores them, averaged and rounded by Decimal
        amounts = [r[0] for r in warehouse.execute_readonly("SELECT amount FROM freight.quotes ORDER BY quote_id",
                                                            {}, exact=True).rows]
        exact = sum(amounts, Decimal(0)) / len(amounts)
        assert exact == Decimal("417.325")
        expected = float(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
        assert out.gold_answer == {"value": expected} == {"value": 417.33}
        assert round(float(exact), 2) == 417.32  # what reading the value as a float first gave


def test_the_contract_accepts_the_rounded_and_the_exact_value() -> None:
    contract = task_contract("point_query", 2)
    gold = {"value": 417.33}
    for answer in (417.33, 417.325, 417.3250001, 417.334):
        assert check_answer(contract, gold, {"value": answer}).passed, answer
    for answer in (417.32, 417.34, 417.3):
        assert not check_answer(contract, gold, {"value": answer}).passed, answer


def test_at_an_exact_tie_the_contract_accepts_half_up_and_half_even() -> None:
    assert tie_rounding(Decimal("417.325"), 2) == (417.33, 417.32)
    assert tie_rounding(Decimal("2.335"), 2) is None  # half even is half up here: 2.34 both
    assert tie_rounding(Decimal("417.3251"), 2) is None
    gold = {"value": 417.33}
    plain, tied = task_contract("point_query", 2), task_contract("point_query", 2, ties=[(417.33, 417.32)])
    assert not check_answer(plain, gold, {"value": 417.32}).passed  # no tie known: one rounding
    for answer in (417.33, 417.325, 417.32):
        assert check_answer(tied, gold, {"value": answer}).passed, answer
    assert not check_answer(tied, gold, {"value": 417.31}).passed
    rows = {"rows": [{"group": "DHL", "value": 417.33}, {"group": "UPS", "value": 10.0}]}
    decomposition_contract = task_contract("decomposition", 2, ties=[(417.33, 417.32)])
    assert check_answer(decomposition_contract, rows, {"rows": [{"group": "DHL", "value": 417.32},
                                                                 {"group": "UPS", "value": 10.0}]}).passed


def test_a_task_whose_every_window_sits_on_a_tie_is_kept_with_both_roundings(pack: Pack,
                                                                               warehouse: Warehouse) -> None:
    metric = pack.metric_by_id["FR-QUOTE-001"]
    ex = Executor(warehouse, schema=pack.schema)
    g = ground(point_query, tie_skeleton(pack), metric, ex, random.Random(0),
               data_window(warehouse, metric, schema=pack.schema), {})
    assert g is not None and g.result.gold_answer == {"value": 417.33}
    assert g.ties == [(417.33, 417.32)]


def test_float_arithmetic_a_hair_below_a_tie_does_not_mark_the_exact_answer_rule_ignored() -> None:
    """A rule's arithmetic on a float (real, double precision) column sums binary values: the
    exact 2.345 comes back 2.3449999999997 and rounds down. The agent who computes exactly gives
    2.35, which the no-rule answer also is: without the tie known, it would be `rule_ignored`."""
    from dibench.evaluation.scoring import score_task

    floated = 2.345 - 3e-13  # the sum of a thousand float products, where the decimals give 2.345
    assert rnd(floated, 2) == 2.34 and tie_rounding(floated, 2) == (2.34, 2.35)
    assert tie_rounding(2.3449, 2) is None and tie_rounding(Decimal("2.3449999999997"), 2) is None  # exact: no tie
    ties = [t for t in (tie_rounding(floated, 2),) if t]
    task = {"task_id": "t", "domain": "d", "analysis_type": "point_query", "tier": "K+A+R",
            "gold_answer": {"value": 2.34}, "base_answer": {"value": 2.35},
            "contract": task_contract("point_query", 2, ties=ties).model_dump(mode="json")}
    assert score_task(task, {"value": 2.35}).passed
    assert score_task(task, {"value": 2.34}).passed
    assert score_task(task, {"value": 2.36}).failure_class == "computation_wrong"


def test_a_tied_task_is_written_with_its_own_contract(pack: Pack) -> None:
    from dibench.core.contracts import AnswerContract
    from dibench.generation.validation import Candidate
    from dibench.generation.writeback import task_rows

    c = Candidate(key="task:freight/t", skeleton_key="s", domain=pack.name, analysis_type="point_query", tier="K+A",
                  metric_id="FR-QUOTE-001", rule_ids=[], rule_versions=[], dimension="orders.shipped_at",
                  dimension_type="temporal", question="What was the average quote in 2024?", answer_format="JSON",
                  gold_answer={"value": 417.33}, base_answer=None, gold_sql=None, base_sql=None, gold_params={},
                  base_params={}, tables=[], rounding_ties=[[417.33, 417.32]])
    stored = AnswerContract.model_validate_json(task_rows([c], pack, "run:t")[0]["props"]["contract"])
    assert check_answer(stored, {"value": 417.33}, {"value": 417.32}).passed
    c.rounding_ties = []
    assert "contract" not in task_rows([c], pack, "run:t")[0]["props"]  # no tie: made from the gold, as before


def test_decomposition_rows_are_recomputed_with_decimal(pack: Pack, warehouse: Warehouse) -> None:
    """Every row of a decomposition of freight by carrier against the test's own SQL, rounded
    with Decimal half up (no rule in force: the plain metric)."""
    metric = pack.metric_by_id["FR-TOTAL-001"]
    sk = Skeleton(pack.name, "FR-TOTAL-001", "orders.carrier", "categorical", "carrier", 3, ("orders", "customers"),
                  (), ())
    for seed in range(3):
        ctx = Context(metric, sk, Executor(warehouse, schema=pack.schema), random.Random(seed),
                      data_window(warehouse, metric, schema=pack.schema), {})
        out = decomposition.build(ctx)
        assert out is not None
        rows = warehouse.execute_readonly(
            "SELECT o.carrier, SUM(o.freight) FROM freight.orders o WHERE o.shipped_at >= :s AND o.shipped_at < :e "
            "GROUP BY o.carrier ORDER BY o.carrier", {"s": out.facts["start"], "e": out.facts["end"]}, exact=True).rows
        expected = [{"group": g, "value": float(v.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))} for g, v in rows]
        assert out.gold_answer == {"rows": expected}


def test_a_trend_change_on_a_rounding_tie_accepts_both_roundings() -> None:
    """A card share of 4/17 that rises to 25 % is up exactly 6.25 %; PostgreSQL's NUMERIC division
    writes 4/17 as 23.5294117647058824, so the change computed from it is 6.2499999...: the gold
    rounds it to 6.2 where exact arithmetic, and half away from zero, give 6.3."""
    rows = [("2024-01", Decimal("23.5294117647058824")), ("2024-02", Decimal("10.4166666666666667")),
            ("2024-03", Decimal("25.0000000000000000"))]
    summary = trend_summary(rows, 2)
    assert summary is not None
    tie = trend_tie(rows)
    assert tie is not None and tie[0] == summary["total_change_pct"] and set(tie) == {6.2, 6.3}
    contract = task_contract("trend_analysis", 2, ties=[tie])
    for pct in (6.2, 6.25, 6.3):
        assert check_answer(contract, summary, {**summary, "total_change_pct": pct}).passed, pct
    assert not check_answer(contract, summary, {**summary, "total_change_pct": 6.4}).passed
    exact_rows = [("2024-01", Decimal(20)), ("2024-02", Decimal(5)), ("2024-03", Decimal("21.25"))]
    assert trend_tie(exact_rows) == (6.3, 6.2)  # an exact tie: half up, and half even passes too
    assert trend_tie([("2024-01", Decimal(20)), ("2024-02", Decimal(5)), ("2024-03", Decimal(21))]) is None
    # a month without rows counts 0 for a sum: the tie is found on the calendar too
    assert trend_tie([("2024-01", Decimal(20)), ("2024-03", Decimal("21.25"))],
                     ["2024-01", "2024-02", "2024-03"], 0) == (6.3, 6.2)
