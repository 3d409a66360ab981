"""A one-question clarification simulator, standing in for the user who wrote the request.

For an interactive task it reveals the two readings (the interpretation texts, which name no
database); for any other task it says the request is meant as written. It answers only the
first question of a task (the environment enforces 'ask once').
"""
from __future__ import annotations

from collections.abc import Callable

from routing.models import Contract

AS_STATED = "The request means exactly what it says; there is nothing to add."


class ClarificationSimulator:
    def __init__(self, contracts: list[Contract]) -> None:
        self._by_id = {c.task_id: c for c in contracts}

    def answer(self, task_id: str, _question: str) -> str:
        c = self._by_id[task_id]
        if c.behaviour != "interactive":
            return AS_STATED
        a, b = (br.interpretation or "" for br in c.branches)
        return f"It can be read two ways, and I need both: (a) {a} (b) {b}"

    def for_task(self, task_id: str) -> Callable[[str], str]:
        return lambda question: self.answer(task_id, question)
