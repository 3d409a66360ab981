"""The shortcut audit on a small crafted task set (no services): each family of no-understanding
strategies passes exactly the tasks built to let it through and fails the rest, and the audit
does not admit a family a shortcut solves. The audit of a real generation run is in
tests/test_generation.py."""
from __future__ import annotations

from typing import Any

import pytest

from dibench.core.contracts import AnswerContract, task_contract
from dibench.generation.shortcuts import AuditTask, Corpus, Shortcut, passes, registry
from dibench.generation.shortcuts.audit import LIMIT_PCT, audit, pass_counts
from dibench.generation.shortcuts.dumps import RENDERINGS, in_words, numbers_as_words

FILLER = " ".join(["Staff apply this policy in every region and keep a record of each decision for audit."] * 12)
SPAM_DOC = ("Spam and test tickets\nTickets flagged as spam are not counted. Tickets older than thirty days "
            "are archived first. " + FILLER)
REFUND_DOC = ("Refund review\nRefunds above 500 euros are reviewed within 7 days by 2 managers; a customer with "
              "3 refusals in 12 months is blocked for 90 days. " + FILLER)
DOCS = (SPAM_DOC, REFUND_DOC)


def contract(analysis: str, gold: dict[str, Any] | None = None) -> AnswerContract:
    return task_contract(analysis, 2, gold)


def task(key: str, analysis: str, gold: dict[str, Any], *, question: str = "What is it?", tier: str = "K+A",
         variant: str = "standard", metric: str = "M1", dimension: str | None = "plan", stem: str | None = None,
         **kw: Any) -> AuditTask:
    return AuditTask(key=key, stem=stem or key, analysis_type=analysis, tier=tier, variant=variant, question=question,
                     metric_id=metric, dimension=dimension, gold=gold, contract=contract(analysis, gold), **kw)


def sig(p: float, t: float) -> dict[str, Any]:
    return {"significant": p < 0.05, "p_value": p, "t_statistic": t, "test_name": "Welch's t-test (two-tailed)",
            "alpha": 0.05}


KNOWLEDGE_GOLD = {"text": "Tickets older than thirty days are archived first.", "must_include": ["30"],
                  "sources_state": ["30"]}
TASKS = [
    # significance: the verdicts alternate; the figures differ everywhere
    task("sig1", "significance_testing", sig(0.41, 0.84)),
    task("sig2", "significance_testing", sig(0.012, 2.71)),
    task("sig3", "significance_testing", sig(0.73, -0.35)),
    # trend: always increasing, by different amounts
    task("tr1", "trend_analysis", {"direction": "increasing", "total_change_pct": 12.3, "peak_period": "2024-05"}),
    task("tr2", "trend_analysis", {"direction": "increasing", "total_change_pct": 4.1, "peak_period": "2024-03"}),
    # threshold: the question states a target equal to the value
    task("th1", "threshold_crossing", {"value": 50.0, "threshold": 50.0, "result": "PASS"},
         question="Is the resolution rate at least 50 in March 2024?"),
    task("th2", "threshold_crossing", {"value": 61.5, "threshold": 50.0, "result": "PASS"},
         question="Is the resolution rate at least 50 in April 2024?"),
    # point queries on one metric: the same value three times
    *[task(f"pq{i}", "point_query", {"value": 5.0}, metric="M2") for i in range(3)],
    # a rule task whose rule changes nothing (base = gold) and one whose rule matters
    task("r1", "point_query", {"value": 7.0}, tier="K+A+R", metric="M3", base={"value": 7.0}, lifted={"value": 8.0}),
    task("r2", "point_query", {"value": 9.0}, tier="K+A+R", metric="M4", base={"value": 11.0}, lifted={"value": 10.0}),
    # rows on one dimension: a decomposition another answer lists in full
    task("d1", "decomposition", {"rows": [{"group": "basic", "value": 1.0}, {"group": "pro", "value": 2.0}]},
         metric="M5"),
    task("d2", "decomposition", {"rows": [{"group": "basic", "value": 1.0}, {"group": "pro", "value": 2.0}]},
         metric="M5", stem="d2"),
    # knowledge: a dump of every document states the fact, and many other numbers
    task("k1", "knowledge_retrieval", KNOWLEDGE_GOLD, tier="K",
         question="How old must a ticket be before it is archived?"),
    task("k2", "knowledge_retrieval", {"text": "Tickets flagged as spam are not counted.", "must_include": ["spam"],
                                       "sources_state": []},
         tier="K", question="Which flag keeps a ticket out of the count, spam?"),
]
CORPUS = Corpus(tuple(TASKS), DOCS)
BY_NAME = {s.name: s for s in registry()}


