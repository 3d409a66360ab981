"""The files of one evaluation run, written attempt by attempt, and read back only to resume.

An attempt is one agent run on one task in one trial. `RunFiles` appends each finished attempt
to `answers.jsonl` (`{"task_id", "answer"}`, plus `"trial"` from trial 2 on) and `trace.jsonl`
under a lock, and keeps it in memory: the score comes from what the evaluator received, never from
the files, which an agent run without a sandbox could have changed. The folder is 0700 and every
file 0600. `run.json` names the run (agent, domain, tasks, trials): `--resume` continues only the
same run, reading back the attempts both files hold (a line cut by the interruption is dropped).
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dibench.core.errors import DibenchError
from dibench.evaluation.tasks import TaskRecord, write_tasks_jsonl

Key = tuple[str, int]  # (task_id, trial)
FILES = (("tasks", "jsonl"), ("answers", "jsonl"), ("trace", "jsonl"), ("score", "json"), ("summary", "json"),
         ("run", "json"))


class ResumeError(DibenchError):
    """--resume names a folder that holds a different run (or none)."""

    hint = "give a new -o folder, or leave out --resume to start the run again"


def _lines(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of a file (a last line cut short by a crash is left out)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and "task_id" in item:
            out.append(item)
    return out


def write_private(path: Path, text: str, *, append: bool = False) -> None:
    """Write (or append to) a file only its owner can read."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def key_of(item: dict[str, Any]) -> Key:
    return str(item["task_id"]), int(item.get("trial") or 1)


class RunFiles:
    def __init__(self, out_dir: Path, manifest: dict[str, Any], *, resume: bool = False) -> None:
        """`resume` continues the run in `out_dir`; a folder that does not exist yet or is empty
        has nothing to continue, so the run starts there (a folder holding other files is refused)."""
        if resume and (not out_dir.exists() or (out_dir.is_dir() and not any(out_dir.iterdir()))):
            resume = False
        out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        out_dir.chmod(0o700)
        self.out_dir = out_dir
        self.paths = {name: out_dir / f"{name}.{ext}" for name, ext in FILES}
        self.manifest = manifest
        self._lock = threading.Lock()
        self.done: set[Key] = set()
        self._answers: dict[Key, Any] = {}
        self._traces: list[dict[str, Any]] = []
        if resume:
            self._resume()
        else:
            for name in ("answers", "trace"):
                write_private(self.paths[name], "")
        write_private(self.paths["run"], json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def _resume(self) -> None:
        path = self.paths["run"]
        if not path.is_file():
            raise ResumeError(f"--resume: {self.out_dir} holds no run.json (not an evaluation run folder)")
        before = json.loads(path.read_text(encoding="utf-8"))
        for field in ("agent", "domain", "trials", "task_ids"):
            if before.get(field) != self.manifest.get(field):
                raise ResumeError(f"--resume: {self.out_dir} is a run with another {field} "
                                  f"({before.get(field)!r:.60} here, {self.manifest.get(field)!r:.60} now)")
        answers = {key_of(a): a for a in _lines(self.paths["answers"])}
        traces = {key_of(t): t for t in _lines(self.paths["trace"])}
        self.done = set(answers) & set(traces)
        self._answers = {key: answers[key].get("answer") for key in sorted(self.done)}
        self._traces = [traces[key] for key in sorted(self.done)]
        # Rewrite both files with the attempts they both hold, so no half attempt is scored.
        for name, items in (("answers", answers), ("trace", traces)):
            write_private(self.paths[name], "".join(json.dumps(items[key], sort_keys=True, default=str) + "\n"
                                                    for key in sorted(self.done)))

    def record(self, task_id: str, trial: int, answer: Any, trace: dict[str, Any]) -> None:
        line: dict[str, Any] = {"task_id": task_id, "answer": answer}
        if trial > 1:
            line["trial"] = trial
            trace = {**trace, "trial": trial}
        trace_line = json.dumps(trace, sort_keys=True, default=str)
        with self._lock:
            write_private(self.paths["answers"], json.dumps(line, sort_keys=True) + "\n", append=True)
            write_private(self.paths["trace"], trace_line + "\n", append=True)
            self.done.add((task_id, trial))
            self._answers[(task_id, trial)] = answer
            self._traces.append(json.loads(trace_line))

    def attempts(self) -> tuple[dict[Key, Any], list[dict[str, Any]]]:
        """Every finished attempt's answer, and the trace rows, as the evaluator recorded them."""
        with self._lock:
            return dict(self._answers), list(self._traces)

    def write_tasks(self, tasks: Sequence[TaskRecord]) -> None:
        write_private(self.paths["tasks"], "")
        write_tasks_jsonl(tasks, self.paths["tasks"])

    def write_json(self, name: str, data: Any) -> None:
        write_private(self.out_dir / f"{name}.json" if name not in self.paths else self.paths[name],
                      json.dumps(data, indent=2, sort_keys=True) + "\n")
