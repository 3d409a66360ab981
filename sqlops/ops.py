"""Rule operations on a metric's SQL tree.

Each effect of a rule document is one typed operation; `apply_effect` copies the tree and returns
the changed copy with the bind parameters it introduced (literals in predicates are lifted into
parameters). Row-level operations honour `applies_when` and `from_date` row by row; an override
applies to a group only when the whole group lies in the slice. A policy is applied in the order
COMPOSITION, an effect that states `after: RULE` after that rule's (docs/architecture.md, "Policies").
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dibench.core.errors import RewriteError
from dibench.core.models import (
    AdjustEffect, ExcludeEffect, HavingEffect, MetricSpec, OverrideEffect, SuppressEffect, ThresholdEffect,
    WeightEffect, WhereEffect,
)
from dibench.sqlops.dialect import parse_expression
from dibench.sqlops.scope import foreign_schemas, schemas_named
from dibench.sqlops.tree import aliased_column, column, outer_select, value_projection

AnyEffect = (WhereEffect | ExcludeEffect | HavingEffect | ThresholdEffect | AdjustEffect | WeightEffect | OverrideEffect
             | SuppressEffect)

# The composition order of a policy: stage of each op (lower first).
COMPOSITION: dict[str, int] = {"where": 0, "exclude": 0, "threshold": 1, "adjust": 2, "weight": 3, "override": 4,
                               "having": 5, "suppress": 5}
# The order in which effects are rewritten into the tree: as COMPOSITION, but a threshold goes in
# last. It sets a parameter wherever the final statement reads it, so an override or adjustment
# written with the parameter (:lgd in an expected-loss formula) gets the rule's value too.
TREE_STAGE: dict[str, int] = {**COMPOSITION, "threshold": 6}


@dataclass
class Bound:
    """A tree with the parameters bound so far."""

    tree: exp.Expression
    params: dict[str, Any] = field(default_factory=dict)


def param_prefix(tag: str) -> str:
    return "r_" + re.sub(r"[^a-z0-9]+", "_", tag.lower()).strip("_")


def _literal_value(lit: exp.Literal, typed: bool) -> Any:
    if lit.is_string:
        return lit.this
    text = str(lit.this)
    if not _decimal(lit):
        return int(text)
    # A typed decimal literal binds as its text, cast back to NUMERIC (`_typed`): the arithmetic
    # stays exact, with the literal's own scale, as the document wrote it. Values survive a task's
    # JSON round trip unchanged either way (an untyped one is a float, as before).
    return text if typed else float(text)


def _decimal(lit: exp.Literal) -> bool:
    return not lit.is_string and any(ch in str(lit.this) for ch in ".eE")


def _typed(lit: exp.Literal) -> bool:
    """Whether `lit` binds as NUMERIC: a decimal literal, as PostgreSQL types it, except the
    fraction of PERCENTILE_CONT/DISC, which the function's float8 argument types (and which
    sqlglot mis-transpiles when cast)."""
    return _decimal(lit) and not isinstance(lit.parent, (exp.PercentileCont, exp.PercentileDisc))


def _bind(lit: exp.Literal, name: str, params: dict[str, Any]) -> exp.Expression:
    """The placeholder that stands for `lit`, its value in `params`."""
    typed = _typed(lit)
    params[name] = _literal_value(lit, typed)
    holder = exp.Placeholder(this=name)
    return exp.cast(holder, exp.DataType.build("NUMERIC")) if typed else holder


def bind_literals(expr: exp.Expression, prefix: str, params: dict[str, Any]) -> exp.Expression:
    """Replace every value literal of a document's expression with a named placeholder.

    Literals inside type names (NUMERIC(10, 2)) are syntax, not values, and stay. An interval
    literal cannot be a placeholder (`INTERVAL :p` is not SQL): it becomes CAST(:p AS INTERVAL).
    """
    expr = expr.copy()
    if isinstance(expr, exp.Literal):  # a bare value, e.g. a weight of "2": nothing to replace it in
        name = f"{prefix}_{len(params)}"
        return _bind(expr, name, params)
    for iv in list(expr.find_all(exp.Interval)):
        if not isinstance(iv.this, exp.Literal):
            continue
        unit = iv.args.get("unit")
        name = f"{prefix}_{len(params)}"
        params[name] = f"{iv.this.this} {unit.name}" if unit is not None else str(iv.this.this)
        iv.replace(exp.cast(exp.Placeholder(this=name), exp.DataType.build("INTERVAL")))
    # Pruning type names while walking keeps this linear; asking each literal for a DataType
    # ancestor walked up the whole tree (quadratic on a long OR chain).
    literals = [n for n in expr.walk(prune=lambda n: isinstance(n, exp.DataType)) if isinstance(n, exp.Literal)]
    for lit in literals:
        name = f"{prefix}_{len(params)}"
        lit.replace(_bind(lit, name, params))
    return expr


def document_expression(text: str, where: str, tree: exp.Expression, prefix: str,
                        params: dict[str, Any]) -> exp.Expression:
    """A rule's expression, parsed within the size limits, refused when it names a schema the
    metric's tree does not read (or a non-built-in function), its literals bound as parameters."""
    expr = parse_expression(text, where=where)
    problems = foreign_schemas(expr, schemas_named(tree))
    if problems:
        raise RewriteError(f"{where}: {problems[0]}")
    return bind_literals(expr, prefix, params)


