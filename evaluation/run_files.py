"""The files of one evaluation run, written attempt by attempt, and read back to resume or score.

An attempt is one agent run on one task in one trial. `RunFiles` appends each finished attempt
to `answers.jsonl` (`{"task_id", "answer"}`, plus `"trial"` from trial 2 on) and `trace.jsonl`
under a lock (attempts may finish in parallel), so an interrupted run keeps every attempt it
finished. `run.json` names what the run is (agent, domain, tasks, trials): `--resume` continues
only the same run, skipping the attempts both files hold and dropping a line cut by the
interruption. `finish` writes `tasks.jsonl`, `score.json` and `summary.json` from the files, so a
resumed run is scored exactly like one that never stopped.
"""
from __future__ import annotations

import json
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


def key_of(item: dict[str, Any]) -> Key:
    return str(item["task_id"]), int(item.get("trial") or 1)


class RunFiles:
    def __init__(self, out_dir: Path, manifest: dict[str, Any], *, resume: bool = False) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.paths = {name: out_dir / f"{name}.{ext}" for name, ext in FILES}
        self.manifest = manifest
        self._lock = threading.Lock()
        self.done: set[Key] = set()
        if resume:
            self._resume()
        else:
            for name in ("answers", "trace"):
                self.paths[name].write_text("", encoding="utf-8")
        self.paths["run"].write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")

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
        # Rewrite both files with the attempts they both hold, so no half attempt is scored.
        for name, items in (("answers", answers), ("trace", traces)):
            with self.paths[name].open("w", encoding="utf-8") as fh:
                for key in sorted(self.done):
                    fh.write(json.dumps(items[key], sort_keys=True, default=str) + "\n")

    def record(self, task_id: str, trial: int, answer: Any, trace: dict[str, Any]) -> None:
        line: dict[str, Any] = {"task_id": task_id, "answer": answer}
        if trial > 1:
            line["trial"] = trial
            trace = {**trace, "trial": trial}
        with self._lock:
            with self.paths["answers"].open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
            with self.paths["trace"].open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(trace, sort_keys=True, default=str) + "\n")
            self.done.add((task_id, trial))

    def attempts(self) -> tuple[dict[Key, Any], list[dict[str, Any]]]:
        """Every finished attempt's answer, and the trace rows, as the files hold them."""
        with self._lock:
            answers = {key_of(a): a.get("answer") for a in _lines(self.paths["answers"])}
            return answers, _lines(self.paths["trace"])

    def write_tasks(self, tasks: Sequence[TaskRecord]) -> None:
        write_tasks_jsonl(tasks, self.paths["tasks"])

    def write_json(self, name: str, data: Any) -> None:
        self.paths[name].write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
