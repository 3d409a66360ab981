"""Reliability over trials: pass@1, pass^k and pass@k, as tau-bench reports them.

Each task is attempted n times (trials); c of them pass. Over tasks, unbiased from n >= k:
pass@1 = mean c/n; pass^k = mean C(c,k)/C(n,k) (all of k draws pass: a policy-following agent
must be right every time); pass@k = mean 1 - C(n-c,k)/C(n,k) (at least one of k passes). They
are given for every k from 1 to n, overall, per knowledge tier and per analysis type, each with a
95% Wilson interval over the tasks (the estimate as a share of the group's tasks). A deterministic
agent passes a task in all trials or in none, so its pass^k equals its pass@1.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from dibench.core.contracts import ANALYSIS_TYPES
from dibench.core.intervals import wilson
from dibench.evaluation.reporting_tables import TIER_ORDER

def pass_hat(c: int, n: int, k: int) -> float:
    """Probability that k of the n trials drawn without replacement all pass (c passed)."""
    return math.comb(c, k) / math.comb(n, k)


def pass_at(c: int, n: int, k: int) -> float:
    """Probability that at least one of k drawn trials passes."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class Estimate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    pass_hat_k: float    # pass^k, %
    pass_hat_ci: tuple[float, float]
    pass_at_k: float     # pass@k, %
    pass_at_ci: tuple[float, float]


class GroupReliability(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int
    pass_at_1: float  # %, the mean over trials
    by_k: list[Estimate]


class Reliability(BaseModel):
    """pass^k / pass@k of a run with `trials` attempts per task (only tasks attempted that often)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int
    overall: GroupReliability
    by_tier: dict[str, GroupReliability]
    by_analysis_type: dict[str, GroupReliability]
    incomplete_tasks: int = 0  # tasks with fewer finished trials than `trials`, left out


def group(counts: Sequence[int], n: int) -> GroupReliability:
    """counts: passing trials per task, each out of n."""
    tasks = len(counts)

    def pct(values: Iterable[float]) -> float:
        vals = list(values)
        return round(100.0 * sum(vals) / len(vals), 2) if vals else 0.0

    def ci(share_pct: float) -> tuple[float, float]:
        lo, hi = wilson(share_pct / 100.0 * tasks, tasks)
        return round(100 * lo, 2), round(100 * hi, 2)

    rows = []
    for k in range(1, n + 1):
        hat = pct(pass_hat(c, n, k) for c in counts)
        at = pct(pass_at(c, n, k) for c in counts)
        rows.append(Estimate(k=k, pass_hat_k=hat, pass_hat_ci=ci(hat), pass_at_k=at, pass_at_ci=ci(at)))
    return GroupReliability(tasks=tasks, pass_at_1=pct(c / n for c in counts), by_k=rows)


def reliability(tasks: Sequence[Mapping[str, Any]], passed: Mapping[tuple[str, int], bool],
                trials: int) -> Reliability:
    """`tasks`: records with task_id, tier, analysis_type; `passed`: (task_id, trial) -> verdict."""
    counts: dict[str, int] = {}
    complete = []
    for t in tasks:
        got = [passed[(t["task_id"], i)] for i in range(1, trials + 1) if (t["task_id"], i) in passed]
        if len(got) == trials:
            counts[t["task_id"]] = sum(got)
            complete.append(t)

    def by(field: str, order: Sequence[str]) -> dict[str, GroupReliability]:
        groups: dict[str, list[int]] = {}
        for t in complete:
            groups.setdefault(str(t[field]), []).append(counts[t["task_id"]])
        names = [g for g in order if g in groups] + sorted(g for g in groups if g not in order)
        return {g: group(groups[g], trials) for g in names}

    return Reliability(trials=trials, overall=group([counts[t["task_id"]] for t in complete], trials),
                       by_tier=by("tier", TIER_ORDER), by_analysis_type=by("analysis_type", ANALYSIS_TYPES),
                       incomplete_tasks=len(tasks) - len(complete))
