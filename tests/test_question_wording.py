"""Template questions a fluent analyst would write (generation/questions.py): a plural metric name
is asked about as its figure, groups are named with their label after them, no question asks how
a figure "came out". Pure: no services (well under a second)."""
from __future__ import annotations

import random

from dibench.generation.questions import plural_name, template_question

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
    assert "Compare the late return rate of the Harbour Reading Room branch with that of Willow Park in 2024." in compared
    (sig,) = asked("significance_testing", "Late return rate", pair)
    assert "between the Harbour Reading Room and Willow Park branches in 2024?" in sig
    (spatial,) = asked("significance_testing", "Late return rate", {"group_a": "East", "group_b": "South"}, "spatial")
    assert "between East and South in 2024?" in spatial


def test_an_acronym_in_a_metric_name_keeps_its_capitals() -> None:
    # the demo asked about "the first-response sla attainment"
    import random

    from dibench.generation.questions import metric_words, template_question

    assert metric_words("First-response SLA attainment") == "first-response SLA attainment"
    assert metric_words("Net satisfaction score") == "net satisfaction score"
    q = template_question("point_query", "Resolution SLA attainment", "region", {"start": "2024-01-01",
                          "end": "2024-04-01"}, random.Random(1), "percent")
    assert "resolution SLA attainment" in q and "sla" not in q
