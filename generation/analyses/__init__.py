"""Analysis types: each module turns a grounded skeleton into a gold answer (and the base
answer without rules), with its compatibility rule. The registry keeps a fixed order."""
from __future__ import annotations

from typing import Any

from dibench.generation.analyses import (
    comparison, counterfactual, decomposition, knowledge, point_query, ranking, significance, threshold, trend,
)
from dibench.generation.analyses.base import Analysis, Outcome

__all__ = ["Analysis", "Outcome", "registry"]


def registry() -> list[Analysis]:
    mods: list[Any] = [knowledge, point_query, trend, comparison, ranking, significance, threshold,
                       counterfactual, decomposition]
    return mods
