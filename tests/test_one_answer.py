"""One right answer, stated: a ranking never cut inside a tie, no task repeated, and answer formats
that say how the gold is computed (rounding, the trend's method, the tolerance of a significance
test's figures, the length of a knowledge answer). Pure: no services."""
from __future__ import annotations

from typing import Any

from dibench.core.ambiguity import Asked, asked_about, duplicates, near_duplicates, same_answers
from dibench.core.answers import months, trend_summary
from dibench.core.contracts import MAX_WORDS, check_answer, task_contract
from dibench.generation.analyses.ranking import tied_at, untied_k
from dibench.generation.analyses.threshold import states_its_answer
from dibench.generation.analyses.trend import additive
from dibench.generation.questions import answer_format


def rows(*values: float) -> list[dict[str, object]]:
    return [{"group": f"g{i}", "value": v} for i, v in enumerate(values)]


def test_a_ranking_is_never_cut_inside_a_tie() -> None:
    # two regions with 4 loans each at ranks 3 and 4: a top 3 would depend on the tie-break
    tied = rows(9, 7, 4, 4, 1)
    assert tied_at(tied, 3, higher_is_better=True)
    assert not tied_at(tied, 2, higher_is_better=True)
    assert untied_k([tied], 3, 5, True) == 2
    assert untied_k([tied], 4, 5, True) == 4
    # the answer without rules counts too; the lowest first when lower is better
    assert untied_k([rows(9, 7, 5, 1), rows(9, 7, 7, 1)], 2, 4, True) == 3
    assert tied_at(rows(1, 2, 2, 5), 2, higher_is_better=False)
    # every cut ties: no ranking
    assert untied_k([rows(4, 4, 4, 4)], 3, 4, True) is None


def test_a_repeated_question_and_answer_is_kept_once() -> None:
    gold = {"value": 5.0}
    tasks = [Asked("t:b", "What is the  revenue?", "point_query", gold, 2),
             Asked("t:a", "what is the revenue?", "point_query", {"value": 5.001}, 2),
             Asked("t:c", "What is the revenue?", "point_query", {"value": 7.0}, 2),
             Asked("t:d", "What is the cost?", "point_query", gold, 2)]
    # 5.001 and 5.0 are one answer under the contract; 7.0 is another (ambiguous, not a copy)
    assert duplicates(tasks) == {"t:b": "t:a"}
    # one rule asked about for two metrics: the same sentences and facts are one knowledge task
    text = {"text": "Penalty interest (purpose SANKC. UROK) is left out.", "must_include": ["SANKC. UROK"],
            "sources_state": []}
    knowledge = [Asked("k:2", "What does our policy leave out of the interest income?", "knowledge_retrieval",
                       {**text, "sources_state": ["3"]}, 2),
                 Asked("k:1", "What does our policy leave out of the fee income?", "knowledge_retrieval", text, 2)]
    assert duplicates(knowledge) == {"k:2": "k:1"}


def test_a_fact_a_full_stop_cuts_is_stated_by_the_sentences_around_it() -> None:
    from types import SimpleNamespace

    from dibench.generation.analyses.knowledge import answer_text

    doc = SimpleNamespace(body="# Bank postings\n\nThe bank posts penalty interest (purpose SANKC. UROK) on overdrawn "
                               "accounts. It is not client activity.\n\nOther text follows here.")
    text = answer_text(doc, ["SANKC. UROK"])
    assert text == "The bank posts penalty interest (purpose SANKC. UROK) on overdrawn accounts."


def test_answer_formats_state_how_the_gold_is_computed() -> None:
    assert "rounded to 2 decimals, half away from zero" in answer_format("point_query", 2)
    assert "rounded to 1 decimal," in answer_format("decomposition", 1)
    trend = answer_format("trend_analysis", 2)
    assert "(last month - first month) / |first month|" in trend and '"flat" when |total_change_pct| < 1' in trend
    sig = answer_format("significance_testing", 2)
    assert "p_value and t_statistic are scored with the verdict" in sig and "0.0005" in sig
    assert "scored exactly" in answer_format("knowledge_retrieval", 2)


def test_the_rounding_example_has_the_metrics_digits() -> None:
    # a ranking rounded to whole numbers showed "2.345 -> 2.35", a tie at two decimals
    assert "(2.5 -> 3; on such an exact tie half to even, 2, passes too)" in answer_format("ranking", 0)
    assert "(2.45 -> 2.5; on such an exact tie half to even, 2.4, passes too)" in answer_format("point_query", 1)
    assert "(2.345 -> 2.35; on such an exact tie half to even, 2.34, passes too)" in answer_format("comparison", 2)


