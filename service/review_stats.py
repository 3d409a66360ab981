"""`dibench review stats`: the validator measured against people (the paper's Table 11), from the
reviews in the graph.

Only reviews of a task's current version count (an update that re-derives a task makes its
reviews old). A task's human verdict on a dimension is a pass when no current review of it fails
that dimension; "all" is the eight together. The validator's verdict is the stage-2 judge's, on
the tasks it judged (`Task.judge`; a run without a model records the judge as skipped, and those
tasks have no validator verdict). Precision and recall treat "pass" as the positive class:
precision = of the tasks the validator passes, the share people pass; recall = of the tasks
people pass, the share the validator passes. Cohen's kappa compares the first two reviewers (by
name) of each task two or more people reviewed.
"""
from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.stores.graph import Graph

ALL = "all"
ROWS = (*JUDGE_DIMENSIONS, ALL)


@dataclass(frozen=True)
class Reviewed:
    """One task's current reviews: per reviewer, the dimensions they failed; the validator's
    failed dimensions (None: the judge did not run)."""

    key: str
    failed_by: dict[str, frozenset[str]]
    validator_failed: frozenset[str] | None
    seconds: tuple[float, ...]


@dataclass(frozen=True)
class DimensionRow:
    dimension: str
    tasks: int
    human_pass_pct: float | None
    judged: int
    validator_pass_pct: float | None
    admitted: int
    human_pass_of_admitted_pct: float | None
    validator_passed: int
    precision_pct: float | None
    human_passed_judged: int
    recall_pct: float | None
    pairs: int
    kappa: float | None


@dataclass(frozen=True)
class ReviewStats:
    domain: str
    tasks: int
    reviews: int
    reviewers: int
    stale_reviews: int
    median_seconds: float | None
    rows: list[DimensionRow]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(hits: int, n: int) -> float | None:
    return round(100.0 * hits / n, 1) if n else None


def _passes(failed: frozenset[str], dimension: str) -> bool:
    return not failed if dimension == ALL else dimension not in failed


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' binary labels; None without pairs or when chance agreement is
    certain and they disagree (undefined), 1.0 when it is certain and they agree throughout."""
    n = len(pairs)
    if not n:
        return None
    agree = sum(a == b for a, b in pairs) / n
    pa, pb = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    if chance == 1.0:
        return 1.0 if agree == 1.0 else None
    return round((agree - chance) / (1 - chance), 3)


def dimension_row(tasks: Sequence[Reviewed], d: str) -> DimensionRow:
    human = {t.key: all(_passes(f, d) for f in t.failed_by.values()) for t in tasks}
    judged = [t for t in tasks if t.validator_failed is not None]
    validator = {t.key: _passes(t.validator_failed, d) for t in judged if t.validator_failed is not None}
    admitted = [t.key for t in judged if not t.validator_failed]
    val_pass = [k for k, ok in validator.items() if ok]
    human_pass_judged = [k for k in validator if human[k]]
    pairs = []
    for t in tasks:
        if len(t.failed_by) >= 2:
            a, b = sorted(t.failed_by)[:2]
            pairs.append((_passes(t.failed_by[a], d), _passes(t.failed_by[b], d)))
    return DimensionRow(
        dimension=d, tasks=len(tasks), human_pass_pct=_pct(sum(human.values()), len(tasks)),
        judged=len(judged), validator_pass_pct=_pct(len(val_pass), len(judged)),
        admitted=len(admitted), human_pass_of_admitted_pct=_pct(sum(human[k] for k in admitted), len(admitted)),
        validator_passed=len(val_pass), precision_pct=_pct(sum(human[k] for k in val_pass), len(val_pass)),
        human_passed_judged=len(human_pass_judged), recall_pct=_pct(sum(validator[k] for k in human_pass_judged), len(human_pass_judged)),
        pairs=len(pairs), kappa=kappa(pairs))


def validator_failed(judge_json: str | None) -> frozenset[str] | None:
    """The dimensions the stage-2 judge failed, or None when it did not judge the task."""
    try:
        judge = json.loads(judge_json) if judge_json else {}
    except json.JSONDecodeError:
        return None
    if not isinstance(judge, dict) or judge.get("stage2") != "judged":
        return None
    return frozenset(d for d in JUDGE_DIMENSIONS if not (judge.get(d) or {}).get("passed", False))


def reviewed_tasks(rows: Sequence[dict[str, Any]]) -> tuple[list[Reviewed], int]:
    """The rows of `review_domain_reviews` grouped per task (current versions only), and how many
    reviews are of an older version."""
    by_task: dict[str, dict[str, Any]] = {}
    stale = 0
    for row in rows:
        r = row["review"]
        if int(r["task_version"]) != int(row["current_version"]):
            stale += 1
            continue
        entry = by_task.setdefault(r["task_key"], {"failed": {}, "judge": row["judge"], "seconds": []})
        entry["failed"][r["reviewer"]] = frozenset(r.get("failed") or [])
        entry["seconds"].append(float(r.get("seconds") or 0.0))
    tasks = [Reviewed(k, e["failed"], validator_failed(e["judge"]), tuple(e["seconds"]))
             for k, e in sorted(by_task.items())]
    return tasks, stale


def review_stats(graph: Graph, domain: str) -> ReviewStats:
    rows = graph.read("review_domain_reviews", domain=domain)
    tasks, stale = reviewed_tasks(rows)
    seconds = [s for t in tasks for s in t.seconds]
    reviewers = {name for t in tasks for name in t.failed_by}
    return ReviewStats(domain=domain, tasks=len(tasks), reviews=len(seconds), reviewers=len(reviewers),
                       stale_reviews=stale, median_seconds=round(statistics.median(seconds), 1) if seconds else None,
                       rows=[dimension_row(tasks, d) for d in ROWS])


STATS_COLUMNS = ("dimension", "human pass %", "validator pass %", "human pass % of validator-admitted",
                 "precision %", "recall %", "kappa")


def stats_table(stats: ReviewStats) -> list[list[str]]:
    """Table 11 as text cells, each rate with its task count."""
    def cell(v: float | None, n: int) -> str:
        return "-" if v is None else f"{v:.1f} (n={n})"

    return [[r.dimension, cell(r.human_pass_pct, r.tasks), cell(r.validator_pass_pct, r.judged),
             cell(r.human_pass_of_admitted_pct, r.admitted), cell(r.precision_pct, r.validator_passed),
             cell(r.recall_pct, r.human_passed_judged), "-" if r.kappa is None else f"{r.kappa:.3f} (n={r.pairs})"]
            for r in stats.rows]
