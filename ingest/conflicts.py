"""Policy conflicts of a pack: pairs of rule documents whose effects on one metric do not
commute (sqlops/policy.py), found before anything is written. `domain validate` checks every
declared effect; ingest checks the verified ones (the policy the graph will hold)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from dibench.core.pack import Pack, _rel
from dibench.sqlops.policy import Conflict, Entry, metric_policy


def pack_conflicts(pack: Pack, keep: Callable[[str, str], bool] | None = None) -> list[Conflict]:
    """Unresolved conflicts among the front-matter effects of `pack`; `keep(rule, metric)` limits
    them to the edges that are in force (e.g. verified)."""
    by_metric: dict[str, list[Entry]] = defaultdict(list)
    for doc in pack.rules:
        for eff in doc.front.effects or []:
            if keep is None or keep(doc.id, eff.metric):
                by_metric[eff.metric].append((doc.id, eff))
    supersedes = {doc.id: doc.front.supersedes for doc in pack.rules}
    out: list[Conflict] = []
    for metric in sorted(by_metric):
        out += metric_policy(metric, by_metric[metric], supersedes).conflicts
    return out


def conflict_lines(pack: Pack, found: list[Conflict]) -> list[str]:
    """One line per conflict, naming both documents by file."""
    files = {doc.id: _rel(doc.path) for doc in pack.rules}
    return [c.line(files) for c in found]
