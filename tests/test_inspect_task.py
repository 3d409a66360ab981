"""The Inspect AI task (evaluation/inspect_task.py) run by Inspect itself with its mock model:
the dataset is an export's private records, the model sees only the public view, its tool calls
run through the harness's Toolbox on the real Postgres, and the scorer is dibench's contracts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dibench.evaluation.tasks import TaskRecord, write_tasks_jsonl
from tests.fixtures.evaldomain import EvalDomain, eval_domain, tasks  # noqa: F401 - fixtures

inspect_ai = pytest.importorskip("inspect_ai")
ROOT = Path(__file__).resolve().parents[1]
TASK_FILE = ROOT / "evaluation" / "inspect_task.py"


def _export(tasks: list[TaskRecord], tmp_path: Path, n: int) -> tuple[Path, list[TaskRecord]]:  # noqa: F811
    chosen = [t for t in tasks if t.variant == "standard" and (t.gold_sql or t.analysis_type == "knowledge_retrieval")]
    chosen = chosen[:n]
    export = tmp_path / "export" / "data"
    export.mkdir(parents=True)
    write_tasks_jsonl(chosen, export / "private.jsonl")
    return export.parent, chosen


def test_inspect_runs_the_task_with_the_mock_model(eval_domain: EvalDomain, tasks: list[TaskRecord],  # noqa: F811
                                                   tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessageTool, ModelOutput, get_model

    from dibench.evaluation.inspect_task import dibench

    export, chosen = _export(tasks, tmp_path, 4)
    by_question = {t.question: t for t in chosen}
    seen_inputs: list[str] = []

    def scripted(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        user = next(m for m in messages if m.role == "user")
        seen_inputs.append(user.text)
        task = by_question[user.text.removeprefix("Question: ").rsplit("\n\nAnswer format:", 1)[0]]
        results = [m for m in messages if isinstance(m, ChatMessageTool)]
        if task.gold_sql and not results:
            return ModelOutput.for_tool_call("mockllm/model", "sql_query", {"sql": task.gold_sql,
                                                                            "params": task.params})
        if task.gold_sql:
            assert '"row_count"' in results[0].text  # the real query ran through the Toolbox
        # the first task's answer has the wrong shape for any task (a knowledge task's value may be a name)
        answer = task.gold_answer if task.task_id != chosen[0].task_id else {"wrong": "shape"}
        return ModelOutput.from_content("mockllm/model", f"```json\n{json.dumps(answer)}\n```")

    [log] = inspect_eval(dibench(export=str(export)), model=get_model("mockllm/model", custom_outputs=scripted),
                         log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    scores = {s.id: s.scores["contract_scorer"] for s in log.samples or []}
    assert set(scores) == {t.task_id for t in chosen}
    assert [scores[t.task_id].value for t in chosen] == ["I", "C", "C", "C"]
    assert scores[chosen[0].task_id].explanation.startswith("malformed")
    metrics = log.results.scores[0].metrics  # type: ignore[union-attr]
    assert metrics["accuracy"].value == pytest.approx(0.75)
    for text in seen_inputs:  # the public view only
        assert all(t.gold_sql is None or t.gold_sql not in text for t in chosen)
    logged = (log.samples or [])[0]
    assert set(logged.metadata) <= {"tier", "analysis_type", "variant"}  # no private record in the log
    assert not logged.target
    assert json.dumps(chosen[1].gold_answer, sort_keys=True) not in json.dumps(
        [s.model_dump(mode="json", exclude={"scores", "output", "messages", "events"}) for s in log.samples or []])


def test_inspect_eval_command_with_the_mock_model(eval_domain: EvalDomain, tasks: list[TaskRecord],  # noqa: F811
                                                  tmp_path: Path) -> None:
    export, chosen = _export(tasks, tmp_path, 3)
    inspect = Path(sys.executable).with_name("inspect")
    res = subprocess.run([str(inspect), "eval", f"{TASK_FILE}@dibench", "-T", f"export={export}", "--model",
                          "mockllm/model", "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
                         capture_output=True, text=True, env=dict(os.environ), cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "accuracy" in out
    assert "dibench" in out