def _guard(tree: exp.Expression, eff: AnyEffect, metric: MetricSpec, prefix: str,
           params: dict[str, Any]) -> exp.Expression | None:
    parts: list[exp.Expression] = []
    if eff.applies_when is not None:
        name = f"{prefix}_when"
        params[name] = eff.applies_when.value
        parts.append(exp.EQ(this=column(tree, eff.applies_when.dimension), expression=exp.Placeholder(this=name)))
    if eff.from_date is not None:
        name = f"{prefix}_from"
        params[name] = eff.from_date
        parts.append(exp.GTE(this=aliased_column(metric.time_ref), expression=exp.Placeholder(this=name)))
    if not parts:
        return None
    return exp.and_(*parts) if len(parts) > 1 else parts[0]


def _coalesce_false(e: exp.Expression) -> exp.Expression:
    return exp.func("COALESCE", exp.paren(e), exp.false())


def _where(tree: exp.Expression, eff: WhereEffect | ExcludeEffect, metric: MetricSpec, prefix: str,
           params: dict[str, Any]) -> exp.Expression:
    pred = document_expression(eff.predicate, f"effect on {eff.metric}: predicate", tree, prefix, params)
    guard = _guard(tree, eff, metric, prefix, params)
    if isinstance(eff, ExcludeEffect):
        matched = exp.and_(guard, exp.paren(pred)) if guard is not None else pred
        cond: exp.Expression = exp.not_(_coalesce_false(matched))
    elif guard is not None:
        cond = exp.or_(exp.not_(_coalesce_false(guard)), exp.paren(pred))
    else:
        cond = pred
    return outer_select(tree).where(exp.paren(cond), copy=False)


def _having(tree: exp.Expression, eff: HavingEffect, metric: MetricSpec, prefix: str,
            params: dict[str, Any]) -> exp.Expression:
    if eff.applies_when or eff.from_date:
        raise RewriteError(f"effect on {eff.metric}: op having takes no applies_when/from_date")
    pred = document_expression(eff.predicate, f"effect on {eff.metric}: predicate", tree, prefix, params)
    return outer_select(tree).having(exp.paren(pred), copy=False)


def _suppress(tree: exp.Expression, eff: SuppressEffect, metric: MetricSpec, prefix: str,
              params: dict[str, Any]) -> exp.Expression:
    if eff.applies_when or eff.from_date:
        raise RewriteError(f"effect on {eff.metric}: op suppress takes no applies_when/from_date")
    counted = document_expression(eff.count, f"effect on {eff.metric}: count", tree, prefix, params)
    name = f"{prefix}_min_n"
    params[name] = eff.min_n
    return outer_select(tree).having(exp.GTE(this=counted, expression=exp.Placeholder(this=name)), copy=False)


