"""A langchain-core chat model with tool calling as the agent.

The model sees the schema (system prompt) and the task's public view only (question and answer
format). Each turn is one model call; its tool calls run through the Toolbox and come back as
ToolMessages. The first `final_answer` call ends the task and its `answer` is recorded as given
(the scorer, not the harness, judges its shape). A model that has not answered after
`max_turns` turns stops with no answer.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from dibench.core.errors import ConfigError
from dibench.evaluation.agents.base import MAX_TURNS, AgentRun, Budget, StopReason, Usage
from dibench.core.config import get_settings
from dibench.evaluation.agents.context import fit_context
from dibench.evaluation.agents.tools import (READ_TOOL, SEARCH_TOOL, Toolbox, final_answer_tool, jsonable,
                                             sql_tool_spec)
from dibench.evaluation.tasks import TaskRecord, public_view
from dibench.stores.llm import LLM_FAILURES, messages_tokens, was_cut, call as llm_call

PROMPT_VERSION = "agent/2"

SYSTEM_PROMPT = """You are a data analyst answering a business question about the company's data.
Tools: `sql_query` runs one read-only SQL query on the database below; `search_knowledge` searches
the metric catalog (definitions, formulas, SQL templates) and the company's policy documents and
returns their opening lines; `read_document` reads one of them whole;
`final_answer` submits your answer and ends the task. Company policies can change how a metric
must be computed (which rows count, thresholds, weights, suppression of small groups): look them
up and apply them. Dates in questions describe half-open windows of whole months. Give numbers
unrounded or rounded to the catalog's decimals. You have at most {max_turns} turns.

{schema}"""

NUDGE = "Continue with a tool call; submit your answer with `final_answer` in the required format."


def at_temperature_zero(model: BaseChatModel) -> tuple[BaseChatModel, float | None]:
    """A copy of the model at temperature 0 when it has that setting; else the model, temperature unknown."""
    if "temperature" in type(model).model_fields:
        return model.model_copy(update={"temperature": 0.0}), 0.0
    return model, None


def model_name(model: BaseChatModel) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"{type(model).__name__}:{name}" if isinstance(name, str) and name else type(model).__name__


@dataclass
class LlmAgent:
    chat_model: BaseChatModel
    schema: str
    max_turns: int = MAX_TURNS
    name: str = "llm"
    prompt_version: str = PROMPT_VERSION
    budget: Budget | None = None
    model: str = field(init=False)
    temperature: float | None = field(init=False)

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, not {self.max_turns}")
        self.chat_model, self.temperature = at_temperature_zero(self.chat_model)
        self.model = model_name(self.chat_model)
        self.budget = self.budget or Budget(turns=self.max_turns)

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        view = public_view(task)
        tool_specs = [sql_tool_spec(tools.wh), SEARCH_TOOL, READ_TOOL, final_answer_tool(view["answer_format"])]
        try:
            # tool_choice: small models served by llama.cpp ignore bound tools unless told to call one.
            bound = self.chat_model.bind_tools(tool_specs, tool_choice="any")
            # The last turn offers final_answer alone: a model that keeps exploring still answers.
            last = self.chat_model.bind_tools(tool_specs[-1:], tool_choice="any")
        except NotImplementedError as exc:
            raise ConfigError(f"chat model {self.model} does not support tool calling (bind_tools)") from exc
        messages: list[BaseMessage] = [
            SystemMessage(SYSTEM_PROMPT.format(max_turns=self.max_turns, schema=self.schema)),
            HumanMessage(f"Question: {view['question']}\n\nAnswer format: {view['answer_format']}"),
        ]
        usage = Usage()
        calls = 0
        started = time.perf_counter()
        assert self.budget is not None

        def stop(reason: StopReason, detail: str, turn: int) -> AgentRun:
            return AgentRun(answer=None, stop_reason=reason, stop_detail=detail, turns=turn, tool_calls=calls,
                            usage=usage, messages=dump(messages), notes=notes)

        estimated = 0  # prompt tokens sent so far, for servers that report no usage
        settings = get_settings()
        notes: list[str] = []
        seen: dict[str, int] = {}  # each tool call made (name and arguments) -> its turn
        for turn in range(1, self.max_turns + 1):
            llm = last if turn == self.max_turns and turn > 1 else bound
            over = self.budget.exceeded(usage.total_tokens if usage.reported_turns else estimated, started)
            if over:
                return stop("budget", over, turn - 1)
            # Old tool results give way (oldest first) before the prompt outgrows the context.
            trimmed = fit_context(llm, messages, context=settings.llm_context, reserve=settings.llm_max_tokens)
            if trimmed:
                notes.append(f"turn {turn}: {trimmed} earlier tool result(s) trimmed to fit the context")
            estimated += messages_tokens(messages)
            tools.turn = turn
            try:
                reply = llm_call(llm, messages, where=f"task {task.task_id} turn {turn}", stage="agent")
            except LLM_FAILURES as exc:
                # This task ends without an answer; the run goes on with the next one.
                return stop("error", str(exc), turn)
            messages.append(reply)
            usage.add(dict(reply.usage_metadata) if reply.usage_metadata else None)
            if was_cut(reply):
                notes.append(f"turn {turn}: the reply was cut off at its token limit")
            if not reply.tool_calls:
                messages.append(HumanMessage(NUDGE))
                continue
            for call in reply.tool_calls:
                calls += 1
                if call["name"] == "final_answer" and "answer" in call["args"]:
                    answer, decoded = decode_answer(call["args"]["answer"])
                    tools.events.append({"turn": turn, "tool": "final_answer", "args": jsonable(call["args"]),
                                         "ok": True, "elapsed_s": 0.0})
                    return AgentRun(answer=answer, stop_reason="answered", stop_detail=f"final_answer at turn {turn}",
                                    turns=turn, tool_calls=calls, usage=usage, messages=dump(messages),
                                    notes=notes + decoded)
                signature = json.dumps([call["name"], call["args"]], sort_keys=True, default=str)
                if signature in seen:
                    # Small models repeat a call whose result they already have; running it again
                    # would only grow the context.
                    content = tools.refuse(call["name"], call["args"], f"you made this exact call at turn "
                                           f"{seen[signature]}; its result is above. Use it, make a different "
                                           f"call, or submit with final_answer")
                else:
                    seen[signature] = turn
                    content = tools.call_tool(call["name"], call["args"])
                messages.append(ToolMessage(content, tool_call_id=call["id"] or ""))
        return stop("no_answer", f"turn limit ({self.max_turns}) reached", self.max_turns)


def decode_answer(raw: Any) -> tuple[Any, list[str]]:
    """Models often send the answer object as a JSON string: decode that transport form only.
    Anything else is kept exactly as given for the scorer to judge."""
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError:
            return raw, []
        if isinstance(decoded, dict):
            return decoded, ["answer was sent as a JSON string and decoded"]
    return raw, []


def dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The conversation as plain JSON for the trace."""
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"type": m.type, "content": m.content}
        if isinstance(m, AIMessage):
            if m.tool_calls:
                item["tool_calls"] = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in m.tool_calls]
            if m.usage_metadata:
                item["usage"] = dict(m.usage_metadata)
        if isinstance(m, ToolMessage):
            item["tool_call_id"] = m.tool_call_id
        out.append(jsonable(item))
    return out
