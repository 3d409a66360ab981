"""What bounds a request, over HTTP against the stub server: max_tokens on every request (the
stage's limit, or what the context leaves), the prompt counted by the server's own tokenizer route
where it has one (else estimated with tool definitions), a prompt leaving too little refused
before it is sent, bounded retry prompts, cut-off replies named as such, timeouts not retried, and
the agent trimming old tool results to fit its context."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from dibench.core.config import get_settings
from dibench.core.errors import ExtractionError
from dibench.evaluation.agents.context import TRIMMED, fit_context
from dibench.generation.questions import PhrasedQuestion
from dibench.stores import llm as llm_mod
from dibench.stores.llm import ContextOverflow, LLMError, ask_structured, call, configured_model, prompt_size
from tests.llm_stub import Raw, StubServer, openai_settings, stub, stub_server, tool_call  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(120)
QUESTION = json.dumps({"question": "What was the first response time in March 2024?"})


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch, stub: StubServer, tmp_path: Path) -> Iterator[None]:  # noqa: F811
    with openai_settings(monkeypatch, stub, DIBENCH_LLM_BACKOFF_S="0.01", DIBENCH_LLM_RETRIES="2",
                         DIBENCH_LLM_CONTEXT="1200", DIBENCH_LLM_MAX_TOKENS="512"):
        yield


def model() -> Any:
    m = configured_model()
    assert m is not None
    return m


def test_max_tokens_is_what_the_counted_prompt_leaves(stub: StubServer) -> None:  # noqa: F811
    stub.count_tokens = lambda body: 1000
    stub.then("hi", "hi")
    call(model(), [HumanMessage("hello")], where="w", stage="s")
    call(model(), [HumanMessage("hello")], where="w", stage="s", reply_tokens=100)
    assert [r["max_tokens"] for r in stub.requests] == [200, 100]
    assert "max_completion_tokens" not in stub.requests[0]
    assert llm_mod.session().prompt_tokens["s"] == 2000  # the server's count, not the estimate


def test_a_prompt_that_leaves_too_little_is_refused_before_it_is_sent(stub: StubServer) -> None:  # noqa: F811
    stub.count_tokens = lambda body: 1190
    with pytest.raises(ContextOverflow, match=r"^w: the prompt has 1190 tokens \(counted by the server\), which "
                                              r"leaves 10 of DIBENCH_LLM_CONTEXT=1200 for the reply; it needs at least 32$"):
        call(model(), [HumanMessage("hello")], where="w", stage="s")
    assert stub.requests == []


def test_without_a_tokenizer_route_tools_count_in_the_estimate(stub: StubServer) -> None:  # noqa: F811
    tools = [{"type": "function", "function": {"name": "t", "description": "x" * 3200, "parameters": {}}}]
    bound = model().bind_tools(tools)
    size, counted = prompt_size(bound, [HumanMessage("hello")])
    assert not counted
    assert size > 800  # 3,200 characters of tool definition
    stub.then("hi")
    call(bound, [HumanMessage("hello")], where="w", stage="s")
    assert stub.requests[0]["max_tokens"] == 1200 - size


def test_retries_show_only_the_previous_attempt(stub: StubServer) -> None:  # noqa: F811
    stub.then('{"question": "short"}', '{"question": "tiny"}', QUESTION)
    got = ask_structured(model(), "system", "user", PhrasedQuestion, where="w", stage="phrase", reply_tokens=150)
    assert got.question.startswith("What was")
    assert [len(r["messages"]) for r in stub.requests] == [2, 4, 4]
    assert all(r["max_tokens"] <= 150 for r in stub.requests)
    assert "tiny" in stub.requests[2]["messages"][2]["content"]
    assert "short" not in json.dumps(stub.requests[2])


def test_a_reply_cut_at_its_token_limit_says_so(stub: StubServer) -> None:  # noqa: F811
    cut = {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
           "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant",
                                                                          "content": '{"question": "What was the'}}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 150, "total_tokens": 160}}
    stub.default = Raw(200, cut)
    with pytest.raises(ExtractionError, match=r"the reply was cut off at its token limit \(no JSON object"):
        ask_structured(model(), "system", "user", PhrasedQuestion, where="w", stage="phrase", retries=1)


def test_a_timeout_is_not_retried(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("DIBENCH_LLM_TIMEOUT_S", "0.5")
    get_settings.cache_clear()

    def slow(body: dict[str, Any]) -> str:
        time.sleep(1.5)
        return "late"

    stub.default = slow
    with pytest.raises(LLMError, match=r"^w: LLM request timed out after DIBENCH_LLM_TIMEOUT_S=0.5s .*not retried$"):
        call(model(), [HumanMessage("hello")], where="w", stage="s")
    assert len(stub.requests) == 1


def test_old_tool_results_are_trimmed_first_to_fit_the_context(stub: StubServer) -> None:  # noqa: F811
    big = "x" * 2400  # ~600 tokens each
    messages: list[Any] = [SystemMessage("system"), HumanMessage("question")]
    for n in range(3):
        messages += [AIMessage(content="", tool_calls=[{"name": "sql_query", "args": {"sql": f"SELECT {n}"},
                                                         "id": f"c{n}"}]),
                     ToolMessage(f"result {n} {big}", tool_call_id=f"c{n}")]
    bound = model()
    done = fit_context(bound, messages, context=1200, reserve=200)
    size, _ = prompt_size(bound, messages)
    assert size + 200 <= 1200
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    assert done >= 2
    assert TRIMMED in str(tools[0].content)
    assert TRIMMED in str(tools[1].content)
    assert str(tools[0].content).startswith("result 0 ")  # the opening is kept
    assert len(str(tools[2].content)) > len(str(tools[0].content))  # the newest result keeps the most


def test_the_agent_answers_on_its_last_turn_and_refuses_repeated_calls(stub: StubServer, tmp_path: Path) -> None:  # noqa: F811
    from dibench.evaluation.agents.llm import LlmAgent

    agent = LlmAgent(model(), "schema", max_turns=3)
    stub.then(tool_call("search_knowledge", query="x"), tool_call("search_knowledge", query="x"),
              tool_call("final_answer", answer={"value": 1}))

    class Tools:
        turn = 0
        events: list[dict[str, Any]] = []
        wh = SimpleNamespace(display_name="PostgreSQL")  # the engine the SQL tool's description names

        def call_tool(self, name: str, args: dict[str, Any]) -> str:
            return "result"

        def refuse(self, name: str, args: dict[str, Any], problem: str) -> str:
            return f"error: {problem}"

    from dibench.evaluation.tasks import TaskRecord

    task = TaskRecord(task_id="t", domain="d", analysis_type="point_query", tier="K+A", variant="standard",
                      question="q?", answer_format="JSON", gold_answer={"value": 1}, base_answer=None, gold_sql=None,
                      base_sql=None, params={}, base_params={}, contract={}, metric_ids=[], rule_ids=[], facts={})
    run = agent.run(task, Tools())  # type: ignore[arg-type]
    assert run.answer == {"value": 1}
    assert stub.requests[2]["messages"][-1]["content"].startswith("error: you made this exact call at turn 1")
    assert [t["function"]["name"] for t in stub.requests[2]["tools"]] == ["final_answer"]
    assert len(stub.requests[0]["tools"]) == 4
