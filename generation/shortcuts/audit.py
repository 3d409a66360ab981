"""The audit: every shortcut on every task, the best per analysis type x tier x variant with its
95% Wilson interval, beside the oracle (the gold under its own contract), and the families a
shortcut passes too often to be admitted. Pure: tasks and documents in, a table out."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from dibench.core.intervals import wilson
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, passes

# A family is not admitted when its best shortcut passes more than this share of its tasks: of a
# family of at least JUDGED_TASKS tasks, the share itself; of a smaller one, the low end of the 95%
# interval (one pass of two tasks is not evidence; three of three is). A smaller family over the
# limit is admitted and shown as too few to judge.
LIMIT_PCT = 10.0
JUDGED_TASKS = 10


class AuditCell(BaseModel):
    """One family: its tasks, the oracle's passes, the best shortcut and its passes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    analysis_type: str
    tier: str
    variant: str
    tasks: int
    oracle_passed: int
    best_shortcut: str | None = Field(description="the strategy passing most tasks (None: none passes any)")
    best_passed: int
    best_pct: float
    low_pct: float
    high_pct: float
    admitted: bool

    @property
    def family(self) -> str:
        return f"{self.analysis_type}/{self.tier}/{self.variant}"


class ShortcutAudit(BaseModel):
    """The audit of one run's admitted tasks (stored on the Run node as JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit_pct: float = LIMIT_PCT
    strategies: int
    cells: list[AuditCell]
    # The hold-out strategies on the same tasks' knowledge families (generation/shortcuts/holdout.py):
    # never used to admit anything. None: not measured (an audit written before they were stored).
    holdout: ShortcutAudit | None = None

    def rejected(self) -> list[AuditCell]:
        return [c for c in self.cells if not c.admitted]


def family_of(task: AuditTask) -> tuple[str, str, str]:
    return task.analysis_type, task.tier, task.variant


def pass_counts(tasks: Sequence[AuditTask], corpus: Corpus,
                shortcuts: Sequence[Shortcut]) -> dict[tuple[str, str, str], dict[str, int]]:
    """{family: {strategy: tasks passed}} (a strategy that raises on a task fails it)."""
    out: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for task in tasks:
        counts = out[family_of(task)]
        for s in shortcuts:
            try:
                ok = passes(task, s.answer(task, corpus))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                ok = False  # a strategy that cannot shape an answer for this task has none
            counts[s.name] += int(ok)
    return out


def over(pct: float, low_pct: float, tasks: int) -> bool:
    """Whether a family's best shortcut passes it too often to be admitted."""
    return pct > LIMIT_PCT and (tasks >= JUDGED_TASKS or low_pct > LIMIT_PCT)


def audit(tasks: Sequence[AuditTask], corpus: Corpus, shortcuts: Sequence[Shortcut]) -> ShortcutAudit:
    counts = pass_counts(tasks, corpus, shortcuts)
    by_family: dict[tuple[str, str, str], list[AuditTask]] = defaultdict(list)
    for t in tasks:
        by_family[family_of(t)].append(t)
    cells = []
    for fam in sorted(by_family):
        members = by_family[fam]
        n = len(members)
        best, best_n = None, 0
        for s in shortcuts:  # the first of equals, in registry order
            if counts[fam][s.name] > best_n:
                best, best_n = s.name, counts[fam][s.name]
        low, high = wilson(best_n, n)
        pct = 100.0 * best_n / n
        cells.append(AuditCell(analysis_type=fam[0], tier=fam[1], variant=fam[2], tasks=n,
                               oracle_passed=sum(passes(t, t.gold) for t in members), best_shortcut=best,
                               best_passed=best_n, best_pct=round(pct, 1), low_pct=round(100 * low, 1),
                               high_pct=round(100 * high, 1),
                               admitted=not over(pct, 100 * low, n)))
    return ShortcutAudit(strategies=len(shortcuts), cells=cells)


AUDIT_COLUMNS = ["analysis type", "tier", "variant", "tasks", "oracle %", "best shortcut", "best shortcut %",
                 "95% CI", "admitted"]


def audit_rows(table: ShortcutAudit) -> list[list[str]]:
    """The audit as printed beside every score: one row per family."""
    return [[c.analysis_type, c.tier, c.variant, str(c.tasks), f"{100 * c.oracle_passed / c.tasks:.1f}",
             c.best_shortcut or "-", f"{c.best_pct:.1f}", f"{c.low_pct:.1f}-{c.high_pct:.1f}",
             _verdict(table, c)] for c in table.cells]


HOLDOUT_COLUMNS = AUDIT_COLUMNS[:-1]  # the hold-out admits nothing: no verdict column
HOLDOUT_TITLE = "hold-out strategies, never used to admit anything"


def holdout_rows(table: ShortcutAudit) -> list[list[str]] | str:
    """The hold-out table's rows beside the audit, or the one line saying why there are none."""
    if table.holdout is None:
        return "not measured (this audit was written before the hold-out strategies were stored)"
    if not table.holdout.cells:
        return "no knowledge tasks to measure"
    return [r[:-1] for r in audit_rows(table.holdout)]


def _verdict(table: ShortcutAudit, c: AuditCell) -> str:
    if not c.admitted:
        return f"no (over {table.limit_pct:g}%)"
    if c.best_pct > table.limit_pct:
        return f"yes (over {table.limit_pct:g}%, fewer than {JUDGED_TASKS} tasks to judge)"
    return "yes"
