"""The scorer: verdicts, failure classes, run aggregates, JSONL loading and `dibench score`."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dibench.cli.main import main
from dibench.core.contracts import AnswerContract, check_answer, make_contract
from dibench.evaluation.scoring import RecordFileError, TaskRecordError, load_answers, load_tasks, score_run, score_task
from dibench.evaluation.reporting_tables import wilson_pct
from tests.test_contracts import GOLD, roundings


def task(task_id: str, analysis_type: str, gold: dict[str, Any], *, tier: str = "K+A",
         base: dict[str, Any] | None = None, domain: str = "demo", rounding: int = 2,
         variant: str = "standard") -> dict[str, Any]:
    """A task record as generation writes it (private view), with fields the scorer does not read."""
    return {"task_id": task_id, "domain": domain, "analysis_type": analysis_type, "tier": tier,
            "question": "What is it?", "answer_format": "JSON", "gold_answer": gold, "base_answer": base,
            "gold_sql": "SELECT 1", "base_sql": "SELECT 1" if base is not None else None, "params": {},
            "contract": make_contract(analysis_type, gold, rounding), "metric_ids": ["m"],
            "rule_ids": ["r"] if tier == "K+A+R" else [], "variant": variant}


RULE_TASK = task("t-rule", "point_query", {"value": 71.43}, tier="K+A+R", base={"value": 62.5})


# ------------------------------------------------------------------------------ verdicts
@pytest.mark.parametrize(("answer", "passed", "failure_class", "reason"), [
    ({"value": 71.434}, True, None, "match"),
    ({"value": 62.5}, False, "rule_ignored", "matches the answer without any rule; value: expected 71.43, got 62.5"),
    ({"value": 50.0}, False, "computation_wrong", "value: expected 71.43, got 50.0 (tolerance 0.005)"),
    (None, False, "no_answer", "no answer"),
    ({"val": 71.43}, False, "malformed", "malformed: missing field 'value'"),
    ([71.43], False, "malformed", "malformed: answer is a list, expected a JSON object"),
])
def test_rule_task_verdicts(answer: Any, passed: bool, failure_class: str | None, reason: str) -> None:
    verdict = score_task(RULE_TASK, answer)
    assert (verdict.task_id, verdict.passed, verdict.failure_class) == ("t-rule", passed, failure_class)
    assert verdict.reason.startswith(reason)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("answer", "reason"), [
    ({"value": 10**400}, "malformed: the answer holds a number too large to compare"),
    ({"value": -10**400}, "malformed: the answer holds a number too large to compare"),
    ({"value": float("inf")}, "malformed: the answer holds a number that is not finite"),
    ({"value": _nested(100)}, "malformed: the answer holds nested deeper than 32 levels"),
    ({"value": "<an integer of 5001 digits>"}, "malformed: value is a string, expected a number"),
    ({"value": {"a": [1]}}, "malformed: value is an object, expected a number"),
])
def test_an_answer_the_scorer_cannot_compare_is_malformed(answer: Any, reason: str) -> None:
    verdict = score_task(RULE_TASK, answer)
    assert (verdict.passed, verdict.failure_class) == (False, "malformed")
    assert verdict.reason.startswith(reason)


def test_one_uncomparable_answer_leaves_the_rest_of_the_run_scored(tmp_path: Path) -> None:
    tasks = [RULE_TASK, task("t-2", "point_query", {"value": 3.0})]
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"task_id": "t-rule", "answer": {"value": 10**400}}) + "\n"
                    + '{"task_id": "t-2", "answer": {"value": ' + "9" * 5001 + '}}\n')
    answers = load_answers(path)
    assert answers["t-2"] == {"value": "<an integer of 5001 digits>"}
    report = score_run(tasks, answers)
    assert report.failure_classes["malformed"] == 2
    assert score_run(tasks, {"t-rule": {"value": 71.43}, "t-2": {"value": 3}}).overall.passed == 2


def test_wrong_answer_without_rule_is_not_classified_as_rule_ignored() -> None:
    plain = task("t-plain", "point_query", {"value": 71.43}, tier="K+A")
    assert score_task(plain, {"value": 62.5}).failure_class == "wrong_answer"
    no_base = {**RULE_TASK, "base_answer": None}
    assert score_task(no_base, {"value": 62.5}).failure_class == "wrong_answer"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(set(GOLD) - {"knowledge_retrieval"})), roundings, st.data())
def test_rule_ignored_iff_answer_matches_base(analysis_type: str, rounding: int, data: st.DataObject) -> None:
    gold = data.draw(GOLD[analysis_type](rounding))
    base = data.draw(GOLD[analysis_type](rounding))
    other = data.draw(GOLD[analysis_type](rounding))
    contract = AnswerContract.model_validate(make_contract(analysis_type, gold, rounding))
    # The counterfactual filter keeps only rule tasks whose gold differs from the base answer.
    assume(not check_answer(contract, gold, base).passed)
    record = task("t", analysis_type, gold, tier="K+A+R", base=base, rounding=rounding)
    assert score_task(record, copy.deepcopy(gold)).passed
    assert score_task(record, copy.deepcopy(base)).failure_class == "rule_ignored"
    verdict = score_task(record, other)
    if not check_answer(contract, gold, other).passed:
        expected = "rule_ignored" if check_answer(contract, base, other).passed else "computation_wrong"
        assert verdict.failure_class == expected


def test_unscorable_task_names_task_and_field() -> None:
    broken = {**RULE_TASK, "base_answer": {"value": "62.5"}}
    with pytest.raises(TaskRecordError, match=r"task t-rule: .*base_answer: value is a string"):
        score_task(broken, {"value": 1.0})
    mismatched = {**RULE_TASK, "analysis_type": "decomposition"}
    with pytest.raises(TaskRecordError, match="contract is for point_query, task is decomposition"):
        score_task(mismatched, {"value": 1.0})
    with pytest.raises(TaskRecordError, match="task t-rule: tier"):
        score_task({**RULE_TASK, "tier": "R"}, {"value": 1.0})


# ------------------------------------------------------------------------------ run aggregates
def demo_run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    tasks = [
        task("k1", "knowledge_retrieval", {"text": "Neutral 3-star reviews are excluded.", "must_include": ["3-star"]},
             tier="K", domain="shop"),
        task("a1", "ranking", {"k": 2, "rows": [{"group": "SP", "value": 9.0}, {"group": "RJ", "value": 8.0}]},
             domain="shop"),
        task("r1", "threshold_crossing", {"value": 91.0, "threshold": 90.0, "result": "PASS"}, tier="K+A+R",
             base={"value": 88.0, "threshold": 90.0, "result": "FAIL"}, domain="bank"),
        task("r2", "point_query", {"value": 1.5}, tier="K+A+R", base={"value": 2.5}, domain="bank"),
        task("r3", "point_query", {"value": 1.5}, tier="K+A+R", base={"value": 2.5}, domain="bank", variant="oracle"),
    ]
    answers = {
        "k1": {"text": "3-STAR reviews do not count"},
        "a1": {"k": 2, "rows": [{"group": "RJ", "value": 8.0}, {"group": "SP", "value": 9.0}]},
        "r1": {"value": 88.0, "threshold": 90.0, "result": "FAIL"},
        "r2": {"value": 1.5},
        "ghost": {"value": 1.0},
    }
    return tasks, answers


def test_score_run_aggregates() -> None:
    report = score_run(*demo_run())
    assert [(t.verdict.task_id, t.verdict.failure_class) for t in report.tasks] == [
        ("k1", None), ("a1", "wrong_answer"), ("r1", "rule_ignored"), ("r2", None), ("r3", "no_answer")]
    # with its 95% Wilson interval: 2 of 5 is anything from 11.8% to 76.9%
    assert report.overall.model_dump() == {"total": 5, "passed": 2, "accuracy_pct": 40.0, "ci95_low_pct": 11.76,
                                           "ci95_high_pct": 76.93}
    assert {d: (b.total, b.passed, b.accuracy_pct) for d, b in report.by_domain.items()} == {
        "bank": (3, 1, 33.33), "shop": (2, 1, 50.0)}
    assert list(report.by_tier) == ["K", "K+A", "K+A+R"]
    assert {t: (b.total, b.passed) for t, b in report.by_tier.items()} == {"K": (1, 1), "K+A": (1, 0), "K+A+R": (3, 1)}
    assert list(report.by_analysis_type) == ["knowledge_retrieval", "point_query", "ranking", "threshold_crossing"]
    assert report.by_analysis_type["point_query"].accuracy_pct == 50.0
    assert {v: b.total for v, b in report.by_variant.items()} == {"standard": 4, "oracle": 1}
    assert report.failure_classes == {"no_answer": 1, "malformed": 0, "rule_ignored": 1,
                                      "computation_wrong": 0, "wrong_answer": 1}
    assert report.unmatched_answers == ["ghost"]


# ------------------------------------------------------------------------------ JSONL files
def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_load_round_trip(tmp_path: Path) -> None:
    tasks, answers = demo_run()
    t = write_jsonl(tmp_path / "tasks.jsonl", [tasks[0], "", *tasks[1:]])
    a = write_jsonl(tmp_path / "answers.jsonl", [{"task_id": k, "answer": v} for k, v in answers.items()])
    assert [r["task_id"] for r in load_tasks(t)] == ["k1", "a1", "r1", "r2", "r3"]
    assert load_answers(a) == answers


@pytest.mark.parametrize(("lines", "message"), [
    ([RULE_TASK, "{not json"], ":2: not valid JSON"),
    ([RULE_TASK, "", "[1, 2]"], ":3: a task record must be a JSON object"),
    ([{k: v for k, v in RULE_TASK.items() if k != "contract"}], ":1: task t-rule: contract: Field required"),
    ([RULE_TASK, RULE_TASK], ":2: task t-rule repeats line 1"),
    ([{**RULE_TASK, "gold_answer": {"value": 1.0, "units": "%"}}], ":1: task t-rule: point_query gold_answer: field(s) units"),
    ([], ":0: no task records"),
])
def test_task_file_errors_name_file_and_line(tmp_path: Path, lines: list[Any], message: str) -> None:
    path = write_jsonl(tmp_path / "tasks.jsonl", lines)
    with pytest.raises(RecordFileError) as info:
        load_tasks(path)
    assert str(info.value).startswith(f"{path}{message}")


@pytest.mark.parametrize(("lines", "message"), [
    ([{"task_id": "a", "answer": {}}, "nope"], ":2: not valid JSON"),
    ([{"task_id": "a"}], ":1: answer: Field required"),
    ([{"task_id": "a", "answer": {}, "trace": []}], ":1: trace: Extra inputs are not permitted"),
    ([{"task_id": "a", "answer": 1}, {"task_id": "a", "answer": 2}], ":2: task a repeats line 1"),
    (["[]"], ":1: record: Input should be a valid dictionary"),
])
def test_answer_file_errors_name_file_and_line(tmp_path: Path, lines: list[Any], message: str) -> None:
    path = write_jsonl(tmp_path / "answers.jsonl", lines)
    with pytest.raises(RecordFileError) as info:
        load_answers(path)
    assert str(info.value).startswith(f"{path}{message}")


# ------------------------------------------------------------------------------ CLI
@pytest.fixture()
def run_files(tmp_path: Path) -> tuple[Path, Path]:
    tasks, answers = demo_run()
    return (write_jsonl(tmp_path / "tasks.jsonl", tasks),
            write_jsonl(tmp_path / "answers.jsonl", [{"task_id": k, "answer": v} for k, v in answers.items()]))


def test_cli_score_tables(run_files: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(main, ["score", *map(str, run_files)], terminal_width=200)
    assert result.exit_code == 0, result.output
    for title in ("verdicts", "by domain", "by analysis type", "by knowledge tier", "failure classes"):
        assert title in result.output
    assert "rule_ignored" in result.output
    assert "40.0" in result.output
    assert "ghost" in result.output


def test_cli_score_json_and_output_file(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.json"
    result = CliRunner().invoke(main, ["score", *map(str, run_files), "--json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # a note on stderr says why chance levels are absent
    assert printed == json.loads(out.read_text())
    assert printed["overall"] == {"total": 5, "passed": 2, "accuracy_pct": 40.0, "ci95_low_pct": 11.76,
                                  "ci95_high_pct": 76.93}
    assert printed["tasks"][2]["verdict"]["failure_class"] == "rule_ignored"


def test_cli_score_bad_file_is_one_line_error(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"task_id": "a", "answer": {}}, "oops"])
    result = CliRunner().invoke(main, ["score", str(run_files[0]), str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:2: not valid JSON" in result.output


def _commands(group: click.Command, prefix: str = "dibench") -> list[tuple[str, click.Command]]:
    found = [(prefix, group)]
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            found += _commands(sub, f"{prefix} {name}")
    return found


def test_every_command_has_help_text() -> None:
    commands = _commands(main)
    assert "dibench score" in dict(commands)
    missing = [name for name, cmd in commands if not (cmd.help or getattr(cmd.callback, "__doc__", None) or "").strip()]
    assert missing == []


@pytest.mark.parametrize(("passed", "total", "interval"), [
    (30, 30, (88.65, 100.0)), (0, 30, (0.0, 11.35)), (15, 30, (33.15, 66.85)), (2, 5, (11.76, 76.93)),
    (0, 0, (0.0, 100.0)),  # no task: nothing is known
])
def test_wilson_interval(passed: int, total: int, interval: tuple[float, float]) -> None:
    assert wilson_pct(passed, total) == interval
    low, high = interval
    assert 0.0 <= low <= (100.0 * passed / total if total else 0.0) <= high <= 100.0