def test_a_group_not_recorded_is_said_to_be_left_out() -> None:
    # berka's transactions with no purpose recorded are the largest "group" of a ranking by purpose;
    # the gold leaves them out (core.answers.grouped_rows), and the answer format must say so
    from dibench.core.answers import grouped_rows

    assert [r["group"] for r in grouped_rows([(None, 21628, 21628), ("SIPO", 5020, 5020)], 0)] == ["SIPO"]
    for analysis in ("ranking", "decomposition", "counterfactual"):
        assert "not recorded (null) belong to no group and are left out" in answer_format(analysis, 2)
    assert "no group" not in answer_format("comparison", 2)


def test_a_trend_question_asks_for_the_first_and_last_month_comparison_its_gold_is() -> None:
    import random

    from dibench.generation.questions import template_question

    facts = {"start": "1995-06-01", "end": "1995-12-01"}
    asked = {template_question("trend_analysis", "Card sales units", "region", facts, random.Random(seed), "count")
             for seed in range(20)}
    assert len(asked) == 2
    # a series 7, 6.5, 2, 7.5, 1.5, 8 is "increasing" by the stated method, not by a look at each month
    assert all("first" in q and "last" in q and "month by month" not in q for q in asked), asked


def test_a_constant_significance_verdict_and_a_constant_trend_direction_fail() -> None:
    sig = task_contract("significance_testing", 2)
    gold = {"significant": False, "p_value": 0.41, "t_statistic": 0.84, "test_name": "Welch's t-test (two-tailed)",
            "alpha": 0.05}
    assert not check_answer(sig, gold, {"significant": False, "p_value": 0.5, "t_statistic": 0.0}).passed
    trend = task_contract("trend_analysis", 2)
    gold = {"direction": "increasing", "total_change_pct": 12.3, "peak_period": "2024-05"}
    assert not check_answer(trend, gold, {"direction": "increasing", "total_change_pct": 0.0,
                                          "peak_period": "2024-05"}).passed


def test_a_time_series_runs_on_the_calendar_of_its_window() -> None:
    """A month without rows is a true zero for a count or a sum: dropping it changed the trend."""
    rows = [("2024-01", 10), ("2024-02", 12), ("2024-03", 14)]  # April has no row
    spine = months("2024-01-01", "2024-05-01")
    assert spine == ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert trend_summary(rows, 2, spine, 0) == {"direction": "decreasing", "total_change_pct": -100.0,
                                                "peak_period": "2024-03"}
    # an average has no value in an empty month: it is left out
    assert trend_summary(rows, 2, spine, None) == {"direction": "increasing", "total_change_pct": 40.0,
                                                   "peak_period": "2024-03"}
    # an empty first month of a count leaves no percent change: no task
    assert trend_summary([("2024-02", 12), ("2024-03", 14), ("2024-04", 9)], 2, spine, 0) is None
    assert additive("SELECT COUNT(*) AS value FROM t") and additive("SELECT COALESCE(SUM(x), 0) FROM t")
    assert not additive("SELECT AVG(x) AS value FROM t")
    assert not additive("SELECT 100.0 * COUNT(*) FILTER (WHERE r >= 4) / NULLIF(COUNT(r), 0) AS value FROM t")


def test_a_significance_test_runs_on_the_calendar_of_its_window() -> None:
    """A month in which a group has no rows is 0 for a count: the test over the months asked reads
    it (pagila's rentals have none in March and April 2022), and the answer format says so."""
    from dibench.core.answers import welch

    rows = [("2022-05", "a", 598, 1), ("2022-06", "a", 1148, 1), ("2022-07", "a", 3384, 1),
            ("2022-05", "b", 558, 1), ("2022-06", "b", 1163, 1), ("2022-07", "b", 3355, 1)]
    spine = months("2022-03-01", "2022-08-01")
    counted = welch(rows, "a", "b", spine, 0)
    assert counted is not None and (counted["p_value"], counted["t_statistic"]) == (0.9906, 0.012)
    assert counted != welch(rows, "a", "b")  # months with rows only: another p-value, a second answer
    assert welch(rows, "a", "b", spine, None) == welch(rows, "a", "b")  # an average leaves empty months out
    assert "one without rows is 0 for a count or a sum" in answer_format("significance_testing")


def test_a_suppressed_group_is_listed_with_no_value() -> None:
    """An agent that lists every group, the suppressed one with null, is right; one that drops it too."""
    from dibench.core.answers import decomposition

    gold = decomposition([("north", 51.234), ("south", 40.0)], 2, ["islands", "north", "south"])
    assert gold == {"rows": [{"group": "islands", "value": None}, {"group": "north", "value": 51.23},
                             {"group": "south", "value": 40.0}]}
    contract = task_contract("decomposition", 2)
    assert check_answer(contract, gold, gold).passed
    dropped = {"rows": [r for r in gold["rows"] if r["value"] is not None]}
    assert "missing row(s) 'islands'" in check_answer(contract, gold, dropped).reason
    assert 'listed with "value": null' in answer_format("decomposition", 2)


