"""What every analysis module shares: its outcome, its protocol and small fact helpers."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol

from dibench.generation.grounding import Context, Pair
from dibench.generation.skeletons import Skeleton


@dataclass(frozen=True)
class Outcome:
    gold_answer: dict[str, Any]
    base_answer: dict[str, Any]
    gold_sql: str | None
    base_sql: str | None
    gold_params: dict[str, Any]
    base_params: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)  # what the phraser may say (groups, k, window ...)
    # (gold rounding, the other right one) of a figure the analysis derives on a rounding tie
    ties: list[tuple[float, float]] = field(default_factory=list)


class Analysis(Protocol):
    NAME: str

    def compatible(self, sk: Skeleton) -> bool: ...

    def build(self, ctx: Context) -> Outcome | None: ...


def outcome(gold: dict[str, Any], base: dict[str, Any], pair: Pair, facts: dict[str, Any]) -> Outcome:
    return Outcome(gold, base, pair.gold_sql, pair.base_sql, pair.gold_params, pair.base_params, facts)


def window_facts(window: tuple[dt.date, dt.date]) -> dict[str, Any]:
    return {"start": window[0].isoformat(), "end": window[1].isoformat()}


def period_edge(ctx: Context, monthly: bool) -> dict[str, Any]:
    """The fact that a monthly series reads each month's own end (or start), where it does."""
    return {"period_edge": True} if monthly and ctx.reads_period_edge() else {}


def categorical(sk: Skeleton) -> bool:
    return sk.dimension_type in ("categorical", "spatial")
