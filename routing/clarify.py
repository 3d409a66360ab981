"""A one-question clarification simulator, standing in for the user who wrote the request.

For an interactive task it says which reading the user means (its interpretation text, which
names no database); for any other task it says the request is meant as written, and the question
was unnecessary (scoring charges for it). It answers only the first question of a task (the
environment enforces 'ask once').
"""
from __future__ import annotations

from collections.abc import Callable

from dibench.routing.models import Contract

AS_STATED = "The request means exactly what it says; there is nothing to add."
MEANT_PREFIX = "I mean this: "


class ClarificationSimulator:
    def __init__(self, contracts: list[Contract]) -> None:
        self._by_id = {c.task_id: c for c in contracts}

    def answer(self, task_id: str, _question: str) -> str:
        c = self._by_id[task_id]
        meant = c.scored_branches()
        if c.behaviour != "interactive" or not meant:
            return AS_STATED
        return f"{MEANT_PREFIX}{meant[0].interpretation or ''}"

    def for_task(self, task_id: str) -> Callable[[str], str]:
        return lambda question: self.answer(task_id, question)
