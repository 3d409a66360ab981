"""Rule operations on a metric's SQL tree.

Each effect of a rule document is one typed operation; `apply_effect` copies the tree and
returns the changed copy plus the bind parameters it introduced. Values from documents
never enter SQL text: literals in predicates are lifted into named parameters.

Row-level operations (where, exclude, threshold, weight) honour two guards:
`applies_when` (dimension = value) and `from_date` (metric time column >= date). The
aggregate-level override is guarded with bool_and(...) so that it applies to a group only
when the whole group lies in the slice.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from service.errors import RewriteError
from service.models import (
    ExcludeEffect, HavingEffect, MetricSpec, OverrideEffect, SuppressEffect, ThresholdEffect, WeightEffect,
    WhereEffect,
)
from sqlops.dialect import parse_expression
from sqlops.tree import aliased_column, column, outer_select, value_projection

AnyEffect = WhereEffect | ExcludeEffect | HavingEffect | ThresholdEffect | WeightEffect | OverrideEffect | SuppressEffect
_VALUE_PARENTS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.In, exp.Between,
                  exp.Is)


@dataclass
class Bound:
    """A tree with the parameters bound so far."""

    tree: exp.Expression
    params: dict[str, Any] = field(default_factory=dict)


def param_prefix(tag: str) -> str:
    return "r_" + re.sub(r"[^a-z0-9]+", "_", tag.lower()).strip("_")


def bind_literals(expr: exp.Expression, prefix: str, params: dict[str, Any]) -> exp.Expression:
    """Replace value literals (operands of comparisons, IN, BETWEEN, LIKE) with named placeholders."""
    expr = expr.copy()
    for lit in list(expr.find_all(exp.Literal)):
        if not isinstance(lit.parent, _VALUE_PARENTS):
            continue
        name = f"{prefix}_{len(params)}"
        value: Any = lit.this
        if not lit.is_string:
            value = float(value) if any(ch in value for ch in ".eE") else int(value)
        params[name] = value
        lit.replace(exp.Placeholder(this=name))
    return expr


def _condition(sql: str, where: str, prefix: str, params: dict[str, Any]) -> exp.Expression:
    return bind_literals(parse_expression(sql, where=where), prefix, params)


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
        parts.append(exp.GTE(this=aliased_column(metric.time_column), expression=exp.Placeholder(this=name)))
    if not parts:
        return None
    return exp.and_(*parts) if len(parts) > 1 else parts[0]


def _coalesce_false(e: exp.Expression) -> exp.Expression:
    return exp.func("COALESCE", exp.paren(e), exp.false())


def _where(tree: exp.Expression, eff: WhereEffect | ExcludeEffect, metric: MetricSpec, prefix: str,
           params: dict[str, Any]) -> exp.Expression:
    pred = _condition(eff.predicate, f"effect on {eff.metric}: predicate", prefix, params)
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
    pred = _condition(eff.predicate, f"effect on {eff.metric}: predicate", prefix, params)
    return outer_select(tree).having(exp.paren(pred), copy=False)


def _suppress(tree: exp.Expression, eff: SuppressEffect, metric: MetricSpec, prefix: str,
              params: dict[str, Any]) -> exp.Expression:
    if eff.applies_when or eff.from_date:
        raise RewriteError(f"effect on {eff.metric}: op suppress takes no applies_when/from_date")
    counted = parse_expression(eff.count, where=f"effect on {eff.metric}: count")
    name = f"{prefix}_min_n"
    params[name] = eff.min_n
    return outer_select(tree).having(exp.GTE(this=counted, expression=exp.Placeholder(this=name)), copy=False)


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
        if guard is not None:
            new = exp.Case(ifs=[exp.If(this=guard.copy(), true=new)], default=exp.Placeholder(this=eff.param))
        hole.replace(new)
    return tree


def _weighted(agg: exp.Expression, w: exp.Expression) -> exp.Expression | None:
    if isinstance(agg, exp.Count):
        arg = agg.this
        if isinstance(arg, exp.Star) or arg is None:
            return exp.func("SUM", w.copy())
        if isinstance(arg, exp.Distinct):
            return None  # a distinct count has no row weight
        return exp.func("SUM", exp.Case(ifs=[exp.If(this=exp.not_(exp.Is(this=arg.copy(), expression=exp.null())),
                                                     true=w.copy())]))
    if isinstance(agg, exp.Sum):
        return exp.func("SUM", exp.Mul(this=exp.paren(agg.this.copy()), expression=exp.paren(w.copy())))
    if isinstance(agg, exp.Avg):
        num = exp.func("SUM", exp.Mul(this=exp.paren(agg.this.copy()), expression=exp.paren(w.copy())))
        den = exp.func("SUM", exp.Case(ifs=[exp.If(this=exp.not_(exp.Is(this=agg.this.copy(), expression=exp.null())),
                                                   true=w.copy())]))
        return exp.Div(this=num, expression=exp.func("NULLIF", den, exp.Literal.number(0)))
    return None


def _weight(tree: exp.Expression, eff: WeightEffect, metric: MetricSpec, prefix: str,
            params: dict[str, Any]) -> exp.Expression:
    w = bind_literals(parse_expression(eff.weight, where=f"effect on {eff.metric}: weight"), prefix, params)
    guard = _guard(tree, eff, metric, prefix, params)
    if guard is not None:
        w = exp.Case(ifs=[exp.If(this=guard, true=exp.paren(w))], default=exp.Literal.number(1))
    proj = value_projection(tree)
    changed = 0
    for agg in list(proj.find_all(exp.Count, exp.Sum, exp.Avg)):
        filt = agg.parent if isinstance(agg.parent, exp.Filter) else None
        new = _weighted(agg, w)
        if new is None:
            continue
        agg.replace(new)
        changed += 1
        _ = filt  # FILTER (WHERE ...) clauses stay attached to the replaced aggregate
    if not changed:
        raise RewriteError(f"effect on {eff.metric}: weight found no COUNT/SUM/AVG to weight in `value`")
    return tree


def _override(tree: exp.Expression, eff: OverrideEffect, metric: MetricSpec, prefix: str,
              params: dict[str, Any]) -> exp.Expression:
    if eff.from_date:
        raise RewriteError(f"effect on {eff.metric}: op override takes applies_when, not from_date")
    new = bind_literals(parse_expression(eff.expression, where=f"effect on {eff.metric}: expression"), prefix, params)
    proj = value_projection(tree)
    guard = _guard(tree, eff, metric, prefix, params)
    if guard is not None:
        new = exp.Case(ifs=[exp.If(this=exp.func("BOOL_AND", guard), true=new)], default=proj.this.copy())
    proj.set("this", new)
    return tree


_OPS = {
    "where": _where, "exclude": _where, "having": _having, "suppress": _suppress,
    "threshold": _threshold, "weight": _weight, "override": _override,
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


def apply_effects(bound: Bound, effects: Sequence[tuple[str, AnyEffect]], metric: MetricSpec) -> Bound:
    """Apply (rule_id, effect) pairs in rule-id order (deterministic composition)."""
    for tag, eff in sorted(effects, key=lambda te: te[0]):
        bound = apply_effect(bound, eff, metric, tag)
    return bound


def default_params(metric: MetricSpec, start: dt.date, end: dt.date) -> dict[str, Any]:
    return {"start_date": start, "end_date": end, **metric.params}
