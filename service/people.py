"""The human baseline: a person answers tasks in the review app's blind mode, and the answers
become an evaluation run like any agent's.

Each person's run of a domain is a normal `dibench eval` output folder (evaluation/run_files.py)
with agent name `people` and the person's name as the model: `answers.jsonl` and `trace.jsonl`
attempt by attempt (the trace holds the person's SQL queries, searches and documents read, and
the seconds spent), then `score.json` and `summary.json` scored by the same contracts as every
agent (harness.finish_run). The folder is listed in the run index, so `dibench report` shows the
person beside the agents. The folder's name carries a digest of the queue, so a changed queue
starts a new run instead of resuming one whose task list differs.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dibench.evaluation.agents.base import AgentRun
from dibench.evaluation.agents.tools import Toolbox, jsonable
from dibench.evaluation.harness import AgentInfo, finish_run, trace_row
from dibench.evaluation.run_files import RunFiles
from dibench.evaluation.tasks import TaskRecord
from dibench.service import run_index

AGENT = "people"


def run_folder(state_dir: Path, domain: str, person: str, task_ids: Sequence[str]) -> Path:
    digest = hashlib.sha256("\n".join(task_ids).encode()).hexdigest()[:10]
    return state_dir / "people" / domain / f"{person}-{digest}"


class PeopleRun:
    """One person's blind run over one queue of tasks; thread-safe."""

    def __init__(self, state_dir: Path, domain: str, person: str, tasks: Sequence[TaskRecord]) -> None:
        self.domain, self.person, self.tasks = domain, person, list(tasks)
        self.state_dir = state_dir
        self.folder = run_folder(state_dir, domain, person, [t.task_id for t in self.tasks])
        manifest = {"agent": AGENT, "model": person, "domain": domain, "run": None, "trials": 1,
                    "task_ids": [t.task_id for t in self.tasks], "max_turns": 0}
        self.files = RunFiles(self.folder, manifest, resume=(self.folder / "run.json").is_file())
        self.started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def answered(self) -> set[str]:
        return {task for task, _trial in self.files.done}

    def record(self, task: TaskRecord, answer: Any, tools: Toolbox, seconds: float) -> None:
        """Keep the person's answer and what they looked at, then score the run so far."""
        result = AgentRun(answer=jsonable(answer), stop_reason="answered", stop_detail="submitted in the browser",
                          turns=len(tools.events) + 1, tool_calls=len(tools.events))
        with self._lock:
            if (task.task_id, 1) in self.files.done:
                return  # one answer per task: the first submission stands
            self.files.record(task.task_id, 1, result.answer,
                              trace_row(task, AgentInfo(AGENT, self.person), result, tools, seconds))
            finish_run(self.files, self.tasks, AgentInfo(AGENT, self.person), domain=self.domain, run=None,
                       variants=["standard"], max_turns=0, trials=1, started_at=self.started_at,
                       wall=time.perf_counter() - self.started)
            run_index.record(self.state_dir, self.folder)
