"""Aggregation helpers: accuracy per group (counts, %, 95% Wilson interval) and failure-class counts.

Pure functions over (group, passed) pairs, so that the scorer, the HTML report and the
ablations aggregate the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from dibench.core import intervals

# Display order of the knowledge tiers and failure classes; other groups sort by name.
TIER_ORDER: tuple[str, ...] = ("K", "K+A", "K+A+R")
FAILURE_CLASSES: tuple[str, ...] = ("no_answer", "malformed", "rule_ignored", "computation_wrong", "wrong_answer")


def wilson_pct(passed: int, total: int) -> tuple[float, float]:
    """The 95% Wilson interval of passed/total (`core.intervals.wilson`) in percent, to 2 decimals.
    With no task it is the whole range (0, 100): nothing is known. Unlike the normal approximation
    it stays inside [0, 100] and is not empty at 0 or total passes (30 of 30: 88.65 .. 100)."""
    low, high = intervals.wilson(passed, total)
    return round(100.0 * low, 2), round(100.0 * high, 2)


class Bucket(BaseModel):
    """Accuracy of one group of tasks, with its 95% Wilson interval (absent in older reports)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total: int
    passed: int
    accuracy_pct: float
    ci95_low_pct: float | None = None
    ci95_high_pct: float | None = None

    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval in percent (computed when an older report lacks it)."""
        if self.ci95_low_pct is not None and self.ci95_high_pct is not None:
            return self.ci95_low_pct, self.ci95_high_pct
        return wilson_pct(self.passed, self.total)


def bucket(passed: Iterable[bool]) -> Bucket:
    flags = list(passed)
    hits = sum(flags)
    # An empty group has no accuracy to speak of; 0.0 keeps the field a number for JSON readers.
    pct = round(100.0 * hits / len(flags), 2) if flags else 0.0
    low, high = wilson_pct(hits, len(flags))
    return Bucket(total=len(flags), passed=hits, accuracy_pct=pct, ci95_low_pct=low, ci95_high_pct=high)


def accuracy_by(pairs: Iterable[tuple[str, bool]], order: Sequence[str] = ()) -> dict[str, Bucket]:
    """One Bucket per group, groups in `order` first, then the others by name."""
    groups: dict[str, list[bool]] = {}
    for group, passed in pairs:
        groups.setdefault(group, []).append(passed)
    ranked = [g for g in order if g in groups] + sorted(g for g in groups if g not in order)
    return {g: bucket(groups[g]) for g in ranked}


def failure_counts(classes: Iterable[str | None]) -> dict[str, int]:
    """Count of each failure class (all known classes present, zero included; None = passed)."""
    counts = dict.fromkeys(FAILURE_CLASSES, 0)
    for c in classes:
        if c is not None:
            counts[c] = counts.get(c, 0) + 1
    return counts


def interval_text(b: Bucket) -> str:
    low, high = b.interval()
    return f"{low:.1f} .. {high:.1f}"


def bucket_rows(buckets: dict[str, Bucket]) -> list[list[str]]:
    """Table rows: group, tasks, passed, accuracy %, its 95% interval."""
    return [[g, str(b.total), str(b.passed), f"{b.accuracy_pct:.1f}", interval_text(b)] for g, b in buckets.items()]
