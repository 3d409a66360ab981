"""A command agent's output and answers cannot end the run (evaluation/agent_process.py,
evaluation/answer_values.py): invalid UTF-8, tens of MB on stdout and stderr, answers no
comparison can handle, and a detached grandchild holding the pipes past the time limit are each
that task's wrong answer, in bounded time and memory, and the run scores every task."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.evaluation.agent_process import OUTPUT_CAP, run_bounded
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401 - fixture

FLOOD = "import os; os.write(2, b'\\xff\\xfe' * 8_000_000); os.write(1, b'\\xc3(' * 16_000_000)"
ANSWERS = {
    "huge": "print('{\"value\": 1' + '0' * 400 + '}')",
    "overlong": "print('{\"value\": ' + '9' * 5001 + '}')",
    "deep": "print('{\"value\": ' + '[' * 100 + '1' + ']' * 100 + '}')",
    "deeper": "print('{\"value\": ' + '[' * 100000 + '1' + ']' * 100000 + '}')",
    "wrong-type": "print('[1, 2, 3]')",
}


def _eval(eval_domain: EvalDomain, out: Path, command: str, *args: str) -> Any:  # noqa: F811
    res = CliRunner().invoke(main, ["eval", "--domain", eval_domain.name, "--run", eval_domain.run_key,
                                    "-o", str(out), "--json", "--no-chance", "--agent-cmd", command, *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _verdicts(out: Path) -> list[dict[str, Any]]:
    return [t["verdict"] for t in json.loads((out / "score.json").read_text())["tasks"]]


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_an_answer_no_comparison_can_handle_is_that_tasks_malformed_answer(eval_domain: EvalDomain,  # noqa: F811
                                                                            tmp_path: Path, kind: str) -> None:
    summary = _eval(eval_domain, tmp_path, f"python3 -c \"{ANSWERS[kind]}\"", "--limit", "2")
    assert summary["tasks"] == 2
    assert [v["failure_class"] for v in _verdicts(tmp_path)] == ["malformed", "malformed"]


def test_invalid_utf8_and_a_flood_of_output_are_read_bounded(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    started = time.perf_counter()
    summary = _eval(eval_domain, tmp_path, f"python3 -c \"{FLOOD}\"", "--limit", "1")
    assert time.perf_counter() - started < 60
    assert summary["tasks"] == 1
    trace = json.loads((tmp_path / "trace.jsonl").read_text().splitlines()[0])
    assert trace["stop_reason"] == "answered"
    assert trace["stop_detail"] == "the command's output is not JSON"
    assert f"stdout: 32000000 bytes written, the first {OUTPUT_CAP}" in trace["notes"][-1]
    answer = json.loads((tmp_path / "answers.jsonl").read_text())["answer"]
    assert answer.startswith("\ufffd(")
    assert _verdicts(tmp_path)[0]["failure_class"] == "malformed"


def test_unsandboxed_a_grandchild_holding_the_pipes_cannot_stretch_the_time_limit() -> None:
    marker = f"dibench-pipe-holder-{os.getpid()}"
    code = f"import subprocess, time; subprocess.Popen(['setsid', 'bash', '-c', 'exec -a {marker} sleep 20']); time.sleep(20)"
    started = time.perf_counter()
    done = run_bounded(["python3", "-c", code], b"", {"PATH": "/usr/bin:/bin"}, timeout=1)
    took = time.perf_counter() - started
    subprocess.run(["pkill", "-f", marker], check=False)  # it escaped the group: this is what a sandbox is for
    assert done.timed_out
    assert done.pipes_held
    assert took < 5


FORGER = ("import json, os; out = os.environ['FORGE_OUT']; "
          "gold = [json.loads(l) for l in open(os.environ['FORGE_TASKS'])]; "
          "fh = open(out + '/answers.jsonl', 'a'); "
          "[fh.write(json.dumps({'task_id': t['task_id'], 'answer': t['gold_answer']}) + chr(10)) for t in gold]")


def test_the_score_comes_from_what_the_evaluator_received_not_from_the_files(
        eval_domain: EvalDomain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Unsandboxed, an agent can write the run folder: it appends every task's gold to answers.jsonl
    during the run; the score is still that of the answers the evaluator got (none), and the run's
    folder and files are its owner's only."""
    from dibench.evaluation.tasks import load_tasks, write_tasks_jsonl
    from dibench.stores.graph import get_graph

    private = tmp_path / "private.jsonl"
    write_tasks_jsonl(load_tasks(get_graph(), eval_domain.name, run=eval_domain.run_key), private)
    out = tmp_path / "run"
    monkeypatch.setenv("FORGE_OUT", str(out))
    monkeypatch.setenv("FORGE_TASKS", str(private))
    summary = _eval(eval_domain, out, f"python3 -c \"{FORGER}\"", "--limit", "3", "--isolation", "none",
                    "--agent-env", "FORGE_OUT", "--agent-env", "FORGE_TASKS")
    assert summary["tasks"] == 3
    assert summary["passed"] == 0
    forged = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert sum(1 for f in forged if f["answer"] is not None) >= 3  # the forgery is there, and counted for nothing
    assert out.stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == dict.fromkeys(
        ["answers.jsonl", "trace.jsonl", "run.json", "tasks.jsonl", "score.json", "summary.json",
         "shortcuts.json"], 0o600)