def passed(name: str) -> set[str]:
    s: Shortcut = BY_NAME[name]
    return {t.key for t in TASKS if passes(t, s.answer(t, CORPUS))}


def test_names_are_unique_and_every_family_contributes() -> None:
    names = [s.name for s in registry()]
    assert len(names) == len(set(names))
    for prefix in ("constant ", "most common gold", "question", "every known group", "every document",
                   "nearest document", "no rule"):
        assert any(n.startswith(prefix) for n in names), prefix


def test_a_constant_verdict_or_direction_fails_when_the_figures_are_scored() -> None:
    assert passed("constant significance_testing.significant=false") == set()
    assert passed("constant significance_testing.significant=true") == set()
    assert passed("constant trend_analysis.direction=increasing") == set()


def test_the_question_echoed_passes_a_task_whose_question_states_its_answer() -> None:
    assert passed("question's first number, PASS") == {"th1"}
    assert passed("question echoed") == {"k2"}


def test_the_most_common_gold_passes_repeated_answers_leave_one_out() -> None:
    assert {"pq0", "pq1", "pq2"} <= passed("most common gold of the metric")
    # a task's own variants are never "other tasks": a lone stem has no metric sibling
    lone = task("x", "point_query", {"value": 5.0}, metric="M9")
    assert BY_NAME["most common gold of the metric"].answer(lone, Corpus((lone,), DOCS)) is None


def test_no_rule_passes_exactly_the_rule_task_whose_rule_changes_nothing() -> None:
    assert passed("no rule") == {"r1"}
    assert passed("policy without the featured rule") == set()


def test_listing_known_groups_with_borrowed_values_passes_a_repeated_breakdown() -> None:
    assert passed("every known group, alphabetical, borrowed values") == {"d1", "d2"}
    assert passed("every known group, alphabetical, null values") == set()


@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
def test_every_dump_of_the_documents_fails_knowledge_tasks(rendering: str) -> None:
    assert passed(f"every document, {rendering}") == set()
    assert passed(f"nearest document, {rendering}") == set()


def test_the_sentence_sharing_most_words_with_the_question_is_tried() -> None:
    # "archived" ("spam") is in the question and in the one sentence that states the fact
    assert passed("nearest document, the sentence sharing most words with the question") == {"k1", "k2"}


def test_an_answer_stating_only_what_is_asked_passes() -> None:
    k1 = TASKS[-2]
    assert passes(k1, {"text": "They are archived after thirty days."})
    assert passes(k1, {"text": "After 30 days."})


def test_numbers_in_words() -> None:
    assert in_words(1250) == "one thousand two hundred fifty"
    assert in_words(42) == "forty-two"
    assert numbers_as_words("within 7 days, 2.5 %") == "within seven days, two point five %"


