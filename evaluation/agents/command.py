"""Any program as the agent: `dibench eval --agent-cmd "python my_agent.py"`.

The command runs once per attempt, in a sandbox of its own where bwrap works (evaluation/sandbox.py),
else in its own session. It reads the task's public view as JSON on stdin ({"task_id", "question",
"answer_format"}); its environment is an allow-list: PATH, HOME, LANG, DIBENCH_MCP_URL (the MCP
server, streamable HTTP on loopback), DIBENCH_MCP_TOKEN (a bearer token), DIBENCH_TASK_ID and the
variables named with --agent-env. It answers with the MCP tool submit_answer or by printing JSON on
stdout: the answer object, or {"answer": ..., "usage": {...}} to report its tokens. Budgets:
wall-clock seconds (the sandbox is killed), tokens where reported, turns as the MCP tool calls of the
task. A crash, a timeout or output that is not JSON is recorded with its reason and never stops the run.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from dibench.core.errors import ConfigError
from dibench.evaluation.agents.base import AgentRun, StopReason, Usage
from dibench.evaluation.agent_process import OUTPUT_CAP, Finished, run_bounded
from dibench.evaluation.answer_values import loads
from dibench.evaluation.agents.tools import Toolbox
from dibench.evaluation.environment import TaskEnvironment
from dibench.evaluation.sandbox import INNER_URL, Sandbox, SandboxSpec, agent_env
from dibench.evaluation.tasks import TaskRecord, public_view

OUTPUT_LIMIT = 2000  # characters of unparsable stdout kept as the (malformed) answer
NOTE_CHARS = 2000    # of each of the last stderr lines kept in the trace


@dataclass
class CommandAgent:
    command: str
    env: TaskEnvironment
    url: str
    max_seconds: float | None = None
    max_tokens: int | None = None
    sandbox: Sandbox | None = None
    spec: SandboxSpec = field(default_factory=SandboxSpec)
    extra_env: dict[str, str] = field(default_factory=dict)  # given to the command besides the allow-list
    name: str = "command"
    model: str = field(init=False)
    argv: list[str] = field(init=False)

    def __post_init__(self) -> None:
        try:
            self.argv = shlex.split(self.command)
        except ValueError as exc:
            raise ConfigError(f"--agent-cmd {self.command!r}: {exc}") from exc
        if not self.argv:
            raise ConfigError("--agent-cmd is empty")
        self.model = f"command:{self.command}"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        attempt = self.env.open(task.task_id, tools)
        try:
            done = self._spawn(task, attempt.token)
        finally:
            self.env.close(task.task_id)
        usage = Usage()
        answer, problem, reported = parse_output(done.out)
        usage.add(reported)
        notes = [f"stderr: {line[:NOTE_CHARS]}" for line in done.err.strip().splitlines()[-3:]]
        if done.out_bytes > OUTPUT_CAP or done.pipes_held:
            notes.append(f"stdout: {done.out_bytes} bytes written, the first {min(done.out_bytes, OUTPUT_CAP)} read"
                         + ("; a process the agent left kept its pipes open" if done.pipes_held else ""))

        def result(reason: StopReason, detail: str, given: Any = None) -> AgentRun:
            return AgentRun(answer=given, stop_reason=reason, stop_detail=detail, turns=tools.turn,
                            tool_calls=len(tools.events), usage=usage, notes=notes)

        if done.timed_out:
            return result("budget", f"time budget ({self.max_seconds:g}s) reached; the command was killed")
        if self.max_tokens is not None and usage.total_tokens > self.max_tokens:
            return result("budget", f"token budget ({self.max_tokens}) exceeded: {usage.total_tokens} reported")
        if attempt.submitted:
            return result("answered", attempt.detail, attempt.answer)
        if done.code != 0:
            last = done.err.strip().splitlines()[-1][:200] if done.err.strip() else "no stderr"
            return result("error", f"the command exited with status {done.code}: {last}")
        if problem:
            return result("answered" if answer is not None else "no_answer", problem, answer)
        return result("answered", "answer printed on stdout", answer)

    def _spawn(self, task: TaskRecord, token: str) -> Finished:
        sandboxed = self.sandbox is not None
        env = agent_env(self.spec, {"DIBENCH_MCP_URL": INNER_URL if sandboxed else self.url,
                                    "DIBENCH_MCP_TOKEN": token, "DIBENCH_TASK_ID": task.task_id},
                        sandboxed=sandboxed)
        env.update(self.extra_env)
        argv = self.sandbox.wrap(self.argv) if self.sandbox is not None else self.argv
        try:
            return run_bounded(argv, json.dumps(public_view(task)).encode(), env, self.max_seconds)
        except OSError as exc:
            return Finished(127, "", f"cannot start {argv[0]!r}: {exc.strerror or exc}", False, 0, 0, False)


def parse_output(out: str) -> tuple[Any, str, dict[str, Any] | None]:
    """(answer, problem, reported usage) from a command's stdout: its last non-blank line that is
    JSON, as the answer object or {"answer", "usage"}; text that is not JSON is kept, cut to
    OUTPUT_LIMIT, as the answer (the scorer calls it malformed)."""
    lines = [line for line in out.splitlines() if line.strip()]
    if not lines:
        return None, "the command printed no answer", None
    for line in reversed(lines):
        try:
            value = loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "answer" in value and set(value) <= {"answer", "usage"}:
            usage = value.get("usage")
            counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)} \
                if isinstance(usage, dict) else {}
            return value["answer"], "", counts or None
        return value, "", None
    text = out.strip()
    return text[:OUTPUT_LIMIT], "the command's output is not JSON", None
