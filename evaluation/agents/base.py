"""What every agent returns for one task, and the protocol the harness calls."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dibench.core.errors import DibenchError
from dibench.evaluation.agents.tools import Toolbox
from dibench.evaluation.tasks import TaskRecord

# error: the model call failed for good (recorded, the run goes on); budget: a per-task limit hit.
StopReason = Literal["answered", "no_answer", "error", "budget"]
MAX_TURNS = 20


@dataclass(frozen=True)
class Budget:
    """Per-task limits: turns, tokens (reported by the server, else estimated from the prompts),
    wall-clock seconds. None means no limit."""

    turns: int = MAX_TURNS
    tokens: int | None = None
    seconds: float | None = None

    def exceeded(self, tokens: int, started: float) -> str | None:
        if self.tokens is not None and tokens >= self.tokens:
            return f"token budget ({self.tokens}) reached"
        if self.seconds is not None and time.perf_counter() - started >= self.seconds:
            return f"time budget ({self.seconds:g}s) reached"
        return None


@dataclass
class Usage:
    """Token counts summed over the turns whose messages reported `usage_metadata`."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reported_turns: int = 0

    def add(self, meta: dict[str, Any] | None) -> None:
        if not meta:
            return
        self.input_tokens += int(meta.get("input_tokens") or 0)
        self.output_tokens += int(meta.get("output_tokens") or 0)
        self.total_tokens += int(meta.get("total_tokens") or 0)
        self.reported_turns += 1

    def as_dict(self) -> dict[str, int] | None:
        """None when no turn reported usage: unknown, not zero."""
        return dict(self.__dict__) if self.reported_turns else None


@dataclass
class AgentRun:
    """One agent's attempt at one task. `answer` None means no answer."""

    answer: Any
    stop_reason: StopReason
    stop_detail: str
    turns: int
    tool_calls: int
    usage: Usage = field(default_factory=Usage)
    messages: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str:
        """What answers: a reference agent's name, or the chat model's class and model name."""
        ...

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun: ...


@dataclass(frozen=True)
class Named:
    """An agent under the name its user gave it: the run's files and the report carry that name."""

    agent: Agent
    name: str

    @property
    def model(self) -> str:
        return self.agent.model

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        return self.agent.run(task, tools)


def run_one(agent: Agent, task: TaskRecord, tools: Toolbox) -> AgentRun:
    """One task; a DibenchError (e.g. a reference agent's failing SQL) ends this task only."""
    try:
        return agent.run(task, tools)
    except DibenchError as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return AgentRun(answer=None, stop_reason="error", stop_detail=detail, turns=tools.turn,
                        tool_calls=len(tools.events))
