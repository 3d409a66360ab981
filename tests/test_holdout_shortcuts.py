"""The hold-out shortcuts (generation/shortcuts/holdout.py): three lazy strategies kept out of
the registry the admission uses, reported apart. Pure: no services (well under a second)."""
from __future__ import annotations

import json
from typing import Any

from dibench.core.contracts import task_contract
from dibench.generation.shortcuts import AuditTask, Corpus, passes, registry
from dibench.generation.shortcuts.holdout import HOLDOUT, bm25_best, holdout_audit

DOCS = ("Timer errors\nA handle time above the timer error limit is an error. The timer error limit is 480 minutes. "
        "Reviews take 7 days and 7 days more on appeal.",
        "Dormant tickets\nA ticket resolved 60 days after creation is dormant; a reopened one waits 7 days.")
BM25, MODE, NEAREST = HOLDOUT


def task(key: str, gold: dict[str, Any], question: str, analysis: str = "knowledge_retrieval") -> AuditTask:
    return AuditTask(key=key, stem=key, analysis_type=analysis, tier="K", variant="standard", question=question,
                     metric_id="M", dimension=None, gold=gold, contract=task_contract(analysis, 2, gold))


LIMIT = task("a", {"value": 480, "unit": "minute", "text": "The timer error limit is 480 minutes."},
             "What is the timer error limit?")
REVIEW = task("b", {"value": 7, "unit": "day", "text": "Reviews take 7 days."}, "How long does a review take?")
DORMANT = task("c", {"value": 60, "unit": "day", "text": "60 days."}, "After how long is a resolved ticket dormant?")
CORPUS = Corpus((LIMIT, REVIEW, DORMANT), DOCS)


def test_bm25_then_the_value_after_the_last_shared_word() -> None:
    assert bm25_best("timer error limit", ["Reviews take 7 days.", "The timer error limit is 480 minutes."]) \
        == "The timer error limit is 480 minutes."
    assert BM25.answer(LIMIT, CORPUS) == {"value": 480, "unit": "minute"} and passes(LIMIT, BM25.answer(LIMIT, CORPUS))


def test_the_most_common_value_of_the_kind_asked_in_the_corpus() -> None:
    assert MODE.answer(DORMANT, CORPUS)["value"] == 7  # stated four times
    assert passes(REVIEW, MODE.answer(REVIEW, CORPUS)) and not passes(DORMANT, MODE.answer(DORMANT, CORPUS))


def test_the_answer_of_the_nearest_other_question() -> None:
    near = task("d", {"value": 480, "unit": "minute", "text": "x"}, "What is the timer error limit of handle time?")
    corpus = Corpus((LIMIT, REVIEW, DORMANT, near), DOCS)
    assert NEAREST.answer(near, corpus) == {"value": 480, "unit": "minute"}  # LIMIT's answer
    assert passes(near, NEAREST.answer(near, corpus))


def test_the_hold_out_is_apart_from_the_registry_and_audits_knowledge_tasks_only() -> None:
    assert not {s.name for s in HOLDOUT} & {s.name for s in registry()}
    point = task("p", {"value": 1.0}, "What was the rate?", "point_query")
    table = holdout_audit([LIMIT, REVIEW, DORMANT, point], DOCS)
    (cell,) = table.cells
    assert (cell.analysis_type, cell.tasks, table.strategies) == ("knowledge_retrieval", 3, 3)
    assert cell.best_passed == 2  # BM25 finds 480 and 7 (the review)


def test_an_audit_written_before_the_hold_out_was_stored_loads_and_says_not_measured(capsys: Any) -> None:
    from dibench.cli.common import print_shortcut_audit
    from dibench.generation.shortcuts.audit import ShortcutAudit, audit, holdout_rows
    from dibench.service.report import render_holdout

    table = audit([LIMIT, REVIEW, DORMANT], CORPUS, registry())
    old = json.loads(table.model_dump_json())
    old.pop("holdout")  # as a run, an export manifest or a shortcuts.json of an older version holds it
    loaded = ShortcutAudit.model_validate(old)
    assert loaded.holdout is None and "not measured" in str(holdout_rows(loaded))
    print_shortcut_audit(old)
    assert "hold-out strategies, never used to admit anything: not measured" in capsys.readouterr().out
    assert "not measured" in render_holdout(loaded)
    # measured: its own table beside the audit, with no admission verdict
    measured = table.model_copy(update={"holdout": holdout_audit([LIMIT, REVIEW, DORMANT], DOCS)})
    again = ShortcutAudit.model_validate_json(measured.model_dump_json())
    assert again.holdout == measured.holdout
    (row,) = holdout_rows(again)
    assert row[:4] == ["knowledge_retrieval", "K", "standard", "3"] and len(row) == 8
    print_shortcut_audit(again)
    out = capsys.readouterr().out
    assert "hold-out strategies, never used to admit anything" in out and "not measured" not in out
    assert "<table>" in render_holdout(again) and "never used to admit anything" in render_holdout(again)
    # no knowledge task: said so, not "not measured"
    empty = table.model_copy(update={"holdout": holdout_audit([], DOCS)})
    assert holdout_rows(empty) == "no knowledge tasks to measure"
