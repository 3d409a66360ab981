"""What a shortcut may learn from before routing."""
from __future__ import annotations

from dataclasses import dataclass

from dibench.routing.models import Contract


@dataclass(frozen=True)
class ShortcutContext:
    """The seed, and the benchmark's own tasks (each shortcut leaves the task it routes out of what
    it learned from)."""

    seed: int
    contracts: tuple[Contract, ...]
