"""No-understanding strategies: the shortcuts every generated benchmark is audited against.

One module per family, each a tuple `SHORTCUTS` of named strategies; `registry()` lists them all
in a fixed order. A family is added by writing its module and naming it here
(docs/evaluation.md, "Shortcut audit")."""
from __future__ import annotations

from dibench.generation.shortcuts import common, constants, dumps, neighbours, orders, priors, question, retrieval, \
    rules, typed
from dibench.generation.shortcuts.base import AuditTask, Corpus, Shortcut, passes, stem_of

__all__ = ["AuditTask", "Corpus", "Shortcut", "passes", "registry", "stem_of"]

FAMILIES = (constants, priors, common, question, orders, dumps, typed, retrieval, neighbours, rules)


def registry() -> list[Shortcut]:
    return [s for family in FAMILIES for s in family.SHORTCUTS]
