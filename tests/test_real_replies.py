"""Real-model reply shapes without a model: a cassette recorded from Qwen2.5-Coder-1.5B-Instruct
(Q4_K_M) behind llama-server with the fenced-JSON tool template, two demo tasks at 5 turns, is
replayed over the stub server through the built-in harness's agent. The replies carry llama.cpp's
extras (`timings`, empty `content` beside `tool_calls`, arguments as JSON strings with newlines),
repeat a call they already made, and end with `final_answer` on the last turn."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dibench.evaluation.agents.llm import LlmAgent
from dibench.evaluation.tasks import TaskRecord
from dibench.stores.llm import configured_model
from tests.llm_stub import Raw, StubServer, openai_settings, stub, stub_server  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(120)
CASSETTE = Path(__file__).parent / "fixtures" / "cassettes" / "agent-qwen2.5-coder-1.5b.jsonl"
TURNS = 5


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch, stub: StubServer) -> Iterator[None]:  # noqa: F811
    with openai_settings(monkeypatch, stub, DIBENCH_LLM_CONTEXT="8192", DIBENCH_LLM_MAX_TOKENS="512"):
        yield


def entries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASSETTE.read_text(encoding="utf-8").splitlines() if line.strip()]


class Tools:
    """The environment's tool surface, answering every call the same way (the replies are fixed)."""

    turn = 0
    wh = SimpleNamespace(display_name="PostgreSQL")  # the engine the SQL tool's description names

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call_tool(self, name: str, args: dict[str, Any]) -> str:
        self.calls.append((name, args))
        return "no rows"

    def refuse(self, name: str, args: dict[str, Any], problem: str) -> str:
        return f"error: {problem}"


def task(analysis: str) -> TaskRecord:
    return TaskRecord(task_id="t", domain="demo", analysis_type=analysis, tier="K+A", variant="standard",
                      question="q?", answer_format="JSON", gold_answer={}, base_answer=None, gold_sql=None,
                      base_sql=None, params={}, base_params={}, contract={}, metric_ids=[], rule_ids=[], facts={})


def test_the_cassette_was_recorded_with_bounded_replies() -> None:
    recorded = entries()
    assert len(recorded) == 2 * TURNS
    assert all(e["status"] == 200 and e["max_tokens"] == 512 for e in recorded)
    assert all(e["response"]["choices"][0]["finish_reason"] == "tool_calls" for e in recorded)


@pytest.mark.parametrize("episode,analysis", [(0, "knowledge_retrieval"), (1, "ranking")])
def test_recorded_real_replies_drive_the_agent_to_its_answer(stub: StubServer, episode: int,  # noqa: F811
                                                             analysis: str) -> None:
    recorded = entries()[episode * TURNS:(episode + 1) * TURNS]
    stub.then(*(Raw(e["status"], e["response"]) for e in recorded))
    tools = Tools()
    run = LlmAgent(configured_model(), "schema", max_turns=TURNS).run(task(analysis), tools)  # type: ignore[arg-type]
    final = recorded[-1]["response"]["choices"][0]["message"]["tool_calls"][0]["function"]
    assert final["name"] == "final_answer"
    assert run.answer == json.loads(final["arguments"])["answer"]
    assert len(stub.requests) == TURNS
    assert all(r["max_tokens"] > 0 for r in stub.requests)
    # the first call's arguments arrive as a JSON string with newlines and are parsed as such
    first = json.loads(recorded[0]["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    assert tools.calls[0] == (recorded[0]["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
                              first)
