"""One vocabulary for how many tasks a benchmark has, used by every command and route.

* admitted standard tasks: the benchmark's questions (status admitted, variant standard);
* with variants: every admitted task, the oracle and no-rule twins of rule tasks included
  (what `eval` runs and an export of admitted tasks holds);
* with rejected candidates: every task the graph holds, whatever its status.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskCounts:
    standard: int
    with_variants: int
    with_rejected: int

    def as_dict(self) -> dict[str, int]:
        return {"admitted_standard": self.standard, "admitted_with_variants": self.with_variants,
                "with_rejected_candidates": self.with_rejected}

    def line(self) -> str:
        return (f"{self.standard} admitted standard tasks ({self.with_variants} with variants; "
                f"{self.with_rejected} with rejected candidates)")


def count_tasks(rows: Iterable[Any]) -> TaskCounts:
    """Counts of task rows, each a mapping with `variant`, `status` and optionally `n` (how many
    tasks the row stands for; 1 when absent)."""
    standard = variants = total = 0
    for r in rows:
        n = int(r["n"]) if "n" in r else 1
        total += n
        if r["status"] == "admitted":
            variants += n
            standard += n if r["variant"] == "standard" else 0
    return TaskCounts(standard, variants, total)
