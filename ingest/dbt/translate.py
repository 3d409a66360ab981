"""Semantic models and metrics -> pack dimensions and metric templates, on sqlglot trees.

A metric reads its measure's semantic model as `schema.table AS table`, and LEFT JOINs every model
one entity hop away whose primary (or unique) entity is one of its entities: many-to-one joins that
never multiply rows. The time window goes on the measure's agg_time_dimension. Jinja filters
(`{{ Dimension('entity__dim') }}`, `{{ TimeDimension('entity__dim', 'grain') }}`,
`{{ Entity('name') }}`) are replaced by placeholder identifiers, the text is parsed, and the
placeholders are swapped for the resolved column trees. A metric the pack format cannot express
raises `Unsupported` with the reason; nothing is approximated."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from dibench.ingest.dbt.manifest import Dimension, Manifest, Measure, Metric, MetricInput, SemanticModel
from dibench.ingest.dbt.windows import PERIOD, Window
from dibench.sqlops.dialect import DIALECT, render

GRAINS = {"day", "week", "month", "quarter", "year"}
_JINJA = re.compile(r"\{\{\s*(?P<fn>\w+)\((?P<args>[^)]*)\)(?P<tail>[^}]*)\}\}")
_ARG = re.compile(r"""^\s*(?:'([^']*)'|"([^"]*)")\s*$""")
_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")


class Unsupported(Exception):
    """A metric (or one of its parts) that the pack format cannot express; the message says why."""


@dataclass(frozen=True)
class Settings:
    schema: str
    read_dialect: str = "duckdb"


def humanise(name: str) -> str:
    return name.replace("__", " ").replace("_", " ").strip()