def test_a_counterfactual_by_group_lists_a_withheld_group_with_nulls() -> None:
    """The library review: fines by kind in 2024, the damage fines of 79 borrowers withheld (fewer
    than 100): the gold dropped the group, so an agent listing it with nulls, as a decomposition
    does, failed on an extra row."""
    from dibench.core.answers import counterfactual

    gold = counterfactual([("lost", 3983.5), ("overdue", 9055.25)], [("lost", 3983.5), ("overdue", 9189.5)], 2,
                          groups=["damage", "lost", "overdue"])
    assert gold["rows"][0] == {"group": "damage", "current": None, "hypothetical": None}
    contract = task_contract("counterfactual", 2, gold)
    assert check_answer(contract, gold, gold).passed
    assert "by group: every group, one a policy withholds or empties listed with null" in \
        answer_format("counterfactual", 2)
    # by month, the calendar decides the rows as before
    months = counterfactual([("2024-01", 1.0)], [("2024-01", 2.0)], 2, ["2024-01", "2024-02"], 0)
    assert [r["group"] for r in months["rows"]] == ["2024-01", "2024-02"]


def test_a_threshold_is_never_the_value_it_is_compared_with() -> None:
    """Two of demo's six K+A threshold tasks had a target equal to the value: the question answered them."""
    assert states_its_answer(50.0, [50.0, 61.5], 2)
    assert states_its_answer(50.0, [61.5, 50.004], 2)  # the answer without rules counts too
    assert not states_its_answer(50.0, [50.01, None], 2)


def test_a_value_on_an_exact_rounding_tie_is_found() -> None:
    """Half up and half even round 2.345 apart: generation asks no question whose value is one."""
    from decimal import Decimal

    from dibench.core.answers import exact_tie

    assert [exact_tie(v, 2) for v in (Decimal("2.345"), 2.345, -0.125, 2.344, Decimal("12.5000"), 7, "2.345", None)] \
        == [True, True, True, False, False, False, False, False]
    assert exact_tie(0.5, 0)


def test_an_answer_another_task_already_has_is_kept_once() -> None:
    """Two windows over the same rows, or a zero: copying one task's answer passed the other."""
    trend = {"direction": "decreasing", "total_change_pct": -100.0, "peak_period": "2005-07"}
    tasks = [Asked("t:1", "How did rentals develop in 2005?", "trend_analysis", trend, 2),
             Asked("t:2", "How did revenue develop from May to August 2005?", "trend_analysis", trend, 2),
             Asked("t:2:oracle", "How did revenue develop ... policy text", "trend_analysis", trend, 2),
             Asked("t:1:oracle", "How did rentals develop ... policy text", "trend_analysis", trend, 2),
             Asked("t:3", "What was the revenue in June?", "point_query", {"value": 0.0}, 2),
             Asked("t:4", "What was the late fee share in July?", "point_query", {"value": 0.0}, 2),
             Asked("t:5", "What was the revenue in July?", "point_query", {"value": 12.5}, 2)]
    # a variant is compared with variants only: a task's oracle twin never repeats it
    assert same_answers(tasks) == {"t:2": "t:1", "t:2:oracle": "t:1:oracle", "t:4": "t:3"}


def test_two_wordings_of_one_comparison_are_kept_once() -> None:
    """The demo's review: two comparison tasks of one metric, window and plans, worded differently
    and with the plans in the other order (so their golds differ in order only)."""
    window = {"start": "2024-01-01", "end": "2024-07-01"}

    def cmp(key: str, question: str, a: str, b: str, start: str = "2024-01-01") -> Asked:
        facts = {**window, "start": start, "group_a": a, "group_b": b}
        later = 5.0 if start != window["start"] else 0.0  # another window, other values
        gold = {"group_a": a, "group_b": b, "higher": "premium", "value_a": (1.0 if a == "basic" else 2.0) + later,
                "value_b": (2.0 if a == "basic" else 1.0) + later}
        return Asked(key, question, "comparison", gold, 2, asked_about("comparison", "MV-CSAT-001", "plan", facts))

    tasks = [cmp("t:1", "Which service plan had the higher CSAT: basic or premium?", "basic", "premium"),
             cmp("t:2", "Compare the CSAT of the premium service plan with that of basic.", "premium", "basic"),
             cmp("t:2:oracle", "Compare the CSAT ... policy text", "premium", "basic"),
             cmp("t:1:oracle", "Which service plan ... policy text", "basic", "premium"),
             cmp("t:3", "Which service plan had the higher CSAT: basic or premium?", "basic", "premium", "2024-02-01")]
    assert near_duplicates(tasks) == {"t:2": "t:1", "t:2:oracle": "t:1:oracle"}
    assert same_answers(tasks) == {} and duplicates(tasks) == {}  # neither saw them
    assert asked_about("knowledge_retrieval", "M", None, {"rule": "R"}) is None


