"""Answer contracts: property tests over random gold answers of every analysis type."""
from __future__ import annotations

import copy
import json
import re
import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dibench.core.contracts import (
    ANALYSIS_TYPES, AnswerContract, ContractError, check_answer, fact_found, make_contract, name_key,
)
from dibench.core.facts import renderings, stated, strays

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

roundings = st.integers(min_value=0, max_value=4)
names = st.text(alphabet=string.ascii_letters + string.digits + " _-", min_size=1, max_size=12).filter(
    lambda s: s.strip() != "")


def number(rounding: int, nullable: bool = False) -> st.SearchStrategy[float | None]:
    value = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda x: round(x, rounding))
    return st.one_of(st.none(), value) if nullable else value


def groups(min_size: int = 1) -> st.SearchStrategy[list[str]]:
    return st.lists(names, min_size=min_size, max_size=8, unique_by=name_key)


@st.composite
def knowledge_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    words = draw(st.lists(st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=8), min_size=1, max_size=4))
    numbers = draw(st.lists(st.integers(min_value=0, max_value=100_000).map(str), max_size=3))
    facts = words + numbers
    filler = draw(st.lists(st.sampled_from(["the", "rule", "says", "that", "is", "per"]), max_size=5))
    return {"text": " ".join(filler + facts + filler), "must_include": facts}


@st.composite
def trend_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    year, month = draw(st.integers(2000, 2030)), draw(st.integers(1, 12))
    return {"direction": draw(st.sampled_from(["increasing", "decreasing", "flat"])),
            "total_change_pct": draw(number(rounding)), "peak_period": f"{year:04d}-{month:02d}"}


@st.composite
def comparison_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    a, b = draw(groups(min_size=2))[:2]
    return {"group_a": a, "group_b": b, "value_a": draw(number(rounding, True)),
            "value_b": draw(number(rounding, True)), "higher": draw(st.sampled_from([a, b, "equal"]))}


@st.composite
def ranking_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    gs = draw(groups())
    values = sorted((draw(st.floats(-1e6, 1e6).map(lambda x: round(x, rounding))) for _ in gs), reverse=True)
    return {"k": len(gs), "rows": [{"group": g, "value": v} for g, v in zip(gs, values)]}


@st.composite
def significance_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    p = round(draw(st.floats(min_value=0, max_value=1)), 4)
    return {"significant": p < 0.05, "p_value": p, "t_statistic": -2.5, "test_name": "Welch's t-test (two-tailed)",
            "alpha": 0.05}


@st.composite
def threshold_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    return {"value": draw(number(rounding, True)), "threshold": draw(number(rounding)),
            "result": draw(st.sampled_from(["PASS", "FAIL"]))}


@st.composite
def counterfactual_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    return {"rows": [{"group": g, "current": draw(number(rounding, True)),
                      "hypothetical": draw(number(rounding, True))} for g in draw(groups())]}


@st.composite
def decomposition_gold(draw: st.DrawFn, rounding: int) -> dict[str, Any]:
    return {"rows": [{"group": g, "value": draw(number(rounding, True))} for g in draw(groups())]}


GOLD: dict[str, Callable[[int], st.SearchStrategy[dict[str, Any]]]] = {
    "knowledge_retrieval": knowledge_gold,
    "point_query": lambda r: st.fixed_dictionaries({"value": number(r, True)}),
    "trend_analysis": trend_gold,
    "comparison": comparison_gold,
    "ranking": ranking_gold,
    "significance_testing": significance_gold,
    "threshold_crossing": threshold_gold,
    "counterfactual": counterfactual_gold,
    "decomposition": decomposition_gold,
}
ROW_TYPES = ("ranking", "counterfactual", "decomposition")


@st.composite
def task_gold(draw: st.DrawFn, types: tuple[str, ...] = ANALYSIS_TYPES) -> tuple[AnswerContract, dict[str, Any]]:
    """(contract, gold) for a random analysis type; the contract goes through its JSON form."""
    analysis_type, rounding = draw(st.sampled_from(types)), draw(roundings)
    gold = draw(GOLD[analysis_type](rounding))
    stored = json.loads(json.dumps(make_contract(analysis_type, gold, rounding)))
    return AnswerContract.model_validate(stored), gold