def _parse_expr(text: str, s: Settings, where: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(text, read=s.read_dialect, into=exp.Condition)
    except sqlglot.errors.ParseError as exc:
        raise Unsupported(f"{where}: cannot parse {text!r}") from exc


def _qualify(tree: exp.Expression, alias: str) -> exp.Expression:
    """Every unqualified column of a model's expression belongs to the model's table."""
    tree = tree.copy()
    for col in tree.find_all(exp.Column):
        if not col.table:
            col.set("table", exp.to_identifier(alias))
    return tree


def plain_column(expr: str | None, default: str, s: Settings) -> str | None:
    """The column an expression is, when it is one (or a day cast of one, which compares the
    same against date bounds): else None."""
    if expr is None:
        return default
    tree = _parse_expr(expr, s, "expression")
    if isinstance(tree, exp.Cast) and tree.to.this in (exp.DataType.Type.DATE,):
        tree = tree.this
    if isinstance(tree, exp.Column) and not tree.table and _PLAIN.match(tree.name):
        return tree.name
    return None


def dimension_tree(model: SemanticModel, dim: Dimension, s: Settings) -> exp.Expression:
    if dim.expr is None:
        return exp.column(dim.name, table=model.table)
    return _qualify(_parse_expr(dim.expr, s, f"dimension {model.name}.{dim.name}"), model.table)


def reachable(manifest: Manifest, model: SemanticModel) -> dict[str, tuple[SemanticModel, str, str]]:
    """{entity name: (model joined, its key column, this model's key column)} one hop away."""
    out: dict[str, tuple[SemanticModel, str, str]] = {}
    for e in model.entities:
        for other in manifest.models:
            if other is model:
                continue
            pk = other.primary
            if pk is not None and pk.name == e.name and e.name not in out:
                out[e.name] = (other, pk.column, e.column)
    return out


class Scope:
    """The models a metric's statement reads: its own and those one entity hop away."""

    def __init__(self, manifest: Manifest, model: SemanticModel, s: Settings) -> None:
        self.manifest, self.model, self.s = manifest, model, s
        self.joins = reachable(manifest, model)
        self.used: set[str] = set()

    def model_of(self, path: list[str], what: str) -> SemanticModel:
        if len(path) != 1:
            raise Unsupported(f"{what}: a path of {len(path)} entities (only one entity hop is expressible)")
        ent = path[0]
        pk = self.model.primary
        if pk is not None and pk.name == ent:
            return self.model
        if ent in self.joins:
            self.used.add(ent)
            return self.joins[ent][0]
        raise Unsupported(f"{what}: entity {ent!r} is not reachable from semantic model {self.model.name}")

    def dimension(self, ref: str, what: str) -> exp.Expression:
        *path, name = ref.split("__")
        model = self.model_of(path, what)
        dim = model.dimension(name)
        if dim is None:
            raise Unsupported(f"{what}: semantic model {model.name} has no dimension {name!r}")
        return dimension_tree(model, dim, self.s)

    def time_dimension(self, ref: str, grain: str | None, what: str) -> exp.Expression:
        if ref == "metric_time":
            tree: exp.Expression = self.time_tree(None)
        else:
            tree = self.dimension(ref, what)
        if grain is None or grain == "day":
            return tree
        if grain not in GRAINS:
            raise Unsupported(f"{what}: time grain {grain!r}")
        return exp.func("DATE_TRUNC", exp.Literal.string(grain), tree)

    def entity(self, ref: str, what: str) -> exp.Expression:
        *path, name = ref.split("__")
        if path:
            model = self.model_of(path, what)
        else:
            own = self.model.entity(name)
            if own is not None:
                return exp.column(own.column, table=self.model.table)
            model = self.model_of([name], what)
        e = model.entity(name)
        if e is None:
            raise Unsupported(f"{what}: semantic model {model.name} has no entity {name!r}")
        return exp.column(e.column, table=model.table)

    def time_column(self, measure: Measure) -> str:
        name = measure.agg_time_dimension or self.model.agg_time_dimension
        if name is None:
            raise Unsupported(f"measure {measure.name}: no agg_time_dimension")
        dim = self.model.dimension(name)
        if dim is None or dim.type != "time":
            raise Unsupported(f"measure {measure.name}: agg_time_dimension {name!r} is not a time dimension")
        col = plain_column(dim.expr, dim.name, self.s)
        if col is None:
            raise Unsupported(f"measure {measure.name}: time dimension {name} is the expression {dim.expr!r}, "
                              "not a column the period can filter on")
        return col

    def time_tree(self, measure: Measure | None) -> exp.Expression:
        name = (measure.agg_time_dimension if measure else None) or self.model.agg_time_dimension
        dim = self.model.dimension(name) if name else None
        if dim is None:
            raise Unsupported(f"semantic model {self.model.name}: metric_time has no agg_time_dimension")
        return dimension_tree(self.model, dim, self.s)


def _args(text: str, what: str) -> list[str]:
    out = []
    for a in [x for x in text.split(",") if x.strip()]:
        m = _ARG.match(a)
        if m is None:
            raise Unsupported(f"{what}: argument {a.strip()!r} is not a quoted name")
        out.append(m.group(1) if m.group(1) is not None else m.group(2))
    return out


def filter_tree(template: str, scope: Scope, what: str) -> exp.Expression:
    """A MetricFlow where-filter as a predicate tree over the metric's tables."""
    refs: dict[str, exp.Expression] = {}

    def swap(m: re.Match[str]) -> str:
        fn, args, tail = m.group("fn"), _args(m.group("args"), what), m.group("tail").strip()
        grain = None
        g = re.fullmatch(r"\.grain\(\s*['\"](\w+)['\"]\s*\)", tail)
        if tail and g is None:
            raise Unsupported(f"{what}: {fn}(...){tail} is not expressible")
        if g is not None:
            grain = g.group(1)
        if fn == "Dimension" and len(args) == 1:
            tree = (scope.time_dimension(args[0], grain, what) if grain else scope.dimension(args[0], what))
        elif fn == "TimeDimension" and 1 <= len(args) <= 2:
            tree = scope.time_dimension(args[0], args[1] if len(args) == 2 else grain, what)
        elif fn == "Entity" and len(args) == 1 and grain is None:
            tree = scope.entity(args[0], what)
        else:
            raise Unsupported(f"{what}: filter reference {fn}({m.group('args')}) is not expressible")
        key = f"dbt_ref_{len(refs)}"
        refs[key] = tree
        return key

    text = _JINJA.sub(swap, template)
    if "{{" in text or "{%" in text:
        raise Unsupported(f"{what}: filter holds Jinja that is not a Dimension/TimeDimension/Entity reference")
    tree = _parse_expr(text, scope.s, what)

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name in refs:
            return refs[node.name].copy()
        if isinstance(node, exp.Column) and node.name not in refs:
            raise Unsupported(f"{what}: filter names {node.sql()!r} outside a Dimension/Entity reference")
        return node

    return tree.transform(put)


def aggregate(model: SemanticModel, m: Measure, s: Settings) -> exp.Expression:
    arg = _qualify(_parse_expr(m.expr or m.name, s, f"measure {m.name}"), model.table)
    if m.agg == "sum":
        return exp.Sum(this=arg)
    if m.agg == "count":
        return exp.Count(this=arg)
    if m.agg == "count_distinct":
        return exp.Count(this=exp.Distinct(expressions=[arg]))
    if m.agg == "average":
        return exp.Avg(this=arg)
    if m.agg == "min":
        return exp.Min(this=arg)
    if m.agg == "max":
        return exp.Max(this=arg)
    if m.agg == "sum_boolean":
        return exp.Sum(this=exp.Case(ifs=[exp.If(this=arg, true=exp.Literal.number(1))],
                                     default=exp.Literal.number(0)))
    if m.agg in ("median", "percentile"):
        p = m.agg_params or {}
        if p.get("use_approximate_percentile"):
            raise Unsupported(f"measure {m.name}: use_approximate_percentile is true: MetricFlow asks the engine "
                              "for its own estimate (approx_quantile on DuckDB; none on PostgreSQL), which no exact "
                              "percentile equals")
        q = 0.5 if m.agg == "median" else p.get("percentile")
        if not isinstance(q, (int, float)) or not 0 <= q <= 1:
            raise Unsupported(f"measure {m.name}: percentile {q!r} is not a number in [0, 1]")
        fn = exp.PercentileDisc if p.get("use_discrete_percentile") else exp.PercentileCont
        return exp.WithinGroup(this=fn(this=exp.Literal.number(q)),
                               expression=exp.Order(expressions=[exp.Ordered(this=arg)]))
    raise Unsupported(f"measure {m.name}: aggregation {m.agg!r}")


@dataclass(frozen=True)
class Template:
    sql: str
    time_column: str
    model: SemanticModel
    measure: Measure
    joined: tuple[SemanticModel, ...]
    predicates: tuple[str, ...]
    window: Window = PERIOD
    notes: tuple[str, ...] = ()


def _time_window(scope: Scope, measure: Measure, window: Window, alias: str) -> list[exp.Expression]:
    return window.predicates(exp.column(scope.time_column(measure), table=alias))


def semi_additive(scope: Scope, measure: Measure, window: Window, predicates: list[exp.Expression],
                  what: str) -> tuple[exp.Expression, str]:
    """A measure with a non_additive_dimension as a condition: only the rows at the last (or first)
    value of that dimension in the window, per window_groupings entity (MetricFlow's semi-additive
    join: after the filters and the window, before the aggregate), as a correlated subquery over the
    same table, under the same filters. Returns (condition, words)."""
    nad = measure.non_additive or {}
    model, t = scope.model, scope.model.table
    if any(col.table != t for p in predicates for col in p.find_all(exp.Column)):
        raise Unsupported(f"{what}: a filter on another semantic model's dimension of a measure with "
                          "non_additive_dimension (the last rows are chosen among the filtered rows: the subquery "
                          "over the measure's table would need the joins too)")
    dim = model.dimension(str(nad.get("name")))
    if dim is None or dim.type != "time":
        raise Unsupported(f"{what}: non_additive_dimension {nad.get('name')!r} is not a time dimension of "
                          f"semantic model {model.name}")
    choice = str(nad.get("window_choice") or "max").lower()
    if choice not in ("max", "min"):
        raise Unsupported(f"{what}: non_additive_dimension window_choice {choice!r}")
    inner = f"{t}_{'last' if choice == 'max' else 'first'}"
    keys = []
    for ent in nad.get("window_groupings") or []:
        e = model.entity(str(ent))
        if e is None:
            raise Unsupported(f"{what}: window_groupings entity {ent!r} is not an entity of {model.name}")
        keys.append(exp.EQ(this=exp.column(e.column, table=inner), expression=exp.column(e.column, table=t)))
    fn = exp.Max if choice == "max" else exp.Min
    filters = [_qualify_as(exp.paren(p) if isinstance(p, exp.Or) else p, t, inner) for p in predicates]
    sub = exp.select(fn(this=_qualify_as(dimension_tree(model, dim, scope.s), t, inner))).from_(
        exp.table_(t, db=scope.s.schema, alias=inner)).where(
        exp.and_(*_time_window(scope, measure, window, inner), *filters, *keys))
    cond = exp.EQ(this=dimension_tree(model, dim, scope.s), expression=exp.Subquery(this=sub))
    per = f" of each {', '.join(str(e) for e in nad.get('window_groupings') or [])}" if keys else ""
    among = " among the filtered rows" if predicates else ""
    words = f"only the rows at the {'last' if choice == 'max' else 'first'} {dim.name}{per} in that window{among}"
    return cond, words


def daily_mean(value: exp.Expression, window: Window, time_col: exp.Expression, what: str) -> exp.Expression:
    """The mean, over the period's days from the first row's on (MetricFlow's `period_agg:
    average`), of the all-time sum (count) of the rows up to each day: one sum over the rows, each
    weighted by the days whose running total holds it (`days_holding`), divided by those days. A
    mean of a min, a max, an average or a distinct count is not a sum over rows."""
    weight = window.days_holding(time_col)
    if isinstance(value, exp.Sum):
        total: exp.Expression = exp.Sum(this=exp.Mul(this=exp.paren(value.this.copy()), expression=exp.paren(weight)))
    elif isinstance(value, exp.Count) and isinstance(value.this, exp.Star):
        total = exp.Sum(this=weight)
    elif isinstance(value, exp.Count) and not isinstance(value.this, exp.Distinct):
        total = exp.Sum(this=exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=value.this.copy(), expression=exp.null())),
                                                  true=weight)], default=exp.Literal.number(0)))
    else:
        raise Unsupported(f"{what}: period_agg 'average' of a {value.key} (the mean over days of a sum or a count "
                          "is one weighted sum over rows; of this aggregate it is not)")
    return exp.Div(this=exp.Cast(this=total, to=exp.DataType.build("DOUBLE PRECISION")),
                   expression=exp.func("NULLIF", window.days_with_value(time_col), exp.Literal.number(0)))


