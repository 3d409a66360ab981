"""The policy of a metric: which rule effects are in force on it, and which pairs conflict.

`metric_policy` composes a metric's effects in COMPOSITION order, applies `supersedes`, and
reports the pairs whose order would change the answer (two overrides, two thresholds of one
parameter, two adjustments of one column, an override with a weight or an adjustment, unless
their `applies_when` slices are disjoint, or one states `after:` the other). Pure functions; the
pack (ingest/conflicts.py) and the graph (stores/policies.py) readers call them. The rules:
docs/architecture.md, "Policies".
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from dibench.core.errors import DibenchError
from dibench.sqlops.ops import AnyEffect, Entry, policy_order


@dataclass(frozen=True)
class Conflict:
    metric: str
    rule_a: str
    rule_b: str
    reason: str

    def line(self, where: Mapping[str, str] | None = None) -> str:
        """One line naming both documents (file names when `where` maps rule ids to them)."""
        a = (where or {}).get(self.rule_a, self.rule_a)
        b = (where or {}).get(self.rule_b, self.rule_b)
        return (f"policy conflict on metric {self.metric}: {a} and {b} {self.reason}; "
                f"state which applies first with `after: {self.rule_a}` on the other's effect, or add "
                f"`supersedes: {self.rule_a}` to the later document (or the reverse)")


def _disjoint(a: AnyEffect, b: AnyEffect) -> bool:
    """Both apply only where one dimension takes two different values: they never meet on a row."""
    return (a.applies_when is not None and b.applies_when is not None
            and a.applies_when.dimension == b.applies_when.dimension
            and str(a.applies_when.value) != str(b.applies_when.value))


def _clash(a: AnyEffect, b: AnyEffect) -> str | None:
    ops = {a.op, b.op}
    if _disjoint(a, b):
        return None
    if ops == {"override"}:
        return "both override the value"
    if ops == {"threshold"} and getattr(a, "param", None) == getattr(b, "param", None):
        return f"both set the parameter :{getattr(a, 'param')}"
    if ops == {"adjust"} and getattr(a, "column", None) == getattr(b, "column", None):
        return f"both adjust {getattr(a, 'column')}"
    if "override" in ops and ops & {"weight", "adjust"}:
        return f"override the value and {(ops - {'override'}).pop()} it"
    return None


def _order_problem(ra: str, ea: AnyEffect, rb: str, eb: AnyEffect) -> str | None:
    """Why a stated order between two clashing effects does not resolve them (None: it does)."""
    if ea.after == rb and eb.after == ra:
        return "each state that they apply after the other"
    earlier, later = (ea, eb) if eb.after == ra else (eb, ea)
    if earlier.op == "override" and later.op in ("adjust", "weight"):
        return (f"{later.op} rows after an override of the value, which no longer reads them (put `after:` on "
                f"the override, or use `supersedes`)")
    return None


def conflicts(metric: str, entries: Sequence[Entry]) -> list[Conflict]:
    """Every conflicting pair of different rules among a metric's effects, in rule-id order: two
    effects whose order would change the answer, unless one states `after:` the other (and that
    order can be composed)."""
    out: dict[tuple[str, str], Conflict] = {}
    for (ra, ea), (rb, eb) in combinations(sorted(entries, key=lambda e: e[0]), 2):
        if ra == rb:
            continue
        reason = _clash(ea, eb)
        if reason is not None and (ea.after == rb or eb.after == ra):
            reason = _order_problem(ra, ea, rb, eb)
        if reason is not None and (ra, rb) not in out:
            out[(ra, rb)] = Conflict(metric, ra, rb, reason)
    try:
        policy_order(entries)
    except DibenchError:  # a longer cycle of `after:`: no order exists
        ids = sorted({r for r, e in entries if e.after})
        out.setdefault((ids[0], ids[-1]), Conflict(metric, ids[0], ids[-1], "are in a cycle of `after:`"))
    return list(out.values())


ORDERED = frozenset({"threshold", "override"})  # ops whose conflicts precedence resolves


def precedence(entries: Sequence[Entry], supersedes: Mapping[str, str | None]) -> set[tuple[str, str]]:
    """(winner, loser) pairs among the rules of this metric."""
    present = {r for r, _ in entries}
    return {(new, old) for new, old in supersedes.items() if old and new in present and old in present and new != old}


@dataclass(frozen=True)
class MetricPolicy:
    """A metric's policy: the effects in force, and what keeps it from being complete."""

    metric: str
    entries: tuple[Entry, ...]
    superseded: tuple[str, ...] = ()  # rules another rule takes precedence over on this metric
    winners: tuple[str, ...] = ()  # rules that take precedence over another on this metric
    conflicts: tuple[Conflict, ...] = ()
    unknown: tuple[str, ...] = ()  # rules that mention the metric but state no effects

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(sorted({r for r, _ in self.entries}))

    @property
    def complete(self) -> bool:
        return not self.conflicts and not self.unknown

    def order(self) -> list[str]:
        """The rules in the order their effects apply (ops.policy_order), each at its first effect;
        rule-id order when a stated order cannot be composed (the policy then has a conflict)."""
        try:
            ordered = policy_order(self.entries, frozenset(self.winners))
        except DibenchError:
            ordered = list(self.entries)
        return list(dict.fromkeys(r for r, _ in ordered))


def metric_policy(metric: str, entries: Iterable[Entry], supersedes: Mapping[str, str | None],
                  unknown: Iterable[str] = ()) -> MetricPolicy:
    """The policy of `metric` from its candidate effects (verified, current)."""
    entries = list(entries)
    pairs = precedence(entries, supersedes)
    losers = {old for _, old in pairs}
    kept = tuple(sorted(((r, e) for r, e in entries if r not in losers or e.op in ORDERED), key=lambda e: e[0]))
    resolved = pairs | {(b, a) for a, b in pairs}
    open_ = tuple(c for c in conflicts(metric, kept) if (c.rule_a, c.rule_b) not in resolved)
    return MetricPolicy(metric, kept, tuple(sorted(losers)), tuple(sorted({new for new, _ in pairs})), open_,
                        tuple(sorted(set(unknown))))
