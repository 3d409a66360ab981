"""Grounding: concrete windows and filter values drawn from the data; base SQL from the
template (no rule), gold SQL with the metric's whole policy applied on the tree, and the
variants a task stores beside it (the policy without the featured rule, the featured rule
alone); all run read-only.

A Context may exclude rules from the policy (`excluded`): re-running an analysis with the same
seeded draws and one rule excluded gives the answer an analyst who ignores that rule would
compute, which is how decisive rules are found (generation/tasks.py).
"""
from __future__ import annotations

import calendar
import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlglot import exp

from dibench.core.answers import exact_tie, float_tie, label, tie_rounding
from dibench.core.errors import RewriteError
from dibench.core.models import LLMEffects, MetricSpec
from dibench.generation import grouped as grouped_plan
from dibench.generation.executor import Executor, Part, Shape, Statement
from dibench.generation.skeletons import Skeleton
from dibench.sqlops import grouped as grouped_sql
from dibench.sqlops.dialect import parse, parse_expression, render
from dibench.sqlops.ops import AnyEffect, Bound, apply_effects, numeric_parameters
from dibench.sqlops.shape import combine, distinct_values, edge_placeholders, rename_placeholders
from dibench.sqlops.tree import aliased_column, column
from dibench.stores.pack_data import as_date, metric_window
from dibench.stores.warehouse import QueryResult, Warehouse


@dataclass(frozen=True)
class Pair:
    gold_rows: list[tuple[Any, ...]]
    base_rows: list[tuple[Any, ...]]
    gold_sql: str
    base_sql: str
    gold_params: dict[str, Any]
    base_params: dict[str, Any]
    lifted_rows: list[tuple[Any, ...]] | None = None  # the policy without the featured rule


T = TypeVar("T")
WINDOW = frozenset({"start_date", "end_date"})