def _fractional(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer()


def numeric_parameters(tree: exp.Expression, params: dict[str, Any]) -> exp.Expression:
    """The metric's placeholders whose default is a fraction (:lgd = 0.45) typed NUMERIC, in place:
    a float binds as double precision, and `l.amount * :lgd` would then be computed in binary
    floating point. The cast reads the bound float through its 15 significant digits, exactly 0.45."""
    for hole in list(tree.find_all(exp.Placeholder)):
        if _fractional(params.get(hole.name)) and not isinstance(hole.parent, exp.Cast):
            hole.replace(exp.cast(exp.Placeholder(this=hole.name), exp.DataType.build("NUMERIC")))
    return tree


def _threshold(tree: exp.Expression, eff: ThresholdEffect, metric: MetricSpec, prefix: str,
               params: dict[str, Any]) -> exp.Expression:
    holes = [p for p in tree.find_all(exp.Placeholder) if p.name == eff.param]
    if not holes:
        raise RewriteError(f"effect on {eff.metric}: parameter :{eff.param} does not occur in the metric SQL")
    name = f"{prefix}_{eff.param}"
    params[name] = eff.value
    guard = _guard(tree, eff, metric, prefix, params)
    for hole in holes:
        new: exp.Expression = exp.Placeholder(this=name)
        if _fractional(eff.value):  # exact, as the metric's own fractional parameters (numeric_parameters)
            new = exp.cast(new, exp.DataType.build("NUMERIC"))
        if guard is not None:
            new = exp.Case(ifs=[exp.If(this=guard.copy(), true=new)], default=exp.Placeholder(this=eff.param))
        hole.replace(new)
    return tree


def _not_null(e: exp.Expression) -> exp.Expression:
    return exp.not_(exp.Is(this=e.copy(), expression=exp.null()))


def _weighted(agg: exp.Expression, w: exp.Expression, where: exp.Expression | None) -> exp.Expression | None:
    """The weighted form of one aggregate; `where` is its FILTER clause, kept on every new SUM."""
    def total(e: exp.Expression) -> exp.Expression:
        s = exp.func("SUM", e)
        return exp.Filter(this=s, expression=where.copy()) if where is not None else s

    if isinstance(agg, exp.Count):
        # A count over no rows is 0, a sum over no rows is NULL: keep the count's 0.
        arg = agg.this
        if isinstance(arg, exp.Star) or arg is None:
            return exp.func("COALESCE", total(w.copy()), exp.Literal.number(0))
        if isinstance(arg, exp.Distinct):
            return None  # a distinct count has no row weight
        return exp.func("COALESCE", total(exp.Case(ifs=[exp.If(this=_not_null(arg), true=w.copy())])),
                        exp.Literal.number(0))
    if isinstance(agg, exp.Sum):
        return total(exp.Mul(this=exp.paren(agg.this.copy()), expression=exp.paren(w.copy())))
    if isinstance(agg, exp.Avg):
        # AVG of integers or numerics is numeric in Postgres: keep that (no integer division,
        # no silent switch to double precision); typed=True stops sqlglot adding its own cast.
        num = exp.cast(total(exp.Mul(this=exp.paren(agg.this.copy()), expression=exp.paren(w.copy()))), "NUMERIC")
        den = total(exp.Case(ifs=[exp.If(this=_not_null(agg.this), true=w.copy())]))
        return exp.paren(exp.Div(this=num, expression=exp.func("NULLIF", den, exp.Literal.number(0)), typed=True))
    return None


def _weight(tree: exp.Expression, eff: WeightEffect, metric: MetricSpec, prefix: str,
            params: dict[str, Any]) -> exp.Expression:
    w = document_expression(eff.weight, f"effect on {eff.metric}: weight", tree, prefix, params)
    guard = _guard(tree, eff, metric, prefix, params)
    if guard is not None:
        w = exp.Case(ifs=[exp.If(this=guard, true=exp.paren(w))], default=exp.Literal.number(1))
    proj = value_projection(tree)
    changed = 0
    for agg in list(proj.find_all(exp.Count, exp.Sum, exp.Avg)):
        # An aggregate's FILTER (WHERE ...) wraps it in the tree: the weighted form replaces the
        # whole FILTER node and carries the clause itself (an AVG becomes two filtered SUMs).
        filt = agg.parent if isinstance(agg.parent, exp.Filter) else None
        new = _weighted(agg, w, filt.expression if filt is not None else None)
        if new is None:
            continue
        (filt or agg).replace(new)
        changed += 1
    if not changed:
        raise RewriteError(f"effect on {eff.metric}: weight found no COUNT/SUM/AVG to weight in `value`")
    return tree


def _adjust(tree: exp.Expression, eff: AdjustEffect, metric: MetricSpec, prefix: str,
            params: dict[str, Any]) -> exp.Expression:
    alias, name = eff.column.split(".", 1)
    proj = value_projection(tree)
    refs = [c for c in proj.find_all(exp.Column) if c.name == name and c.table == alias]
    if not refs:
        raise RewriteError(f"effect on {eff.metric}: column {eff.column} does not occur in the metric's `value`")
    new = bind_literals(parse_expression(eff.expression, where=f"effect on {eff.metric}: expression"), prefix, params)
    guard = _guard(tree, eff, metric, prefix, params)
    for ref in refs:
        # The replacement mentions the column itself (o.freight / 1.1): build it from a copy so that
        # the references just replaced are not visited again.
        value: exp.Expression = exp.paren(new.copy())
        if guard is not None:
            value = exp.Case(ifs=[exp.If(this=guard.copy(), true=value)], default=ref.copy())
        ref.replace(value)
    return tree


def _override(tree: exp.Expression, eff: OverrideEffect, metric: MetricSpec, prefix: str,
              params: dict[str, Any]) -> exp.Expression:
    if eff.from_date:
        raise RewriteError(f"effect on {eff.metric}: op override takes applies_when, not from_date")
    new = document_expression(eff.expression, f"effect on {eff.metric}: expression", tree, prefix, params)
    proj = value_projection(tree)
    guard = _guard(tree, eff, metric, prefix, params)
    if guard is not None:
        new = exp.Case(ifs=[exp.If(this=exp.func("BOOL_AND", guard), true=new)], default=proj.this.copy())
    proj.set("this", new)
    return tree


_OPS = {
    "where": _where, "exclude": _where, "having": _having, "suppress": _suppress,
    "threshold": _threshold, "adjust": _adjust, "weight": _weight, "override": _override,
}


def apply_effect(bound: Bound, eff: AnyEffect, metric: MetricSpec, tag: str) -> Bound:
    """Return a new Bound with `eff` applied; `tag` names the rule (for parameter names)."""
    params = dict(bound.params)
    tree = bound.tree.copy()
    prefix = param_prefix(tag)
    if any(k.startswith(prefix + "_") for k in bound.params):
        prefix = f"{prefix}_{len(params)}"
    tree = _OPS[eff.op](tree, eff, metric, prefix, params)  # type: ignore[operator]
    return Bound(tree, params)


def composition_key(tag: str, eff: AnyEffect, winners: frozenset[str] = frozenset(),
                    stages: dict[str, int] = COMPOSITION) -> tuple[int, int, str]:
    """Stage, then precedence, then rule id. A rule that takes precedence (`supersedes`) must hold
    where both apply: a threshold rewrites the parameter's holes it finds, so the winner goes
    first (later thresholds only reach the holes left in its ELSE); an override wraps the value,
    so the winner goes last."""
    first = 0 if tag in winners else 1
    rank = first if eff.op == "threshold" else (1 - first if eff.op == "override" else 0)
    return stages[eff.op], rank, tag


Entry = tuple[str, AnyEffect]  # (rule id, effect on one metric)


def _stated_after(entries: Sequence[Entry]) -> list[tuple[int, int]]:
    """(i, j): effect j says `after:` the rule of effect i (a rule without an effect here orders nothing)."""
    return [(i, j) for j, (_, ej) in enumerate(entries) if ej.after
            for i, (ti, _) in enumerate(entries) if ti == ej.after and i != j]


def _rewritten_first(earlier: AnyEffect, later: AnyEffect) -> bool | None:
    """Whether, for `later` to apply to what `earlier` produced, `earlier` is rewritten into the
    tree first (True), second (False), or either (None: they commute). A threshold fills the
    parameter's holes it finds and an adjustment substitutes a column inside the value, so the
    later one goes into the tree first (the earlier then reaches its ELSE, or feeds it its column);
    an override replaces the value, so the later one goes in last; an override after a row-level
    adjustment or weight goes in first, so that its formula reads the adjusted, weighted rows."""
    ops = (earlier.op, later.op)
    if ops in (("threshold", "threshold"), ("adjust", "adjust")) or (later.op == "override" and earlier.op in (
            "adjust", "weight")):
        return False
    if ops == ("override", "override"):
        return True
    return None


def _topological(entries: Sequence[Entry], before: list[tuple[int, int]], base: list[int]) -> list[int]:
    """Indexes of `entries` with every (a, b) of `before` putting a first, otherwise in `base` order."""
    placed: list[int] = []
    pending = list(base)
    while pending:
        ready = next((k for k in pending if all(a in placed for a, b in before if b == k)), None)
        if ready is None:
            cycle = sorted({entries[k][0] for k in pending})
            raise RewriteError(f"effects of rules {', '.join(cycle)} on metric {entries[0][1].metric} each apply "
                               f"after another (`after:` makes a cycle)")
        placed.append(ready)
        pending.remove(ready)
    return placed


def policy_order(entries: Sequence[Entry], winners: frozenset[str] = frozenset()) -> list[Entry]:
    """The effects in the order a reader applies them to the data: COMPOSITION's stages (stage,
    precedence, rule id), except that an effect stating `after: RULE` comes after that rule's."""
    base = sorted(range(len(entries)), key=lambda k: composition_key(entries[k][0], entries[k][1], winners))
    return [entries[k] for k in _topological(entries, _stated_after(entries), base)]


def tree_order(entries: Sequence[Entry], winners: frozenset[str] = frozenset()) -> list[Entry]:
    """The order in which the effects are rewritten into the metric's tree so that it computes
    `policy_order` (`_rewritten_first` per ordered pair)."""
    base = sorted(range(len(entries)), key=lambda k: composition_key(entries[k][0], entries[k][1], winners, TREE_STAGE))
    before = []
    for i, j in _stated_after(entries):
        first = _rewritten_first(entries[i][1], entries[j][1])
        if first is not None:
            before.append((i, j) if first else (j, i))
    return [entries[k] for k in _topological(entries, before, base)]


def apply_effects(bound: Bound, effects: Sequence[Entry], metric: MetricSpec,
                  winners: frozenset[str] = frozenset()) -> Bound:
    """Apply (rule_id, effect) pairs in the composition order (stage, precedence, rule id; an
    effect stating `after:` applies to what that rule's effect produced: `tree_order`)."""
    original = {p.name for p in bound.tree.find_all(exp.Placeholder)}
    for tag, eff in tree_order(list(effects), winners):
        if (eff.op == "threshold" and eff.param in original
                and not any(p.name == eff.param for p in bound.tree.find_all(exp.Placeholder))):
            continue  # an override replaced every use of the parameter: there is nothing left to set
        # A parameter the statement never had stays an error (apply_effect says which).
        bound = apply_effect(bound, eff, metric, tag)
    return bound


def default_params(metric: MetricSpec, start: dt.date, end: dt.date) -> dict[str, Any]:
    return {"start_date": start, "end_date": end, **metric.params}