def _qualify_as(tree: exp.Expression, old: str, new: str) -> exp.Expression:
    tree = tree.copy()
    for col in tree.find_all(exp.Column):
        if col.table == old:
            col.set("table", exp.to_identifier(new))
    return tree


def simple_template(manifest: Manifest, ref: MetricInput, filters: tuple[str, ...], s: Settings,
                    what: str, window: Window = PERIOD) -> Template:
    """One SELECT of a measure over the window (the period, or a shape of `windows.Window`), with
    its filters (the metric's and the input's)."""
    found = manifest.measure(ref.name)
    if found is None:
        raise Unsupported(f"{what}: unknown measure {ref.name!r}")
    model, measure = found
    scope = Scope(manifest, model, s)
    value: exp.Expression = aggregate(model, measure, s)
    if window.period_agg == "average" and window.kind == "cumulative":
        if measure.non_additive is not None:
            raise Unsupported(f"{what}: period_agg 'average' of a measure with non_additive_dimension")
        value = daily_mean(value, window, exp.column(scope.time_column(measure), table=model.table), what)
    notes: list[str] = []
    if ref.fill_nulls_with is not None:
        if not isinstance(ref.fill_nulls_with, (int, float)):
            raise Unsupported(f"{what}: fill_nulls_with {ref.fill_nulls_with!r}")
        value = exp.func("COALESCE", value, exp.Literal.number(ref.fill_nulls_with))
    if ref.join_to_timespine:
        # MetricFlow's time spine gives a time period without rows a row of its own; a pack
        # period is one aggregate, which is already there without rows.
        notes.append(f"a period without rows is {ref.fill_nulls_with if ref.fill_nulls_with is not None else 'NULL'}"
                     " (MetricFlow's time spine)")
    time_col = scope.time_column(measure)
    predicates = [filter_tree(f, scope, what) for f in (*filters, *ref.filters)]
    conditions = [exp.paren(p) if isinstance(p, exp.Or) else p for p in predicates]
    if measure.non_additive is not None:
        cond, words = semi_additive(scope, measure, window, predicates, what)
        conditions.append(cond)
        notes.insert(0, words)
    scope.used |= set(scope.joins)  # every reachable model, so its dimensions can slice the metric
    t = model.table
    select = exp.select(exp.alias_(value, "value")).from_(exp.table_(t, db=s.schema, alias=t))
    joined = []
    for ent in sorted(scope.used):
        other, key, own = scope.joins[ent]
        joined.append(other)
        on = exp.EQ(this=exp.column(key, table=other.table), expression=exp.column(own, table=t))
        select = select.join(exp.table_(other.table, db=s.schema, alias=other.table), on=on, join_type="left")
    select = select.where(exp.and_(*_time_window(scope, measure, window, t), *conditions))
    return Template(select.sql(dialect=DIALECT, pretty=True) + "\n", f"{t}.{time_col}", model, measure,
                    tuple(joined), tuple(render(p) for p in predicates), window, tuple(notes))