@dataclass
class Context:
    """One analysis of one skeleton: the metric's SQL under its policy (minus `excluded` rules),
    without any rule (base), and without the featured rule (lifted). A derived metric is compiled
    into one statement: each input under its own rules, shaped alike, joined (sqlops.shape.combine)."""

    metric: MetricSpec
    skeleton: Skeleton
    ex: Executor
    rng: random.Random
    data_window: tuple[dt.date, dt.date]
    rule_docs: dict[str, Any] = field(default_factory=dict)
    excluded: frozenset[str] = frozenset()
    fixed: dict[str, Any] = field(default_factory=dict)  # facts the primary attempt fixed (a threshold)
    metrics: dict[str, MetricSpec] = field(default_factory=dict)  # the pack's: inputs of a derived metric
    last: tuple[Shape, dict[str, Any]] | None = field(default=None, init=False)
    # Values of the rows read under the policy or without rules that lie on a rounding tie (exact,
    # or a float within float error of one): their count, and (gold rounding, the other right one).
    exact_ties: int = field(default=0, init=False)
    ties: list[tuple[float, float]] = field(default_factory=list, init=False)
    _parts: dict[frozenset[str], tuple[Part, ...]] = field(default_factory=dict, init=False)
    _shaped: dict[tuple[int, str], tuple[Shape, Any]] = field(default_factory=dict, init=False)

    @property
    def base(self) -> Bound:
        """The first part without rules: what dimension values and time bounds are read from."""
        return self.under(frozenset())[0].bound

    @property
    def in_force(self) -> frozenset[str]:
        return frozenset(r.rule_id for r in self.skeleton.policy) - self.excluded

    @property
    def featured(self) -> str | None:
        return self.skeleton.featured.rule_id if self.skeleton.featured else None

    def inputs(self) -> list[tuple[str, MetricSpec]]:
        if self.metric.derived is None:
            return [("", self.metric)]
        try:
            return [(name, self.metrics[mid]) for name, mid in self.metric.derived.inputs.items()]
        except KeyError as exc:
            raise RewriteError(f"metric {self.metric.id}: input metric {exc} is not in the pack") from exc

    def effects(self, rule_ids: frozenset[str], metric: MetricSpec) -> list[tuple[str, AnyEffect]]:
        out = []
        for ref in self.skeleton.policy:
            if ref.rule_id in rule_ids:
                out += [(ref.rule_id, LLMEffects.model_validate({"effects": [e]}).effects[0])
                        for e in ref.effects_json() if e.get("metric") == metric.id]
        return out

    def shaped(self, shape: Shape, what: str, build: Callable[[], T]) -> T:
        """`build()` once per shape and `what` in this Context: the answers under the policy,
        without rules and without the featured rule of one `pair` are shaped alike, and shaping
        and rendering a statement costs more than reading its answer from the Executor's cache.
        The shape is kept with its result, so its id cannot be reused by another."""
        key = (id(shape), what)
        hit = self._shaped.get(key)
        if hit is None or hit[0] is not shape:
            hit = (shape, build())
            self._shaped[key] = hit
        return cast(T, hit[1])

    def under(self, rule_ids: frozenset[str]) -> tuple[Part, ...]:
        """The metric's part(s) with the effects of `rule_ids` applied in the composition order."""
        key = frozenset(rule_ids)
        if key not in self._parts:
            # The same rules on the same metric give the same parts in every Context of the run
            # (attempts, variants, other skeletons): built once. Parts are never changed in place.
            self._parts[key] = self.ex.remember(("parts", *self.policy_key(key)), lambda: self._build_parts(key),
                                                pin=True)
        return self._parts[key]

    def policy_key(self, rule_ids: frozenset[str] | None = None) -> tuple[Any, ...]:
        """What the metric's statement under `rule_ids` (default: its whole policy) is built from,
        as a cache key: the metric's SQL and each rule's id, content, operation and supersedes."""
        refs = tuple(sorted((r.rule_id, r.content_hash, r.op, r.supersedes or "") for r in self.skeleton.policy
                            if rule_ids is None or r.rule_id in rule_ids))
        return self.metric.id, self.metric.sql, refs

    def _build_parts(self, key: frozenset[str]) -> tuple[Part, ...]:
        ids = {r.rule_id for r in self.skeleton.policy if r.rule_id in key}
        winners = frozenset(r.rule_id for r in self.skeleton.policy if r.rule_id in ids and r.supersedes in ids)
        parts = []
        for name, m in self.inputs():
            tree = parse(m.template, where=f"metric {m.id}: sql")
            tree.meta["time_column"] = m.time_ref
            bound = apply_effects(Bound(tree), self.effects(key, m), m, winners)
            # after the effects: an override may write the metric's parameters anew (:lgd)
            bound = Bound(numeric_parameters(bound.tree, m.params), bound.params)
            if name:
                bound = Bound(rename_placeholders(bound.tree, f"{name}__", WINDOW),
                              {f"{name}__{k}": v for k, v in bound.params.items()})
            parts.append(Part(name, m, bound))
        return tuple(parts)

    @property
    def has_rules(self) -> bool:
        return bool(self.in_force)

    def time(self, tree: exp.Expression) -> exp.Expression:
        """The time column of the (part's) query `tree` (over partials: a day of the partial's month)."""
        if tree.meta.get("grouped"):
            return grouped_sql.month_column()
        return aliased_column(str(tree.meta.get("time_column") or self.metric.time_ref))

    def reads_period_edge(self) -> bool:
        """Whether the metric under its policy reads the period's end or start beyond bounding its
        time column (a backlog still open at the end; a rule keeping accounts opened three months
        before it): by month, each month is measured at its own (sqlops.shape.by_month)."""
        return any(edge_placeholders(p.bound.tree, self.time(p.bound.tree)) for p in self.under(self.in_force))

    def dim(self, tree: exp.Expression) -> exp.Expression:
        """The skeleton's dimension column as the (part's) query `tree` reads it."""
        if tree.meta.get("grouped"):
            return grouped_sql.group_column()
        return column(tree, self.skeleton.dimension)

    @property
    def dim_col(self) -> exp.Expression:
        return self.dim(self.base.tree)

    def conditional_value(self) -> str | None:
        for r in self.skeleton.rules:
            if r.applies_dimension == self.skeleton.dimension and r.applies_value is not None:
                return r.applies_value
        return None

    def window_params(self, window: tuple[dt.date, dt.date]) -> dict[str, Any]:
        out: dict[str, Any] = {"start_date": window[0], "end_date": window[1]}
        for part in self.under(frozenset()):
            out.update({part.prefix + k: v for k, v in part.metric.params.items()})
        return out

    def pair(self, shape: Shape, window: tuple[dt.date, dt.date], extra: dict[str, Any] | None = None, *,
             lifted: bool = False) -> Pair:
        """Run the shaped query under the policy and without rules (and, with `lifted`, without the
        featured rule); remember the shape so that `statement` can render other variants. A
        variant Context (rules `excluded`) leaves the statements unrendered: only its answer is
        read (generation/tasks.py), and rendering a whole metric statement costs more than
        answering it from the grouped plan."""
        base_params = {**self.window_params(window), **(extra or {})}
        self.last = (shape, base_params)
        gold = self.rows(self.in_force, window, extra)
        base = self.rows(frozenset(), window, extra) if self.has_rules else gold
        digits = self.metric.rounding
        on_tie = [v for r in [*gold.rows, *base.rows] for v in r if exact_tie(v, digits) or float_tie(v, digits)]
        self.exact_ties += len(on_tie)
        pairs = [tie_rounding(v, digits) for v in on_tie]
        self.ties = list(dict.fromkeys([*self.ties, *(t for t in pairs if t is not None)]))
        lifted_rows = None
        if lifted:
            lifted_rows = self.rows(self.in_force - {self.featured}, window, extra).rows
        if self.excluded:
            return Pair(gold.rows, base.rows, "", "", {}, {}, lifted_rows)
        gold_st, base_st = self.statement(self.in_force), self.statement(frozenset())
        return Pair(gold.rows, base.rows, gold_st.sql, base_st.sql, gold_st.params, base_st.params, lifted_rows)

    def rows(self, rule_ids: frozenset[str], window: tuple[dt.date, dt.date],
             extra: dict[str, Any] | None) -> QueryResult:
        """What the last shape under `rule_ids` returns: from the grouped plan when it applies,
        else by running its statement."""
        assert self.last is not None
        return self.planned(rule_ids, self.last[0], window, extra or {}, lambda: self.statement(rule_ids))

    def planned(self, rule_ids: frozenset[str], shape: Shape, window: tuple[dt.date, dt.date],
                extra: dict[str, Any], statement: Callable[[], Statement]) -> QueryResult:
        """`shape` of the metric under `rule_ids` in `window`: answered from the grouped plan
        (generation/grouped.py caches it), or else `statement()` is rendered and run (cached by its
        SQL and parameters)."""
        planned: QueryResult | str = "switched off"
        if self.ex.grouped:
            planned = grouped_plan.answer(self, rule_ids, shape, window, extra)
        if isinstance(planned, QueryResult):
            self.ex.plan_log.append("grouped")
            return planned
        self.ex.plan_log.append(f"legacy: {planned}")
        if self.ex.grouped:  # one statement for the shape under every rule set, when they combine
            batch = grouped_plan.batched(self, rule_ids, shape, window, extra, exact=True)
            if batch is not None:
                return batch
        st = statement()
        # NUMERIC values stay Decimal: answers are rounded on the exact value (core.answers.rnd).
        return self.ex.run(st.sql, st.params, exact=True)

    def statement(self, rule_ids: frozenset[str]) -> Statement:
        """The last shaped query under `rule_ids` (not run)."""
        assert self.last is not None, "statement() needs a pair() first"
        shape, base_params = self.last
        parts = self.under(rule_ids)
        params = dict(base_params)
        for part in parts:
            params.update(part.bound.params)
        if self.metric.derived is None:
            return Statement(render(shape(parts[0].bound.tree)), params)
        expression = parse_expression(self.metric.derived.expression, where=f"metric {self.metric.id}: derived")
        return Statement(render(combine(expression, [(p.name, shape(p.bound.tree)) for p in parts])), params)

    def top_values(self, window: tuple[dt.date, dt.date], limit: int = 12, min_rows: int = 5) -> list[str]:
        """Dimension values present in the window, most frequent first, with at least min_rows rows."""
        extra = {"value_limit": limit}

        def shape(t: exp.Expression) -> exp.Expression:
            return distinct_values(t, self.dim(t), "value_limit")

        res = self.planned(frozenset(), shape, window, extra,
                           lambda: Statement(render(shape(self.base.tree)), {**self.window_params(window), **extra}))
        return [label(v) for v, n in res.rows if v is not None and n >= min_rows]