def test_two_knowledge_tasks_with_one_typed_value_are_kept_once() -> None:
    """Two rules asked about whose answer is the same name: copying one passes the other; a
    number in another unit of measurement is another answer."""
    tasks = [Asked("k:1", "Which figure does our policy bring into the revenue per customer? Give its name.",
                   "knowledge_retrieval", {"value": "rental rate", "text": "The smaller of payment and rental rate."}, 2),
             Asked("k:2", "Which figure does our policy bring into the rentals per staff member? Give its name.",
                   "knowledge_retrieval", {"value": "rental rate", "text": "| tier | rental rate | points |"}, 2),
             Asked("k:3", "What limit makes a ticket dormant? Give the number and its unit.", "knowledge_retrieval",
                   {"value": 60, "unit": "day", "text": "More than 60 days."}, 2),
             Asked("k:4", "What limit makes a handle time a timer error? Give the number and its unit.",
                   "knowledge_retrieval", {"value": 60, "unit": "minute", "text": "More than 60 minutes."}, 2)]
    assert same_answers(tasks) == {"k:2": "k:1"}


def test_a_comparison_whose_values_only_round_alike_is_not_asked() -> None:
    # pagila inventory turns, Classics 2.43317 and Documentary 2.43262: the gold said "equal",
    # an agent comparing the exact values names Classics
    from dibench.generation.analyses.comparison import rounded_together

    rows = [("Classics", 2.4331683168316833, 983), ("Documentary", 2.4326241134751774, 1029)]
    assert rounded_together(rows, "Classics", "Documentary", 2)
    assert not rounded_together(rows, "Classics", "Documentary", 4)
    # equal exactly (two counts of 5) is one answer: "equal"
    assert not rounded_together([("a", 5, 5), ("b", 5, 5)], "a", "b", 0)
    assert not rounded_together([("a", 5, 5)], "a", "b", 0)


def test_values_another_rule_singles_out_on_the_same_column_make_two_answers() -> None:
    """Library's "Which values of the card type and fine type does our policy single out to decide
    which records are left out of the fines assessed figure?" had the gold child, overdue (the
    children's overdue fines), while the lost-item rule in force also leaves out a fine type (lost):
    not one answer, so the question is not asked. A rule on another column leaves it alone."""
    from dibench.generation.analyses.knowledge import candidates, singled_out_elsewhere

    sql = ("SELECT SUM(f.amount) AS value FROM library.fines AS f JOIN library.loans AS l ON l.loan_id = f.loan_id "
           "JOIN library.members AS m ON m.member_id = l.member_id")

    def values(predicate: str) -> list[Any]:
        asked = candidates([{"metric": "M", "op": "exclude", "predicate": predicate}], False, sql)
        return [a for a in asked if a.what == "values"]

    [child] = values("m.member_type = 'child' AND f.kind = 'overdue'")
    lost = values("f.kind = 'lost'")
    staff = values("m.branch = 'Central'")
    assert child.facts == ("child", "overdue") and lost[0].facts == ("lost",)
    assert singled_out_elsewhere(child, lost) and singled_out_elsewhere(lost[0], [child])
    assert not singled_out_elsewhere(child, staff)
    assert not singled_out_elsewhere(child, [child])  # the same values: the same answer
    # Berka: a formula counting statuses B and D, and a rule leaving out status D: the questions differ
    counted = candidates([{"metric": "M", "op": "override",
                           "expression": "100.0 * COUNT(*) FILTER (WHERE f.kind IN ('overdue', 'lost'))"}], False, sql)
    assert not singled_out_elsewhere(lost[0], [a for a in counted if a.what.startswith("values")])


def test_a_point_query_whose_value_is_zero_is_not_asked() -> None:
    # jaffle's "food revenue for the oatmilk chai latte product description": a drink has no food revenue,
    # and the constant 0 answers the question without a look at the data
    from dibench.generation.validation import Candidate, Vocabulary, unscorable

    def point(value: float | None) -> Candidate:
        return Candidate(key="task:t/p", skeleton_key="s", domain="t", analysis_type="point_query", tier="K+A",
                         metric_id="M", rule_ids=[], rule_versions=[], dimension="p.d", dimension_type="categorical",
                         question="What was the food revenue for the chai product between June and August 2019?",
                         answer_format="JSON", gold_answer={"value": value}, base_answer=None, gold_sql=None,
                         base_sql=None, gold_params={}, base_params={}, tables=[])

    vocab = Vocabulary(frozenset())
    assert unscorable(point(0.0), vocab) == "no scorable expected answer (the value is 0, which a constant gives)"
    assert unscorable(point(0.01), vocab) is None
