"""Aggregation helpers: accuracy per group (counts and %) and failure-class counts.

Pure functions over (group, passed) pairs, so that the scorer, the HTML report and the
ablations aggregate the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

# Display order of the knowledge tiers and failure classes; other groups sort by name.
TIER_ORDER: tuple[str, ...] = ("K", "K+A", "K+A+R")
FAILURE_CLASSES: tuple[str, ...] = ("no_answer", "malformed", "rule_ignored", "computation_wrong", "wrong_answer")


class Bucket(BaseModel):
    """Accuracy of one group of tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total: int
    passed: int
    accuracy_pct: float


def bucket(passed: Iterable[bool]) -> Bucket:
    flags = list(passed)
    hits = sum(flags)
    # An empty group has no accuracy to speak of; 0.0 keeps the field a number for JSON readers.
    pct = round(100.0 * hits / len(flags), 2) if flags else 0.0
    return Bucket(total=len(flags), passed=hits, accuracy_pct=pct)


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


def bucket_rows(buckets: dict[str, Bucket]) -> list[list[str]]:
    """Table rows: group, tasks, passed, accuracy %."""
    return [[g, str(b.total), str(b.passed), f"{b.accuracy_pct:.1f}"] for g, b in buckets.items()]