def month_add(d: dt.date, months: int) -> dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return dt.date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def choose_window(lo: dt.date, hi: dt.date, rng: random.Random, months: int | None = None) -> tuple[dt.date, dt.date]:
    """A window of whole months inside [lo, hi): a year, half-year or quarter (or `months`)."""
    first = dt.date(lo.year, lo.month, 1) if lo.day == 1 else month_add(dt.date(lo.year, lo.month, 1), 1)
    last = dt.date(hi.year, hi.month, 1)
    span = (last.year - first.year) * 12 + last.month - first.month
    if span <= 0:
        return lo, hi
    length = months or rng.choice([12, 6, 3])
    length = max(1, min(length, span))
    start = month_add(first, rng.randrange(0, span - length + 1))
    return start, month_add(start, length)


def data_window(wh: Warehouse, metric: MetricSpec, metrics: dict[str, MetricSpec] | None = None, *,
                schema: str | None = None) -> tuple[dt.date, dt.date]:
    """[first day, day after last) of the metric's data; a derived metric's: where all inputs have data."""
    if metric.derived is None:
        lo, hi = metric_window(wh, metric, schema=schema)
        return as_date(lo), as_date(hi)
    spans = [data_window(wh, (metrics or {})[mid], schema=schema) for mid in metric.derived.inputs.values()]
    lo, hi = max(s[0] for s in spans), min(s[1] for s in spans)
    if lo >= hi:
        raise RewriteError(f"metric {metric.id}: its inputs have no period of data in common")
    return lo, hi
