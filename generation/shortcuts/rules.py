"""The rule left out: a rule task answered with no rule at all (the catalog's metric), or with
the policy but without the rule the question is about; and a no-rule variant answered with the
policy anyway (its wording ignored). These read the answers generation stored for exactly these
mistakes; a rule task any of them passes does not need its rule."""
from __future__ import annotations

from typing import Any

from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut


def _asks_for_policy(task: AuditTask) -> bool:
    return task.tier == "K+A+R" and task.variant in ("standard", "oracle")


def _no_rule(task: AuditTask, corpus: Corpus) -> Any:
    return task.base if _asks_for_policy(task) else None


def _without_featured(task: AuditTask, corpus: Corpus) -> Any:
    return task.lifted if _asks_for_policy(task) else None


def _policy_anyway(task: AuditTask, corpus: Corpus) -> Any:
    if task.variant != "no_rule":
        return None
    twin = next((t for t in corpus.tasks if t.stem == task.stem and t.variant == "standard"), None)
    return twin.gold if twin is not None else None


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("no rule", _no_rule),
    Shortcut("policy without the featured rule", _without_featured),
    Shortcut("policy applied to a no-rule question", _policy_anyway),
)
