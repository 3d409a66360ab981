"""Any program as the agent: `dibench eval --agent-cmd "python my_agent.py"`.

The command runs once per attempt, in its own process group. It reads the task's public view as
JSON on stdin ({"task_id", "question", "answer_format"}) and finds the task environment's MCP
server (streamable HTTP on loopback) in its environment: DIBENCH_MCP_URL, DIBENCH_MCP_TOKEN (a
bearer token), DIBENCH_TASK_ID. It answers either with the MCP tool submit_answer or by printing
JSON on stdout: the answer object, or {"answer": ..., "usage": {"input_tokens", "output_tokens",
"total_tokens"}} to report its tokens. Budgets: wall-clock seconds (the process group is killed),
tokens where reported, turns as the MCP tool calls of the task. A crash, a timeout or output that
is not JSON is recorded with its reason (the text itself becomes the answer, scored malformed)
and never stops the run.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any

from dibench.core.errors import ConfigError
from dibench.evaluation.agents.base import AgentRun, StopReason, Usage
from dibench.evaluation.agents.tools import Toolbox
from dibench.evaluation.environment import TaskEnvironment
from dibench.evaluation.tasks import TaskRecord, public_view

OUTPUT_LIMIT = 2000  # characters of unparsable stdout kept as the (malformed) answer


@dataclass
class CommandAgent:
    command: str
    env: TaskEnvironment
    url: str
    token: str
    max_seconds: float | None = None
    max_tokens: int | None = None
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
            code, out, err, timed_out = self._spawn(task)
        finally:
            self.env.close(task.task_id)
        usage = Usage()
        answer, problem, reported = parse_output(out)
        usage.add(reported)

        def result(reason: StopReason, detail: str, given: Any = None) -> AgentRun:
            return AgentRun(answer=given, stop_reason=reason, stop_detail=detail, turns=tools.turn,
                            tool_calls=len(tools.events), usage=usage,
                            notes=[f"stderr: {line}" for line in err.strip().splitlines()[-3:]])

        if timed_out:
            return result("budget", f"time budget ({self.max_seconds:g}s) reached; the command was killed")
        if self.max_tokens is not None and usage.total_tokens > self.max_tokens:
            return result("budget", f"token budget ({self.max_tokens}) exceeded: {usage.total_tokens} reported")
        if attempt.submitted:
            return result("answered", attempt.detail, attempt.answer)
        if code != 0:
            last = err.strip().splitlines()[-1][:200] if err.strip() else "no stderr"
            return result("error", f"the command exited with status {code}: {last}")
        if problem:
            return result("answered" if answer is not None else "no_answer", problem, answer)
        return result("answered", "answer printed on stdout", answer)

    def _spawn(self, task: TaskRecord) -> tuple[int, str, str, bool]:
        env = {**os.environ, "DIBENCH_MCP_URL": self.url, "DIBENCH_MCP_TOKEN": self.token,
               "DIBENCH_TASK_ID": task.task_id}
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        except OSError as exc:
            return 127, "", f"cannot start {self.argv[0]!r}: {exc.strerror or exc}", False
        try:
            out, err = proc.communicate(json.dumps(public_view(task)), timeout=self.max_seconds)
            return proc.returncode, out, err, False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return proc.returncode, out, err, True


def parse_output(out: str) -> tuple[Any, str, dict[str, Any] | None]:
    """(answer, problem, reported usage) from a command's stdout: its last non-blank line that is
    JSON, as the answer object or {"answer", "usage"}; text that is not JSON is kept, cut to
    OUTPUT_LIMIT, as the answer (the scorer calls it malformed)."""
    lines = [line for line in out.splitlines() if line.strip()]
    if not lines:
        return None, "the command printed no answer", None
    for line in reversed(lines):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "answer" in value and set(value) <= {"answer", "usage"}:
            usage = value.get("usage")
            counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)} \
                if isinstance(usage, dict) else {}
            return value["answer"], "", counts or None
        return value, "", None
    text = out.strip()
    return text[:OUTPUT_LIMIT], "the command's output is not JSON", None