def test_the_audit_keeps_the_best_shortcut_per_family_and_refuses_the_ones_it_solves() -> None:
    table = audit(TASKS, CORPUS, registry())
    cells = {c.family: c for c in table.cells}
    assert set(cells) == {"significance_testing/K+A/standard", "trend_analysis/K+A/standard",
                          "threshold_crossing/K+A/standard", "point_query/K+A/standard",
                          "point_query/K+A+R/standard", "decomposition/K+A/standard",
                          "knowledge_retrieval/K/standard"}
    assert all(c.oracle_passed == c.tasks for c in table.cells)
    sig_cell = cells["significance_testing/K+A/standard"]
    assert (sig_cell.best_shortcut, sig_cell.best_passed, sig_cell.admitted) == (None, 0, True)
    pq = cells["point_query/K+A/standard"]
    assert (pq.best_passed, pq.tasks, pq.admitted) == (3, 3, False)
    assert pq.low_pct > LIMIT_PCT and pq.high_pct == 100.0
    # one pass in two is over the limit, but not shown to be: admitted
    th = cells["threshold_crossing/K+A/standard"]
    assert (th.best_passed, th.tasks, th.admitted) == (1, 2, True)
    assert {c.family for c in table.rejected()} == {"point_query/K+A/standard", "decomposition/K+A/standard",
                                                    "knowledge_retrieval/K/standard"}


def test_a_strategy_that_cannot_shape_an_answer_fails_the_task() -> None:
    def broken(t: AuditTask, c: Corpus) -> Any:
        raise KeyError("no such field")

    counts = pass_counts(TASKS[:1], CORPUS, [Shortcut("broken", broken)])
    assert counts[("significance_testing", "K+A", "standard")]["broken"] == 0


def test_the_word_next_to_the_question_s_words_or_a_code_in_capitals_is_tried() -> None:
    """Berka's "Which value of the transaction purpose ... left out of the credit inflow?" (UROK),
    "... the loan status ... north Moravia?" (D), pagila's "For which rental store ...?" (2) and
    waterworks' "For which customer segment ...?" (residential): each value stands next to the
    question's own words, or is the sentence's code in capitals, with nothing set apart."""
    docs = ("Inflow\nFrom 1 January 1994, credits with transaction purpose UROK (interest credited by the bank) are "
            "not client inflow and are excluded from all inflow-based indicators. " + FILLER,
            "Late fees\nLate fees of rentals at store 2 are weighted at half in the late fees assessed. " + FILLER,
            "Hardship\nFor residential customers on the scheme we do not count those bills in the late payment "
            "rate at all. " + FILLER)
    name = {"text": "", "value": "UROK"}
    tasks = [task("n1", "knowledge_retrieval", name, tier="K",
                  question="Which value of the transaction purpose does our policy single out to decide which "
                           "records are left out of the credit inflow? Give its name."),
             task("n2", "knowledge_retrieval", {"text": "", "value": 2}, tier="K",
                  question="For which rental store does our policy weight records differently in the late fees "
                           "assessed figure? Give its number."),
             task("n3", "knowledge_retrieval", {"text": "", "value": "residential"}, tier="K",
                  question="For which customer segment does our policy leave some records out of the late payment "
                           "rate? Give its name.")]
    corpus = Corpus(tuple(tasks), docs)

    def solved(shortcut: str) -> set[str]:
        return {t.key for t in tasks if passes(t, BY_NAME[shortcut].answer(t, corpus))}

    assert solved("sentence nearest the question in any document, the word after a question word") == {"n1", "n2"}
    assert solved("sentence nearest the question in any document, the word before a question word") == {"n3"}
    assert solved("sentence nearest the question in any document, its first code in capitals") == {"n1"}


def test_a_round_number_policies_like_is_guessed() -> None:
    """Berka's "What is the smallest group size for which our policy lets the instalment-to-salary
    ratio be shown?" (10) is answered by habit: a smallest group size of 10 is what policies set."""
    ten = task("g1", "knowledge_retrieval", {"text": "", "value": 10, "unit": None}, tier="K",
               question="What is the smallest group size for which our policy lets the ratio be shown?")
    twelve = task("g2", "knowledge_retrieval", {"text": "", "value": 12, "unit": None}, tier="K",
                  question="What is the smallest group size for which our policy lets the share be shown?")
    corpus = Corpus((ten, twelve), DOCS)
    solved = {t.key for t in (ten, twelve) for s in registry() if s.name.startswith("round number")
              and passes(t, s.answer(t, corpus))}
    assert solved == {"g1"}