def derived_expression(text: str, names: set[str], s: Settings, what: str) -> str:
    """A derived metric's expression over its inputs' names; a division divides as a real number
    (as MetricFlow's engines do), not as PostgreSQL's integer division."""
    tree = _parse_expr(text, s, what)
    for col in tree.find_all(exp.Column):
        if col.table or col.name not in names:
            raise Unsupported(f"{what}: expression names {col.sql()!r}, not one of its inputs")

    def real(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Div):
            return exp.Div(this=exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE PRECISION")),
                           expression=exp.func("NULLIF", node.expression, exp.Literal.number(0)))
        return node

    return render(tree.transform(real))


def unit_of(metric: Metric, measure: Measure | None) -> str:
    unit = metric.meta.get("unit")
    if unit in ("percent", "count", "hours", "days", "currency", "ratio", "score"):
        return str(unit)
    if metric.type == "ratio":
        return "ratio"
    if measure is not None and (measure.agg in ("count", "count_distinct", "sum_boolean")
                                or (measure.agg == "sum" and (measure.expr or "").strip() == "1")):
        return "count"
    return "score"


def describe(metric: Metric) -> tuple[str, str]:
    name = next((n for n in (metric.label, humanise(metric.name)) if n and len(n) >= 3), f"metric {metric.name}")
    desc = metric.description if metric.description and len(metric.description) >= 10 else \
        f"{name} (dbt metric {metric.name})"
    return name, desc


def any_dict(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v not in (None, [], {})}