def numeric_slots(contract: AnswerContract, gold: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Paths to every non-null numeric value: (field,) or (rows, index, column)."""
    slots: list[tuple[Any, ...]] = [(f,) for f in contract.numbers if gold[f] is not None]
    if contract.rows:
        slots += [(contract.rows.field, i, c) for i, row in enumerate(gold[contract.rows.field])
                  for c in contract.rows.numbers if row[c] is not None]
    return slots


def tolerance_at(contract: AnswerContract, slot: tuple[Any, ...], expected: float) -> tuple[float, bool]:
    tol = contract.numbers[slot[0]] if len(slot) == 1 else contract.rows.numbers[slot[2]]  # type: ignore[union-attr]
    return tol.allowed(expected), tol.decisive


def get_at(obj: dict[str, Any], slot: tuple[Any, ...]) -> Any:
    return obj[slot[0]] if len(slot) == 1 else obj[slot[0]][slot[1]][slot[2]]


def set_at(obj: dict[str, Any], slot: tuple[Any, ...], value: Any) -> None:
    if len(slot) == 1:
        obj[slot[0]] = value
    else:
        obj[slot[0]][slot[1]][slot[2]] = value


# ------------------------------------------------------------------------------ properties
@SETTINGS
@given(task_gold())
def test_gold_answer_always_passes(case: tuple[AnswerContract, dict[str, Any]]) -> None:
    contract, gold = case
    check = check_answer(contract, gold, copy.deepcopy(gold))
    assert check.passed, check.reason
    assert check.reason == "match"


@SETTINGS
@given(task_gold(), st.data())
def test_numeric_perturbation_beyond_tolerance_fails(case: tuple[AnswerContract, dict[str, Any]],
                                                    data: st.DataObject) -> None:
    contract, gold = case
    slots = numeric_slots(contract, gold)
    assume(slots)
    slot = data.draw(st.sampled_from(slots))
    expected = get_at(gold, slot)
    allowed, decisive = tolerance_at(contract, slot, expected)
    factor = data.draw(st.floats(min_value=1.01, max_value=100)) * data.draw(st.sampled_from([-1, 1]))
    answer = copy.deepcopy(gold)
    set_at(answer, slot, expected + factor * allowed)
    check = check_answer(contract, gold, answer)
    assert not check.malformed
    if decisive:
        assert not check.passed, (slot, expected, answer)
        assert str(slot[-1]) in check.reason
    else:  # the p-value is noted, the significance label decides
        assert check.passed
        assert "not decisive" in check.reason


@SETTINGS
@given(task_gold(), st.data())
def test_numeric_perturbation_within_half_tolerance_passes(case: tuple[AnswerContract, dict[str, Any]],
                                                          data: st.DataObject) -> None:
    contract, gold = case
    slots = numeric_slots(contract, gold)
    assume(slots)
    answer = copy.deepcopy(gold)
    for slot in slots:
        expected = get_at(gold, slot)
        allowed, _ = tolerance_at(contract, slot, expected)
        set_at(answer, slot, expected + data.draw(st.floats(min_value=-0.5, max_value=0.5)) * allowed)
    check = check_answer(contract, gold, answer)
    assert check.passed, check.reason
    assert check.reason == "match"


@SETTINGS
@given(task_gold(ROW_TYPES), st.data())
def test_row_order_matters_only_for_ranking(case: tuple[AnswerContract, dict[str, Any]],
                                            data: st.DataObject) -> None:
    contract, gold = case
    rows = gold["rows"]
    shuffled = data.draw(st.permutations(rows))
    answer = {**gold, "rows": copy.deepcopy(shuffled)}
    check = check_answer(contract, gold, answer)
    # A ranking may reorder only rows tied on value (the gold order among ties is arbitrary).
    same_values = [r["value"] for r in shuffled] == [r["value"] for r in rows] if "value" in rows[0] else True
    if contract.analysis_type == "ranking" and not same_values:
        assert not check.passed
        assert "order" in check.reason
    else:
        assert check.passed, check.reason


@SETTINGS
@given(task_gold(ROW_TYPES), st.data())
def test_missing_row_fails(case: tuple[AnswerContract, dict[str, Any]], data: st.DataObject) -> None:
    contract, gold = case
    dropped = data.draw(st.integers(min_value=0, max_value=len(gold["rows"]) - 1))
    answer = copy.deepcopy(gold)
    name = answer["rows"].pop(dropped)["group"]
    check = check_answer(contract, gold, answer)
    assert not check.passed
    assert not check.malformed
    assert f"missing row(s) {name!r}" in check.reason


@SETTINGS
@given(task_gold(ROW_TYPES))
def test_extra_row_fails(case: tuple[AnswerContract, dict[str, Any]]) -> None:
    contract, gold = case
    answer = copy.deepcopy(gold)
    extra = dict(answer["rows"][-1], group="zz-not-a-gold-group")
    answer["rows"].append(extra)
    check = check_answer(contract, gold, answer)
    assert not check.passed
    assert "extra row(s) 'zz-not-a-gold-group'" in check.reason


@SETTINGS
@given(task_gold(("trend_analysis", "comparison", "significance_testing", "threshold_crossing")), st.data())
def test_label_mismatch_fails(case: tuple[AnswerContract, dict[str, Any]], data: st.DataObject) -> None:
    contract, gold = case
    name = data.draw(st.sampled_from(sorted(contract.labels)))
    label = contract.labels[name]
    if label.kind == "bool":
        other: Any = not gold[name]
    elif label.choices:
        other = data.draw(st.sampled_from([c for c in label.choices if c != gold[name]]))
    else:
        other = gold[name] + "x"
    answer = {**gold, name: other}
    check = check_answer(contract, gold, answer)
    assert not check.passed
    assert check.reason.startswith(f"{name}: expected") or f"; {name}: expected" in check.reason


@SETTINGS
@given(task_gold(), st.data())
def test_missing_field_is_malformed(case: tuple[AnswerContract, dict[str, Any]], data: st.DataObject) -> None:
    contract, gold = case
    scored = sorted(set(contract.labels) | set(contract.numbers)
                    | ({contract.rows.field} if contract.rows else set())
                    | ({contract.knowledge.text_field} if contract.knowledge else set()))
    name = data.draw(st.sampled_from(scored))
    answer = {k: v for k, v in gold.items() if k != name}
    check = check_answer(contract, gold, answer)
    assert check.malformed
    assert check.reason == f"malformed: missing field {name!r}"


@SETTINGS
@given(task_gold(), st.sampled_from([None, [], "42", 42, True]))
def test_non_object_answer_is_malformed(case: tuple[AnswerContract, dict[str, Any]], answer: Any) -> None:
    contract, gold = case
    check = check_answer(contract, gold, answer)
    assert check.malformed
    assert check.reason.startswith("malformed: answer is ")


# ------------------------------------------------------------------------------ examples
def contract_for(analysis_type: str, gold: dict[str, Any], rounding: int = 2) -> AnswerContract:
    return AnswerContract.model_validate(make_contract(analysis_type, gold, rounding))


@pytest.mark.parametrize(("answer", "reason"), [
    ({"value": "12.5"}, "malformed: value is a string, expected a number or null"),
    ({"value": True}, "malformed: value is a boolean, expected a number or null"),
    ({"value": float("nan")}, "malformed: value is not a finite number"),
    ({"value": None}, "value: expected 12.5, got null"),
    ({"value": 12.51}, "value: expected 12.5, got 12.51 (tolerance 0.005)"),
])
def test_point_query_reasons(answer: dict[str, Any], reason: str) -> None:
    gold = {"value": 12.5}
    assert check_answer(contract_for("point_query", gold), gold, answer).reason == reason


def test_suppressed_value_must_stay_null() -> None:
    gold = {"rows": [{"group": "SP", "value": 80.08}, {"group": "AC", "value": None}]}
    contract = contract_for("decomposition", gold)
    ok = {"rows": [{"group": "ac", "value": None}, {"group": " SP ", "value": 80.081}]}
    assert check_answer(contract, gold, ok).passed
    leaked = {"rows": [{"group": "SP", "value": 80.08}, {"group": "AC", "value": 3.0}]}
    assert check_answer(contract, gold, leaked).reason == "'AC'.value: expected null, got 3.0"


def test_rows_malformed_and_duplicate_groups() -> None:
    gold = {"rows": [{"group": "a", "value": 1.0}, {"group": "b", "value": 2.0}]}
    contract = contract_for("decomposition", gold)
    dup = {"rows": [{"group": "a", "value": 1.0}, {"group": "A", "value": 2.0}]}
    assert check_answer(contract, gold, dup).reason == "malformed: rows [1] repeats group 'A'"
    no_value = {"rows": [{"group": "a"}]}
    assert check_answer(contract, gold, no_value).reason == "malformed: rows [0] lacks 'value'"
    numeric_key = {"rows": [{"group": 1, "value": 1.0}]}
    assert check_answer(contract, gold, numeric_key).reason == "malformed: rows [0].group is a number, expected a string"


def test_ranking_ties_may_come_in_any_order() -> None:
    gold = {"k": 3, "rows": [{"group": "a", "value": 5.0}, {"group": "b", "value": 5.0}, {"group": "c", "value": 1.0}]}
    contract = contract_for("ranking", gold)
    tie_swapped = {"rows": [{"group": "b", "value": 5.0}, {"group": "a", "value": 5.0}, {"group": "c", "value": 1.0}]}
    assert check_answer(contract, gold, tie_swapped).passed
    wrong = {"rows": [{"group": "c", "value": 1.0}, {"group": "a", "value": 5.0}, {"group": "b", "value": 5.0}]}
    assert check_answer(contract, gold, wrong).reason.startswith("order: expected ['a', 'b', 'c']")


def test_names_match_whatever_joins_their_words() -> None:
    # a question writes the code "in_person" as "in person": an answer may write either
    gold = {"group_a": "in_person", "group_b": "self_pay", "value_a": 1.0, "value_b": 2.0, "higher": "self_pay"}
    contract = contract_for("comparison", gold)
    spelled = {**gold, "group_a": "In-person", "group_b": "self pay", "higher": "Self Pay"}
    assert check_answer(contract, gold, spelled).passed
    rows = {"rows": [{"group": "in_person", "value": 1.0}, {"group": "PG-13", "value": 2.0}]}
    answer = {"rows": [{"group": "in person", "value": 1.0}, {"group": "pg 13", "value": 2.0}]}
    assert check_answer(contract_for("decomposition", rows), rows, answer).passed
    assert not check_answer(contract_for("decomposition", rows), rows, {"rows": [
        {"group": "inperson", "value": 1.0}, {"group": "PG-13", "value": 2.0}]}).passed


def test_closed_vocabulary_labels() -> None:
    gold = {"direction": "increasing", "total_change_pct": 32.1, "peak_period": "2018-01"}
    contract = contract_for("trend_analysis", gold)
    assert check_answer(contract, gold, {**gold, "direction": " Increasing"}).passed
    check = check_answer(contract, gold, {**gold, "direction": "up"})
    assert check.reason == "malformed: direction is 'up', expected one of increasing, decreasing, flat"


def test_significance_scores_the_figures_with_the_verdict() -> None:
    gold = {"significant": True, "p_value": 0.0123, "t_statistic": 2.871, "test_name": "Welch's t-test (two-tailed)",
            "alpha": 0.05}
    contract = contract_for("significance_testing", gold, 4)
    right = {"significant": True, "p_value": 0.0127, "t_statistic": 2.874}
    assert check_answer(contract, gold, right).reason == "match"
    off = check_answer(contract, gold, {**right, "p_value": 0.03})
    assert not off.passed
    assert "p_value: expected 0.0123, got 0.03" in off.reason
    assert not check_answer(contract, gold, {**right, "t_statistic": -2.871}).passed  # the direction counts
    assert check_answer(contract, gold, {**right, "significant": False}).reason == (
        "significant: expected True, got False")
    assert check_answer(contract, gold, {**right, "significant": "yes"}).malformed
    assert check_answer(contract, gold, {"significant": True, "p_value": 0.0123}).malformed  # no statistic


def test_p_value_tolerance_is_relative_or_absolute_whichever_larger() -> None:
    contract = contract_for("significance_testing", {"significant": False, "p_value": 0.5, "t_statistic": 0.2}, 4)
    assert contract.numbers["p_value"].allowed(0.5) == pytest.approx(5e-4)
    assert contract.numbers["p_value"].allowed(0.9) == pytest.approx(9e-4)
    assert contract.numbers["p_value"].allowed(0.001) == pytest.approx(5e-4)


@pytest.mark.parametrize(("fact", "text", "found"), [
    ("30 days", "Tickets older than 30  DAYS are closed", True),
    ("30", "a grace period of 30.0 days", True),
    ("1,000", "at least 1000 orders", True),
    ("80%", "the share is 80 percent", True),
    ("80", "in 1800 the share", False),
    ("4.5", "rated 4.50 stars", True),
    ("4.5", "rated 4.55 stars", False),
    ("-5", "a change of -5%", True),
    ("neutral", "3-star reviews are Neutral", True),
])
def test_knowledge_facts(fact: str, text: str, found: bool) -> None:
    assert fact_found(fact, text) is found


def test_knowledge_answer_reports_missing_facts() -> None:
    gold = {"text": "Neutral 3-star reviews are excluded for 30 days.", "must_include": ["3-star", "30 days"]}
    contract = contract_for("knowledge_retrieval", gold)
    assert check_answer(contract, gold, {"text": "3-STAR reviews are excluded"}).reason == "missing fact(s) '30 days'"
    assert check_answer(contract, gold, {"text": 3}).reason == "malformed: text is a number, expected a string"


@pytest.mark.parametrize(("analysis_type", "gold", "message"), [
    ("pie_chart", {}, "unknown analysis type 'pie_chart'"),
    ("point_query", {"value": 1.0, "unit": "%"}, "field(s) unit are neither scored nor ignored"),
    ("point_query", {}, "missing field 'value'"),
    ("knowledge_retrieval", {"text": "some text", "must_include": []}, "must_include must be a non-empty list"),
    ("threshold_crossing", {"value": 1.0, "threshold": 2.0, "result": "MAYBE"}, "result is 'MAYBE'"),
])
def test_make_contract_rejects_bad_gold(analysis_type: str, gold: dict[str, Any], message: str) -> None:
    with pytest.raises(ContractError, match=re.escape(message)):
        make_contract(analysis_type, gold, 2)


def test_contract_json_round_trip_and_tolerance() -> None:
    stored = make_contract("comparison", {"group_a": "SP", "group_b": "RJ", "value_a": 1.0, "value_b": None,
                                          "higher": "SP"}, 1)
    assert json.loads(json.dumps(stored)) == stored
    contract = AnswerContract.model_validate(stored)
    assert contract.numbers["value_a"].abs_tol == pytest.approx(0.05, abs=1e-8)
    assert contract.numbers["value_a"].abs_tol > 0.05
    with pytest.raises(ValueError, match="extra"):
        AnswerContract.model_validate({**stored, "surprise": 1})


@pytest.mark.parametrize(("fact", "text", "found"), [
    ("3", "neutral reviews of three stars are left out", True),
    ("10%", "freight is divided by 1.1, i.e. net of 0.1 of it", True),
    ("10%", "a ten percent surcharge", True),
    ("0.1", "weighted at 10 per cent", True),
    ("25", "after twenty-five days", True),
    ("205", "two hundred and five orders", True),
    ("2024-06-01", "from 1 June 2024 on", True),
    ("2024-06-01", "from June 1st, 2024", True),
    ("2024-06-01", "from 1 July 2024", False),
    ("B", "loans of status B or D", True),
    ("B", "Both kinds of loans", False),
    ("enterprise", "two enterprises", True),
    ("3", "rated 13 or 30", False),
])
def test_facts_match_in_any_rendering(fact: str, text: str, found: bool) -> None:
    assert fact_found(fact, text) is found


def test_a_list_of_every_number_is_not_an_answer() -> None:
    sources = ["Policy RULE-X: ratings of 3 stars are excluded; version 2; effective 2023-01-01.",
               "Metric CSAT: share of 4-5 star ratings, in percent, 2 decimals."]
    gold = {"text": "Ratings of 3 stars are excluded.", "must_include": ["3"],
            "sources_state": renderings([v for s in sources for v in stated(s)])}
    contract = contract_for("knowledge_retrieval", gold)
    assert check_answer(contract, gold, {"text": "Three-star ratings are excluded since 1 January 2023 (v2)."}).passed
    # numbers beside the fact that neither the facts nor the reference text state compete with it
    listed = check_answer(contract, gold, {"text": "Ratings of 3 are out, from 2023; see also 17 and 99."})
    assert not listed.passed
    assert "states 3 numbers or dates besides the facts asked for ('2023', '17', '99')" in listed.reason
    assert check_answer(contract, gold, {"text": "Ratings of 3 are out, from 2023."}).passed
    dump = {"text": "3 17 99 30 2000 2024-06-01 45 10%"}
    check = check_answer(contract, gold, dump)
    assert not check.passed
    assert "states 7 numbers or dates its sources do not ('2024-06-01', '17', '99', ...; at most 3)" in check.reason
    assert strays("3 and 2023 and 5", gold["sources_state"]) == []  # 5 is stated by "4-5"
