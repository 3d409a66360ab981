"""Typed knowledge answers (pure, no services, under a second): one thing asked, of one kind,
scored exactly; a dump, a list of every number, or a second candidate fails; the typed shortcut
family tries the cheap guesses a typed answer opens; the questions and gold come from the real
packs' rule documents."""
from __future__ import annotations

import random
from typing import Any

import pytest

from dibench.core.contracts import AnswerContract, check_answer, make_contract, task_contract
from dibench.core.pack import load_pack
from dibench.core.typed_answers import kind_of, unit_in, unit_key
from dibench.generation.fidelity import cut_reference_problem, wording_problem
from dibench.generation.analyses.knowledge import candidates, stated_in, topic, typed_gold
from dibench.generation.questions import answer_format, knowledge_question
from dibench.generation.shortcuts import AuditTask, Corpus, passes, registry
from dibench.generation.shortcuts.dumps import RENDERINGS


def contract(gold: dict[str, Any]) -> AnswerContract:
    return AnswerContract.model_validate(make_contract("knowledge_retrieval", gold, 2))


def verdict(gold: dict[str, Any], answer: Any) -> bool:
    return check_answer(contract(gold), gold, answer).passed


DAYS = {"value": 60, "unit": "day", "text": "A ticket resolved more than 60 days after it was created is dormant."}


@pytest.mark.parametrize(("answer", "ok"), [
    ({"value": 60, "unit": "days"}, True),
    ({"value": 60.0, "unit": "Days"}, True),
    ({"value": 1440, "unit": "hours"}, True),  # the same duration
    ({"value": 60, "unit": "hours"}, False),
    ({"value": 60}, False),  # a unit of measurement is part of the answer
    ({"value": 61, "unit": "days"}, False),
    ({"value": [60, 30, 7], "unit": "days"}, False),  # every number: malformed, one is asked
    ({"value": "60 days"}, False),
    ({"text": "60 days"}, False),
])
def test_a_number_is_scored_with_its_unit(answer: dict[str, Any], ok: bool) -> None:
    assert verdict(DAYS, answer) is ok


def test_a_percentage_is_also_its_fraction_and_a_counted_noun_is_not_scored() -> None:
    pct = {"value": 35, "unit": "percent", "text": "The loss-given-default rate is 35 percent."}
    assert verdict(pct, {"value": 35, "unit": "%"}) and verdict(pct, {"value": 0.35, "unit": None})
    assert not verdict(pct, {"value": 0.35, "unit": "percent"}) and not verdict(pct, {"value": 35, "unit": "czk"})
    count = {"value": 5, "unit": None, "text": "Results for fewer than five agents are suppressed."}
    assert verdict(count, {"value": 5, "unit": "agents"}) and verdict(count, {"value": 5})
    assert not verdict(count, {"value": 4, "unit": "agents"})


def test_a_date_is_one_date_however_written() -> None:
    gold = {"value": "2024-03-01", "text": "For tickets created on or after 1 March 2024 ..."}
    assert verdict(gold, {"value": "2024-03-01"}) and verdict(gold, {"value": "1 March 2024"})
    assert not verdict(gold, {"value": "2024-07-01"})
    assert not verdict(gold, {"value": "1 March 2024 or 1 July 2024"})  # two candidates
    assert check_answer(contract(gold), gold, {"value": ["2024-03-01", "2024-07-01"]}).malformed


def test_a_name_is_one_short_name() -> None:
    gold = {"value": "goodwill", "text": "Goodwill gestures are not refunds."}
    assert verdict(gold, {"value": "Goodwill"}) and verdict(gold, {"value": "goodwill credits"})
    assert not verdict(gold, {"value": "goodwill, spam or test"})  # three candidates in one
    assert not verdict(gold, {"value": "refund"})
    assert not verdict(gold, {"value": "every goodwill refund credit test spam internal record"})  # not a name


def test_a_list_holds_every_name_asked_and_nothing_else() -> None:
    gold = {"value": ["UROK", "SLUZBY", "SANKC. UROK"], "text": "..."}
    assert verdict(gold, {"value": ["sankc. urok", "SLUZBY", "UROK"]})
    assert not verdict(gold, {"value": ["UROK", "SLUZBY"]})  # one missing
    assert not verdict(gold, {"value": ["UROK", "SLUZBY", "SANKC. UROK", "VYBER"]})  # one extra
    assert not verdict(gold, {"value": ["UROK and SLUZBY", "SANKC. UROK"]})  # two in one item
    assert check_answer(contract(gold), gold, {"value": "UROK, SLUZBY, SANKC. UROK"}).malformed


