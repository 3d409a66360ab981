"""The task environment an outside agent works in: the built-in harness's tools, per task.

A `TaskEnvironment` holds one evaluation run's tasks and serves, for each task, exactly what the
built-in harness gives its agent, through the same `Toolbox` methods: the schema description,
read-only SQL as the domain's role, knowledge-base search and reading, the task's public view, and
one answer submission. Each call but `describe_schema` is one turn of its task, and a task has
`max_turns` of them (its submission included). The command runner `open`s each attempt, which
gets a token of its own: a call with it acts on that attempt's task only (list_tasks shows that
task alone), and the token is dead once `close` ends the attempt. The `dibench mcp` session
(`autostart`) names tasks by id instead; an attempt starts at its first call, and an oracle task
(whose question quotes its rule) is withheld while its standard twin is open. Thread-safe.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dibench.evaluation.agents.tools import Toolbox, jsonable
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.tasks import TaskRecord, public_view
from dibench.evaluation.tool_contract import TaskStatus, ToolRefused
from dibench.stores.warehouse import Warehouse

__all__ = ["Attempt", "OnSubmit", "TaskEnvironment", "TaskStatus", "ToolRefused"]


@dataclass
class Attempt:
    task: TaskRecord
    tools: Toolbox
    started: float = field(default_factory=time.perf_counter)
    submitted: bool = False
    answer: Any = None
    detail: str = ""
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))


OnSubmit = Callable[[Attempt], None]


class TaskEnvironment:
    def __init__(self, tasks: Sequence[TaskRecord], wh: Warehouse, kb: KnowledgeBase,
                 schema_text: str | Callable[[], str], *,
                 db_schema: str | None = None, max_turns: int = 20, autostart: bool = True,
                 on_submit: OnSubmit | None = None) -> None:
        self.tasks = {t.task_id: t for t in tasks}
        self.order = [t.task_id for t in tasks]
        self.wh, self.kb, self.db_schema = wh, kb, db_schema
        # The schema's text may be described on first use: reflecting the tables costs a server a
        # third of a second before its first answer.
        self._schema: str | Callable[[], str] = schema_text
        self._schema_lock = threading.Lock()
        self.max_turns = max_turns
        self.autostart = autostart
        self.on_submit = on_submit
        self.attempts: dict[str, Attempt] = {}
        self.by_token: dict[str, Attempt] = {}
        self.finished: set[str] = set()
        self._lock = threading.Lock()
        # the run's score ({"passed", "tasks", "accuracy_pct"}), for `progress` once every task is answered
        self.score: Callable[[], dict[str, Any]] | None = None

    # -- attempts ---------------------------------------------------------------------------
    def open(self, task_id: str, tools: Toolbox) -> Attempt:
        with self._lock:
            attempt = Attempt(self.tasks[task_id], tools)
            self.attempts[task_id] = attempt
            self.by_token[attempt.token] = attempt
            self.finished.discard(task_id)
            return attempt

    def close(self, task_id: str) -> Attempt | None:
        with self._lock:
            attempt = self.attempts.pop(task_id, None)
            if attempt is not None:
                self.by_token.pop(attempt.token, None)
            return attempt

    def live(self, token: str) -> bool:
        """Whether `token` is an open attempt's."""
        with self._lock:
            return token in self.by_token

    def _own(self, caller: str | None) -> Attempt | None:
        """The attempt a caller's token names (None for a caller without one: stdio, `dibench mcp`)."""
        if caller is None or self.autostart:
            return None
        with self._lock:
            attempt = self.by_token.get(caller)
        if attempt is None:
            raise ToolRefused("this token's attempt has ended")
        return attempt

    def _withheld_for(self, task_id: str) -> str | None:
        """The standard twin an oracle task waits for in a session (write-back names a variant
        `<standard key>:<variant>`), while that twin is neither answered nor out of turns."""
        task = self.tasks[task_id]
        suffix = f":{task.variant}"
        if not self.autostart or task.variant != "oracle" or not task_id.endswith(suffix):
            return None
        twin = task_id[: -len(suffix)]
        if twin not in self.tasks or twin in self.finished:
            return None
        attempt = self.attempts.get(twin)
        return None if attempt is not None and attempt.tools.turn >= self.max_turns else twin

    def _public(self, task_id: Any) -> str:
        if not isinstance(task_id, str) or task_id not in self.tasks:
            raise ToolRefused(f"unknown task_id {task_id!r}; list_tasks gives the ids")
        twin = self._withheld_for(task_id)
        if twin is not None:
            raise ToolRefused(f"task {task_id} is served once its standard twin {twin} is answered")
        return task_id

    def _attempt(self, task_id: Any, caller: str | None = None) -> Attempt:
        own = self._own(caller)
        if own is not None:
            if task_id != own.task.task_id:
                raise ToolRefused(f"this attempt is at task {own.task.task_id}; task_id {task_id!r} refused")
            return own
        self._public(task_id)
        with self._lock:
            attempt = self.attempts.get(task_id)
            if attempt is None and self.autostart and task_id not in self.finished:
                attempt = Attempt(self.tasks[task_id], Toolbox(self.wh, self.kb, schema=self.db_schema))
                self.attempts[task_id] = attempt
        if attempt is None:
            raise ToolRefused(f"task {task_id} is not open: it was answered, or it is not this agent's task")
        return attempt

    def _turn(self, task_id: Any, tool: str, caller: str | None = None) -> Attempt:
        attempt = self._attempt(task_id, caller)
        with self._lock:
            if attempt.submitted:
                raise ToolRefused(f"task {task_id} is already answered")
            if attempt.tools.turn >= self.max_turns:
                raise ToolRefused(f"turn budget ({self.max_turns}) of task {task_id} reached; {tool} refused")
            attempt.tools.turn += 1
        return attempt

    # -- the tools --------------------------------------------------------------------------
    def list_tasks(self, caller: str | None = None, *, offset: int = 0, limit: int | None = None,
                   status: TaskStatus | None = None, analysis_type: str | None = None,
                   variant: str | None = None) -> list[dict[str, str]]:
        """The tasks open to the caller, in order, filtered and cut to one page. No filter on the
        knowledge tier: which tasks a rule decides is part of what is measured."""
        own = self._own(caller)
        if own is not None:
            return [public_view(own.task)]
        ids = [i for i in self.order if self._withheld_for(i) is None
               and (status is None or self.status_of(i) == status)
               and (analysis_type is None or self.tasks[i].analysis_type == analysis_type)
               and (variant is None or self.tasks[i].variant == variant)]
        end = None if limit is None else offset + limit
        return [public_view(self.tasks[i]) for i in ids[offset:end]]

    def count_tasks(self, caller: str | None = None, **filters: Any) -> int:
        return len(self.list_tasks(caller, **filters))

    def status_of(self, task_id: str) -> TaskStatus:
        with self._lock:
            attempt = self.attempts.get(task_id)
            done = task_id in self.finished or (attempt is not None and attempt.submitted)
        return "answered" if done else "open"

    def progress(self, caller: str | None = None) -> dict[str, Any]:
        """How far the run is: tasks open to the caller, answered, still open; the score only once
        every task is answered (a score mid-run would tell which answers were right)."""
        listed = [t["task_id"] for t in self.list_tasks(caller)]
        answered = sum(self.status_of(i) == "answered" for i in listed)
        out: dict[str, Any] = {"tasks": len(listed), "answered": answered, "open": len(listed) - answered}
        if listed and answered == len(listed) and self.score is not None and self._own(caller) is None:
            out["score"] = self.score()
        return out

    def get_task(self, task_id: Any, caller: str | None = None) -> dict[str, str]:
        own = self._own(caller)
        if own is not None:
            if task_id != own.task.task_id:
                raise ToolRefused(f"this attempt is at task {own.task.task_id}; task_id {task_id!r} refused")
            return public_view(own.task)
        return public_view(self.tasks[self._public(task_id)])

    @property
    def schema_text(self) -> str:
        with self._schema_lock:
            if callable(self._schema):
                self._schema = self._schema()
            return self._schema

    def describe_schema(self) -> str:
        return self.schema_text

    def sql_query(self, task_id: Any, sql: Any, params: Any = None, caller: str | None = None) -> str:
        return self._turn(task_id, "sql_query", caller).tools.sql_tool({"sql": sql, "params": params or {}})

    def search_knowledge(self, task_id: Any, query: Any, k: Any = 5, kind: Any = None,
                         caller: str | None = None) -> str:
        args = {"query": query, "k": k} | ({"kind": kind} if kind is not None else {})
        return self._turn(task_id, "search_knowledge", caller).tools.search_tool(args)

    def read_document(self, task_id: Any, doc_id: Any, caller: str | None = None) -> str:
        return self._turn(task_id, "read_document", caller).tools.read_tool({"doc_id": doc_id})

    def submit_answer(self, task_id: Any, answer: Any, caller: str | None = None) -> str:
        """Records the answer (never says whether it is right) and ends the task's attempt."""
        attempt = self._turn(task_id, "submit_answer", caller)
        with self._lock:
            attempt.submitted, attempt.answer = True, jsonable(answer)
            attempt.detail = f"submitted over MCP at turn {attempt.tools.turn}"
            attempt.tools.events.append({"turn": attempt.tools.turn, "tool": "submit_answer",
                                         "args": {"answer": attempt.answer}, "ok": True, "elapsed_s": 0.0})
            if self.autostart:
                self.attempts.pop(attempt.task.task_id, None)
                self.finished.add(attempt.task.task_id)
        if self.on_submit is not None:
            self.on_submit(attempt)
        return f"answer to {attempt.task.task_id} recorded"
