"""Template questions a fluent analyst would write (generation/questions.py): a plural metric name
is asked about as its figure, groups are named with their label after them, no question asks how
a figure "came out". Pure: no services (well under a second)."""
from __future__ import annotations

import random

from dibench.generation.analyses.knowledge import asks_of, candidates
from dibench.generation.questions import knowledge_question, metric_words, plural_name, template_question

YEAR = {"start": "2024-01-01", "end": "2025-01-01"}


def asked(analysis: str, name: str, facts: dict[str, object], dimension_type: str = "categorical") -> set[str]:
    return {template_question(analysis, name, "branch", {**YEAR, **facts}, random.Random(s), "count", dimension_type)
            for s in range(40)}


def test_no_point_question_asks_how_a_figure_came_out() -> None:
    questions = asked("point_query", "Late return rate", {})
    assert len(questions) == 3 and not any("come out" in q for q in questions)


def test_a_plural_metric_is_asked_about_as_its_figure() -> None:
    assert plural_name("active borrowers") and plural_name("fines assessed") and plural_name("refunds")
    assert not any(plural_name(n) for n in ("late return rate", "loss ratio", "status", "analysis count"))
    # was "What was our active borrowers", "what is the loans issued", "Is the monthly active borrowers"
    for analysis, facts in (("point_query", {}), ("counterfactual", {"by_month": True}),
                            ("significance_testing", {"group_a": "Eastfield", "group_b": "Southbank"}),
                            ("ranking", {"k": 3}), ("decomposition", {})):
        for q in asked(analysis, "Active borrowers", facts):
            assert "active borrowers figure" in q, q
    assert all("late return rate figure" not in q for q in asked("point_query", "Late return rate", {}))


def test_groups_are_named_with_their_label_after_them() -> None:
    pair = {"group_a": "Harbour Reading Room", "group_b": "Willow Park"}
    compared = asked("comparison", "Late return rate", pair)
    # was "... with that of Willow Park": both groups of a comparison carry their label
    assert ("Compare the late return rate of the Harbour Reading Room branch with that of the Willow Park branch "
            "in 2024.") in compared
    (sig,) = asked("significance_testing", "Late return rate", pair)
    assert "between the Harbour Reading Room and Willow Park branches in 2024?" in sig
    (spatial,) = asked("significance_testing", "Late return rate", {"group_a": "East", "group_b": "South"}, "spatial")
    assert "between East and South in 2024?" in spatial


def test_a_code_joined_by_underscores_is_written_in_words() -> None:
    pair = {"group_a": "in_person", "group_b": "video"}
    (sig,) = asked("significance_testing", "No-show rate", pair)
    assert "between the in person and video branches" in sig
    for q in asked("comparison", "No-show rate", pair) | asked("point_query", "No-show rate", {"group": "self_pay"}):
        assert "_" not in q
    # a value that is not such a code stays as the data writes it
    (kept,) = asked("significance_testing", "No-show rate", {"group_a": "POPLATEK MESICNE", "group_b": "PG-13"})
    assert "POPLATEK MESICNE and PG-13" in kept


def _knowledge(name: str, effects: list[dict[str, object]], metric_sql: str | None = None, pick: int = 0) -> str:
    asked_for = candidates(effects, False, metric_sql)[pick]
    return knowledge_question(name, {"op": effects[0]["op"], "asks": asks_of(asked_for)}, random.Random(0))


def test_a_rule_parameter_is_asked_for_by_its_name_and_its_slice() -> None:
    """Berka's "What value does our policy set for the lgd of the expected credit loss rate?":
    the LGD the rule sets for Prague loans (the other regions keep the catalog's 45%), asked as an
    analyst asks it, naming the slice it is set for."""
    lgd = [{"metric": "BRK-PF-03", "op": "threshold", "param": "lgd", "value": 0.35,
            "applies_when": {"dimension": "district.region", "value": "Prague"}}]
    q = _knowledge("expected credit loss rate", lgd)
    assert q.startswith("What LGD does our policy set for the expected credit loss rate where the region is Prague?"), q
    sla = [{"metric": "M", "op": "threshold", "param": "sla_hours", "value": 1,
            "applies_when": {"dimension": "t.priority", "value": "urgent"}}]
    assert _knowledge("first-response SLA attainment", sla).startswith(
        "What SLA limit in hours does our policy set for the first-response SLA attainment where the priority is "
        "urgent?")
    # the slice itself is asked for without naming it
    assert "urgent" not in _knowledge("first-response SLA attainment", sla, pick=1)