def test_kinds_units_and_the_legacy_format() -> None:
    assert [kind_of(v) for v in (3, 0.5, "2024-01-01", "spam", ["a", "b"], True, [])] == [
        "number", "number", "date", "name", "list", None, None]
    assert unit_key("Days") == "day" and unit_key("%") == "percent" and unit_key("per cent") == "percent"
    assert unit_in("more than **60 days** after", __import__("decimal").Decimal(60)) == "day"
    assert unit_in("fees above CZK 5,000 are", __import__("decimal").Decimal(5000)) == "czk"
    # stored tasks of the free-text format keep their contract
    legacy = {"text": "Tickets older than 30 days are archived.", "must_include": ["30"]}
    assert task_contract("knowledge_retrieval", 2, legacy).knowledge is not None
    assert task_contract("knowledge_retrieval", 2).fact is not None
    assert "scored exactly" in answer_format("knowledge_retrieval", 2)


DOC = ("Dormant tickets\nA **dormant ticket** is a ticket resolved more than 60 days after it was created. "
       "It is reviewed by 2 managers within 7 days. The rule applies from 1 March 2024.")


def audit_task(key: str, gold: dict[str, Any], question: str) -> AuditTask:
    return AuditTask(key=key, stem=key, analysis_type="knowledge_retrieval", tier="K", variant="standard",
                     question=question, metric_id="M1", dimension=None, gold=gold,
                     contract=task_contract("knowledge_retrieval", 2, gold))


def test_no_dump_and_no_list_of_candidates_passes_a_typed_task() -> None:
    tasks = (audit_task("k1", {**DAYS, "text": ""}, "What limit makes a ticket dormant? Give the number and unit."),
             audit_task("k2", {"value": "2024-03-01", "text": ""}, "From which date does the dormant rule apply?"))
    corpus = Corpus(tasks, (DOC,))
    by_name = {s.name: s for s in registry()}
    for name in [f"{w}, {r}" for w in ("every document", "nearest document") for r in RENDERINGS] + [
            "nearest document's numbers, as a list", "every date of every document, as a list", "question echoed"]:
        assert not any(passes(t, by_name[name].answer(t, corpus)) for t in tasks), name
    # the cheap typed guesses are tried: the first number near the question's words is one
    assert passes(tasks[0], by_name["nearest sentence's first number, with the unit after it"].answer(tasks[0], corpus))
    assert passes(tasks[1], by_name["nearest document's first date"].answer(tasks[1], corpus))


@pytest.mark.parametrize("pack_name", ["demo", "berka", "pagila", "jaffle", "library"])
def test_real_rules_ask_one_typed_thing_in_fluent_words(pack_name: str) -> None:
    pack = load_pack(pack_name)
    asked = 0
    for doc in pack.rules:
        effects = [e.model_dump() for e in doc.front.effects or []]
        if not effects:
            continue
        mine = [e for e in effects if e.get("metric") == effects[0].get("metric")]
        temporal = doc.front.rule_type == "temporal"
        metric = pack.metric_by_id.get(str(mine[0].get("metric")))
        pick = next((a for a in candidates(mine, temporal, metric.sql if metric else None,
                                           metric.unit if metric else None)
                     if stated_in(doc, a, [a.column] if a.column else [])), None)
        if pick is None:
            continue
        gold = typed_gold(doc, pick)
        assert verdict(gold, {k: v for k, v in gold.items() if k != "text"}), doc.front.id
        question = knowledge_question(metric.name.lower() if metric else "revenue", {**topic(mine, temporal), "asks": {
            "kind": pick.kind, "what": pick.what, "op": pick.op, "column": pick.column}}, random.Random(0))
        assert question.endswith(("unit, if it has one.", "date.", "name.", "them."))
        assert wording_problem(question) is None and cut_reference_problem(gold) is None, (question, gold["text"])
        asked += 1
    assert asked >= 4
