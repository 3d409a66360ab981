"""`dibench mcp`: one MCP server session is one evaluation run.

The session holds the selected tasks (served by `evaluation.mcp_start`) and records each submission as
the built-in harness records an attempt (`RunFiles`: answers.jsonl, trace.jsonl with the task's
tool events), then rescores the run, so score.json and summary.json are current after every
submission and `dibench report --results DIR` shows the run like any other. When the session
ends (stdin closed, Ctrl-C), a task worked on but never answered is recorded as no answer.
"""
from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dibench.evaluation.agents.base import AgentRun
from dibench.evaluation.agents.tools import schema_description
from dibench.evaluation.environment import Attempt, TaskEnvironment
from dibench.evaluation.harness import AgentInfo, EvalResult, finish_run, select_tasks, trace_row
from dibench.evaluation.kb import load_knowledge_base
from dibench.evaluation.run_files import RunFiles
from dibench.evaluation.tasks import TaskRecord, domain_schema, load_tasks
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse


@dataclass(frozen=True)
class SessionOptions:
    domain: str
    out_dir: Path
    run: str | None = None
    variants: Sequence[str] | None = None
    limit: int | None = None
    task_ids: Sequence[str] | None = None
    max_turns: int = 20
    agent_name: str = "mcp"


class Session:
    """The run behind one server: the environment, its files, and rescoring after each submission."""

    def __init__(self, tasks: Sequence[TaskRecord], env_args: dict[str, object], opts: SessionOptions) -> None:
        self.opts = opts
        self.tasks = list(tasks)
        self.info = AgentInfo(opts.agent_name, f"mcp-client:{opts.agent_name}")
        self.files = RunFiles(opts.out_dir, {"agent": opts.agent_name, "model": self.info.model,
                                             "domain": opts.domain, "run": opts.run, "trials": 1,
                                             "task_ids": [t.task_id for t in tasks], "max_turns": opts.max_turns})
        self.started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self.env = TaskEnvironment(tasks, max_turns=opts.max_turns, on_submit=self.record, **env_args)  # type: ignore[arg-type]
        self.env.score = self.score
        self.result: EvalResult | None = None

    def score(self) -> dict[str, Any]:
        """The run's score as scored after the last submission."""
        with self._lock:
            s = (self.result or self.finish()).summary
        return {"passed": s.passed, "tasks": s.tasks, "accuracy_pct": s.accuracy_pct}

    def record(self, attempt: Attempt, stop: str = "answered") -> None:
        run = AgentRun(answer=attempt.answer if attempt.submitted else None,
                       stop_reason="answered" if attempt.submitted else "no_answer",  # type: ignore[arg-type]
                       stop_detail=attempt.detail or stop, turns=attempt.tools.turn,
                       tool_calls=len(attempt.tools.events))
        row = trace_row(attempt.task, self.info, run, attempt.tools, time.perf_counter() - attempt.started)
        with self._lock:
            self.files.record(attempt.task.task_id, 1, run.answer, row)
            self.finish()

    def finish(self) -> EvalResult:
        self.result = finish_run(self.files, self.tasks, self.info, domain=self.opts.domain, run=self.opts.run,
                                 variants=sorted(set(self.opts.variants or ("standard", "oracle", "no_rule"))),
                                 max_turns=self.opts.max_turns, trials=1, started_at=self.started_at,
                                 wall=time.perf_counter() - self.t0)
        return self.result

    def close(self) -> EvalResult:
        """Record the tasks still open as unanswered, and score the run."""
        for task_id in list(self.env.attempts):
            attempt = self.env.close(task_id)
            if attempt is not None and not attempt.submitted:
                self.record(attempt, "the session ended before an answer was submitted")
        with self._lock:
            return self.finish()


def open_session(graph: Graph, wh: Warehouse, opts: SessionOptions) -> Session:
    db_schema = domain_schema(graph, opts.domain)
    tasks = select_tasks(load_tasks(graph, opts.domain, run=opts.run, variants=opts.variants), opts.task_ids,
                         opts.limit)
    env_args = {"wh": wh.for_schema(db_schema), "kb": load_knowledge_base(graph, opts.domain),
                "schema_text": lambda: schema_description(wh, db_schema), "db_schema": db_schema}
    return Session(tasks, env_args, opts)