def test_a_column_a_formula_brings_in_is_asked_for_as_a_field() -> None:
    """Demo's "Which figure does our policy bring into the calculation of the support health
    index?" with the gold "escalation type": a field, not a figure, and one the catalog's
    definition does not read."""
    override = [{"metric": "MV-HLTH-001", "op": "override",
                 "expression": "0.5 * AVG(s.score) + 0.5 * COUNT(*) FILTER (WHERE t.escalation_type IS NOT NULL)"}]
    q = _knowledge("support health index", override, "SELECT AVG(s.score) FROM t", pick=-1)
    assert q == ("Which field, beyond those of the catalog's definition, does our policy bring into the calculation "
                 "of the support health index? Give its name."), q


def test_every_field_a_policy_brings_in_answers_the_field_question() -> None:
    """Pagila's "Which field ... does our policy bring into the calculation of the revenue per
    paying customer?" had the gold "rental rate" (a formula's LEAST(p.amount, f.rental_rate)),
    while two other rules in force filter on fields the catalog's definition does not read (the
    customer's active flag, the return date): three right answers, so the question is not asked."""
    from dibench.generation.analyses.knowledge import brought_in

    sql = "SELECT SUM(p.amount) / NULLIF(COUNT(DISTINCT p.customer_id), 0) AS value FROM payment AS p"
    formula = [{"metric": "M", "op": "override",
                "expression": "SUM(LEAST(p.amount, f.rental_rate)) / NULLIF(COUNT(DISTINCT p.customer_id), 0)"}]
    assert brought_in(formula, sql) == {"rental rate"}
    assert brought_in([{"metric": "M", "op": "exclude", "predicate": "c.active = 0"}], sql) == {"active"}
    assert brought_in([{"metric": "M", "op": "exclude", "predicate": "r.return_date IS NULL"}], sql) == {"return date"}
    assert brought_in([{"metric": "M", "op": "exclude", "predicate": "p.amount = 0"}], sql) == set()
    assert brought_in([{"metric": "M", "op": "suppress", "min_n": 5}], sql) == set()


def test_an_acronym_in_a_metric_name_keeps_its_capitals() -> None:
    # the demo asked about "the first-response sla attainment"
    import random

    from dibench.generation.questions import metric_words, template_question

    assert metric_words("First-response SLA attainment") == "first-response SLA attainment"
    assert metric_words("Net satisfaction score") == "net satisfaction score"
    q = template_question("point_query", "Resolution SLA attainment", "region", {"start": "2024-01-01",
                          "end": "2024-04-01"}, random.Random(1), "percent")
    assert "resolution SLA attainment" in q and "sla" not in q


def test_the_slice_a_rule_is_for_is_asked_as_an_analyst_asks_it() -> None:
    """The hold-out review's "Which customer segment does our policy's special treatment of the late
    payment rate concern?": the slice a rule holds for, asked by what the rule does there."""
    sla = [{"metric": "M", "op": "threshold", "param": "sla_hours", "value": 1,
            "applies_when": {"dimension": "t.priority", "value": "urgent"}}]
    q = _knowledge("first-response SLA attainment", sla, pick=1)
    assert q.startswith("For which priority does our policy set its own threshold for the first-response SLA "
                        "attainment?"), q
    exclude = [{"metric": "M", "op": "exclude", "where": "t.channel = 'spam'",
                "applies_when": {"dimension": "c.segment", "value": "public_sector"}}]
    q = _knowledge("late payment rate", exclude, pick=-1)
    assert "special treatment" not in q and "concern" not in q, q
    assert q.startswith("For which segment does our policy"), q
