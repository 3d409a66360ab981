"""The agent harness with a scripted fake chat model that makes real tool calls (SQL runs on the
real Postgres, search on the real knowledge base), the turn limit, malformed answers, the files
a run writes and the `dibench eval` command."""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from dibench.cli.main import main
from dibench.core.config import get_settings
from dibench.evaluation.agents.llm import MAX_TURNS, LlmAgent
from dibench.evaluation.agents.tools import Toolbox, schema_description
from dibench.evaluation.harness import EvalResult, run_tasks
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.tasks import TaskRecord
from dibench.stores.warehouse import Warehouse
from tests.fixtures.evaldomain import EvalDomain, eval_domain, kb, tasks  # noqa: F401  (fixtures)

USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


class ScriptedChatModel(GenericFakeChatModel):
    """Replays scripted AIMessages (tool calls included); bind_tools keeps the script."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":  # type: ignore[override]
        return self


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}], usage_metadata=USAGE)


@pytest.fixture(scope="module")
def schema(warehouse: Warehouse) -> str:
    return schema_description(warehouse, "mini")


def _point_task(tasks: list[TaskRecord]) -> TaskRecord:
    return next(t for t in tasks if t.analysis_type == "point_query" and t.tier == "K+A+R" and t.variant == "standard")


def _run(model: GenericFakeChatModel, tasks: list[TaskRecord], wh: Warehouse, kb: KnowledgeBase, schema: str,
         out: Path, max_turns: int = MAX_TURNS) -> EvalResult:
    return run_tasks(tasks, LlmAgent(model, schema, max_turns=max_turns), wh, kb, out, domain=tasks[0].domain,
                     max_turns=max_turns)


def _trace(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]


def test_scripted_agent_makes_real_sql_and_search_calls(tasks: list[TaskRecord], warehouse: Warehouse,
                                                        kb: KnowledgeBase, schema: str, tmp_path: Path) -> None:
    task = _point_task(tasks)
    rule_title = next(d.title for d in kb.documents if d.doc_id == f"rule:{task.rule_ids[0]}")
    script = [
        call("search_knowledge", {"query": rule_title, "k": 3}, 1),
        call("sql_query", {"sql": "SELECT COUNT(*) AS n FROM mini.orders WHERE amount > :limit",
                           "params": {"limit": 2000}}, 2),
        call("sql_query", {"sql": task.gold_sql, "params": task.params}, 3),
        call("final_answer", {"answer": task.gold_answer}, 4),
    ]
    result = _run(ScriptedChatModel(messages=iter(script)), [task], warehouse, kb, schema, tmp_path)
    assert result.report.overall.passed == 1
    [trace] = _trace(tmp_path)
    assert trace["stop_reason"] == "answered"
    assert (trace["turns"], trace["tool_calls"]) == (4, 4)
    assert trace["usage"] == {k: 4 * v for k, v in USAGE.items()} | {"reported_turns": 4}
    search, count, gold, final = trace["events"]
    assert search["tool"] == "search_knowledge"
    assert search["result"][0]["doc_id"] == f"rule:{task.rule_ids[0]}"
    real_count = warehouse.execute_readonly("SELECT COUNT(*) FROM mini.orders WHERE amount > 2000").rows[0][0]
    assert count["ok"] is True
    assert count["result"]["rows"] == [[real_count]]
    assert gold["result"]["row_count"] == 1
    assert abs(gold["result"]["rows"][0][0] - task.gold_answer["value"]) < 0.01
    assert final["tool"] == "final_answer"
    # The model saw the real results: the tool messages carry the rows and the document text.
    tool_messages = [m for m in trace["messages"] if m["type"] == "tool"]
    assert len(tool_messages) == 3
    assert rule_title in tool_messages[0]["content"]
    assert json.loads(tool_messages[1]["content"])["rows"] == [[real_count]]
    # The system prompt carries the schema; the human message only the public view.
    system, human = trace["messages"][0], trace["messages"][1]
    assert "- orders(" in system["content"]
    assert task.question in human["content"]
    assert task.gold_sql not in human["content"]
    assert json.loads((tmp_path / "summary.json").read_text())["tokens"]["total_tokens"] == 600


def test_model_that_never_answers_stops_at_the_turn_limit(tasks: list[TaskRecord], warehouse: Warehouse,
                                                          kb: KnowledgeBase, schema: str, tmp_path: Path) -> None:
    forever = (call("sql_query", {"sql": "SELECT 1 AS one"}, n) for n in itertools.count())
    result = _run(ScriptedChatModel(messages=forever), [_point_task(tasks)], warehouse, kb, schema, tmp_path)
    [trace] = _trace(tmp_path)
    assert trace["stop_reason"] == "no_answer"
    assert trace["stop_detail"] == f"turn limit ({MAX_TURNS}) reached"
    assert trace["turns"] == MAX_TURNS == 20
    assert len(trace["events"]) == 20
    assert json.loads((tmp_path / "answers.jsonl").read_text()) == {"task_id": trace["task_id"], "answer": None}
    assert result.report.tasks[0].verdict.failure_class == "no_answer"


def test_text_only_replies_are_nudged_and_count_as_turns(tasks: list[TaskRecord], warehouse: Warehouse,
                                                         kb: KnowledgeBase, schema: str, tmp_path: Path) -> None:
    chatter: Iterator[AIMessage] = (AIMessage(content="Let me think.") for _ in itertools.count())
    _run(ScriptedChatModel(messages=chatter), [_point_task(tasks)], warehouse, kb, schema, tmp_path, max_turns=3)
    [trace] = _trace(tmp_path)
    assert (trace["stop_reason"], trace["turns"], trace["tool_calls"]) == ("no_answer", 3, 0)
    assert trace["usage"] is None  # nothing reported: unknown, not zero
    assert sum(1 for m in trace["messages"] if m["type"] == "human") == 1 + 3


def test_malformed_final_answer_is_scored_malformed(tasks: list[TaskRecord], warehouse: Warehouse,
                                                    kb: KnowledgeBase, schema: str, tmp_path: Path) -> None:
    task = _point_task(tasks)
    script = [call("final_answer", {"answer": {"value": "about forty"}}, 1)]
    result = _run(ScriptedChatModel(messages=iter(script)), [task], warehouse, kb, schema, tmp_path)
    verdict = result.report.tasks[0].verdict
    assert verdict.failure_class == "malformed"
    assert verdict.reason == "malformed: value is a string, expected a number or null"
    assert json.loads((tmp_path / "answers.jsonl").read_text())["answer"] == {"value": "about forty"}


def test_answer_sent_as_json_text_is_decoded_and_noted(tasks: list[TaskRecord], warehouse: Warehouse,
                                                       kb: KnowledgeBase, schema: str, tmp_path: Path) -> None:
    task = _point_task(tasks)
    script = [call("final_answer", {"answer": json.dumps(task.gold_answer)}, 1)]
    result = _run(ScriptedChatModel(messages=iter(script)), [task], warehouse, kb, schema, tmp_path)
    assert result.report.overall.passed == 1
    assert _trace(tmp_path)[0]["notes"] == ["answer was sent as a JSON string and decoded"]


def test_tool_errors_go_back_to_the_model(tasks: list[TaskRecord], warehouse: Warehouse, kb: KnowledgeBase,
                                          schema: str, tmp_path: Path) -> None:
    script = [
        call("sql_query", {"sql": "DELETE FROM mini.orders"}, 1),
        call("sql_query", {"sql": "SELECT no_such_column FROM mini.orders"}, 2),
        call("sql_query", {"sql": "SELECT COUNT(*) FROM mini.orders WHERE amount > :cut"}, 3),  # no params
        call("search_knowledge", {"query": "revenue", "k": 99}, 4),
        call("drop_tables", {}, 5),
        call("final_answer", {"value": 1}, 6),  # no `answer` object: a bad call, not an answer
        call("final_answer", {"answer": {"value": None}}, 7),
    ]
    _run(ScriptedChatModel(messages=iter(script)), [_point_task(tasks)], warehouse, kb, schema, tmp_path)
    [trace] = _trace(tmp_path)
    assert [e["ok"] for e in trace["events"]] == [False, False, False, False, False, False, True]
    replies = [m["content"] for m in trace["messages"] if m["type"] == "tool"]
    assert replies[0].startswith("error: refused DELETE")
    assert "no_such_column" in replies[1]
    assert "A value is required for bind parameter 'cut'" in replies[2]
    assert "integer 1..10" in replies[3]
    assert "unknown tool 'drop_tables'" in replies[4]
    assert "needs an `answer` object" in replies[5]
    assert trace["stop_reason"] == "answered"
    assert warehouse.execute_readonly("SELECT COUNT(*) FROM mini.orders").rows[0][0] > 0


def test_toolbox_truncates_rows_for_the_model(warehouse: Warehouse, kb: KnowledgeBase) -> None:
    tools = Toolbox(warehouse, kb, row_limit=5)
    out = json.loads(tools.sql_tool({"sql": "SELECT order_id FROM mini.orders ORDER BY order_id"}))
    assert len(out["rows"]) == 5
    assert out["truncated"] is True
    assert out["row_count"] > 1000


def test_eval_command_writes_answers_traces_and_scores(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "oracle"
    res = CliRunner().invoke(main, ["eval", "--agent", "oracle", "--domain", eval_domain.name, "--run",
                                    eval_domain.run_key, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "= 100.00%" in res.output
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert answers
    assert all(set(a) == {"task_id", "answer"} for a in answers)
    assert len(_trace(out)) == len(answers)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["agent"], summary["run"], summary["accuracy_pct"]) == ("oracle", eval_domain.run_key, 100.0)
    # `dibench score` on the written files reproduces the run's score.
    scored = CliRunner().invoke(main, ["score", str(out / "tasks.jsonl"), str(out / "answers.jsonl"), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)["overall"] == json.loads((out / "score.json").read_text())["overall"]


def test_eval_command_variant_filter_and_limit(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    res = CliRunner().invoke(main, ["eval", "--agent", "no-rule", "--domain", eval_domain.name, "--variant",
                                    "no_rule", "--limit", "5", "-o", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert (summary["tasks"], summary["accuracy_pct"], summary["variants"]) == (5, 100.0, ["no_rule"])


def test_llm_agent_without_a_configured_model_is_a_clear_error(eval_domain: EvalDomain,  # noqa: F811
                                                               tmp_path: Path) -> None:
    if get_settings().llm_provider:
        pytest.skip("an LLM provider is configured in this environment")
    res = CliRunner().invoke(main, ["eval", "--agent", "llm", "--domain", eval_domain.name, "-o", str(tmp_path)])
    assert res.exit_code == 1
    assert "agent llm needs a chat model, and none is configured" in res.output
    assert "DIBENCH_LLM_PROVIDER" in res.output


def test_unknown_domain_is_a_clear_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["eval", "--agent", "oracle", "--domain", "no_such_domain_x", "-o", str(tmp_path)])
    assert res.exit_code == 1
    assert "domain 'no_such_domain_x' is not in the graph" in res.output


def test_eval_commands_have_help() -> None:
    for args in (["eval"], ["ablation", "pairing"], ["ablation", "variants"], ["report"]):
        res = CliRunner().invoke(main, [*args, "--help"])
        assert res.exit_code == 0
        assert len(res.output.split("\n\n")[1].strip()) > 20
