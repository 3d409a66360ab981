"""`dibench domain import-dbt`: a dbt semantic manifest as a pack, per metric type and filter form,
on small hand-made manifests and on the shared Jaffle Shop manifest."""
from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlglot import exp

from dibench.cli.main import main
from dibench.generation.questions import answer_format
from dibench.core.config import Settings
from dibench.ingest.dbt.manifest import parse_manifest
from dibench.ingest.dbt.pack import build, import_manifest
from dibench.ingest.validate import validate_pack
from dibench.sqlops.dialect import parse, parse_expression

JAFFLE = Settings().data_dir / "jaffle" / "target" / "semantic_manifest.json"


def _measure(name: str, agg: str, expr: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "agg": agg, "expr": expr, **extra}


def _model(name: str, table: str, entities: list[dict[str, Any]], dims: list[dict[str, Any]],
           measures: list[dict[str, Any]], time: str | None = "ordered_at") -> dict[str, Any]:
    return {"name": name, "node_relation": {"alias": table, "schema_name": "shop"},
            "defaults": {"agg_time_dimension": time} if time else None,
            "entities": entities, "dimensions": dims, "measures": measures}


def _metric(name: str, type_: str, filters: list[str] | None = None, **tp: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "label": name.replace("_", " "), "description": f"The {name} metric.",
            "filter": {"where_filters": [{"where_sql_template": f} for f in filters]} if filters else None,
            "type_params": tp}


def _ref(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "filter": None, "alias": None, "join_to_timespine": False, "fill_nulls_with": None, **extra}


def shop(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    orders = _model("orders", "orders",
                    [{"name": "order_id", "type": "primary", "expr": None},
                     {"name": "customer", "type": "foreign", "expr": "customer_id"}],
                    [{"name": "ordered_at", "type": "time", "expr": "cast(ordered_at as DATE)",
                      "type_params": {"time_granularity": "day"}},
                     {"name": "is_food_order", "type": "categorical", "expr": None},
                     {"name": "total_dim", "type": "categorical", "expr": "order_total"},
                     {"name": "channel", "type": "categorical", "expr": None, "description": "sales channel"}],
                    [_measure("order_total", "sum"), _measure("order_count", "sum", "1"),
                     _measure("buyers", "count_distinct", "customer_id"), _measure("avg_total", "average", "order_total"),
                     _measure("min_total", "min", "order_total"), _measure("max_total", "max", "order_total"),
                     _measure("tips", "count", "tip"), _measure("paid_orders", "sum_boolean", "is_paid"),
                     _measure("median_total", "median", "order_total"),
                     _measure("p90_total", "percentile", "order_total",
                              agg_params={"percentile": 0.9, "use_discrete_percentile": True,
                                          "use_approximate_percentile": False}),
                     _measure("balance", "sum", "balance", non_additive_dimension={"name": "ordered_at"})])
    customers = _model("customers", "customers", [{"name": "customer", "type": "primary", "expr": "customer_id"}],
                       [{"name": "customer_type", "type": "categorical", "expr": None},
                        {"name": "first_ordered_at", "type": "time", "expr": None,
                         "type_params": {"time_granularity": "day"}}],
                       [], time="first_ordered_at")
    return {"semantic_models": [orders, customers], "metrics": metrics}


def _one(metric: dict[str, Any], *others: dict[str, Any]) -> Any:
    _, catalog, report = build(parse_manifest(shop([*others, metric])), name="shop", schema="shop",
                                id_prefix="")
    return catalog, report


def _value(sql: str) -> exp.Expression:
    tree = parse(sql)
    assert isinstance(tree, exp.Select)
    return tree.expressions[0].this


@pytest.mark.parametrize(("measure", "kind"), [
    ("order_total", exp.Sum), ("buyers", exp.Count), ("avg_total", exp.Avg), ("min_total", exp.Min),
    ("max_total", exp.Max), ("tips", exp.Count), ("paid_orders", exp.Sum), ("median_total", exp.WithinGroup),
    ("p90_total", exp.WithinGroup)])
def test_each_aggregation_is_one_aggregate_over_the_period(measure: str, kind: type) -> None:
    catalog, report = _one(_metric("m", "simple", measure=_ref(measure)))
    m = catalog.metrics[0]
    assert report.imported == [("m", "simple")] and m.time_column == "orders.ordered_at"
    value = _value(m.template)
    assert isinstance(value, kind), m.template
    tree = parse(m.template)
    where = tree.args["where"].sql()
    assert "orders.ordered_at >= :start_date" in where and "orders.ordered_at < :end_date" in where
    assert [t.name for t in tree.find_all(exp.Table)] == ["orders", "customers"]  # one hop, LEFT JOIN
    assert "customers.customer_type" in m.dimensions and "orders.channel" in m.dimensions


def test_aggregation_details() -> None:
    cat, _ = _one(_metric("m", "simple", measure=_ref("buyers")))
    assert isinstance(_value(cat.metrics[0].template).this, exp.Distinct)
    cat, _ = _one(_metric("m", "simple", measure=_ref("paid_orders")))
    assert "CASE WHEN orders.is_paid THEN 1 ELSE 0 END" in _value(cat.metrics[0].template).sql()
    cat, _ = _one(_metric("m", "simple", measure=_ref("p90_total")))
    assert _value(cat.metrics[0].template).sql(dialect="postgres") == \
        "PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY orders.order_total)"
    cat, _ = _one(_metric("m", "simple", measure=_ref("order_total", fill_nulls_with=0)))
    assert cat.metrics[0].template.lstrip().startswith("SELECT\n  COALESCE(SUM(orders.order_total), 0) AS value")


@pytest.mark.parametrize(("template", "predicate"), [
    ("{{ Dimension('order_id__is_food_order') }} = true", "orders.is_food_order = TRUE"),
    ("{{ Dimension('order_id__total_dim') }} >= 20", "orders.order_total >= 20"),
    ("{{ Dimension('customer__customer_type') }}  = 'new'\n", "customers.customer_type = 'new'"),
    ("{{ TimeDimension('order_id__ordered_at', 'month') }} = '2019-01-01'",
     "DATE_TRUNC('MONTH', CAST(orders.ordered_at AS DATE)) = '2019-01-01'"),
    ("{{ TimeDimension('metric_time', 'day') }} >= '2019-01-01'", "CAST(orders.ordered_at AS DATE) >= '2019-01-01'"),
    ("{{ Dimension('order_id__ordered_at').grain('year') }} = '2019-01-01'",
     "DATE_TRUNC('YEAR', CAST(orders.ordered_at AS DATE)) = '2019-01-01'"),
    ("{{ Entity('customer') }} IS NOT NULL", "NOT orders.customer_id IS NULL"),
    ("{{ Dimension('order_id__channel') }} = 'web' or {{ Dimension('order_id__channel') }} = 'app'",
     "(orders.channel = 'web' OR orders.channel = 'app')"),
])
def test_filters_become_predicates_on_the_tree(template: str, predicate: str) -> None:
    cat, report = _one(_metric("m", "simple", [template], measure=_ref("order_count")))
    assert report.skipped == []
    where = parse(cat.metrics[0].template).args["where"]
    assert predicate in where.sql(dialect="postgres"), where.sql(dialect="postgres")


@pytest.mark.parametrize(("template", "reason"), [
    ("{{ Dimension('customer__region__name') }} = 'x'", "a path of 2 entities"),
    ("{{ Dimension('store__name') }} = 'x'", "entity 'store' is not reachable"),
    ("{{ Dimension('order_id__nope') }} = 'x'", "has no dimension 'nope'"),
    ("{{ Metric('revenue', group_by=['customer']) }} > 3", "not a quoted name"),
    ("order_total > 3", "outside a Dimension/Entity reference"),
    ("{% if true %}1{% endif %} = 1", "Jinja"),
])
def test_a_filter_that_cannot_be_expressed_is_reported(template: str, reason: str) -> None:
    cat, report = _one(_metric("bad", "simple", [template], measure=_ref("order_count")),
                       _metric("ok", "simple", measure=_ref("order_count")))
    assert [m.id for m in cat.metrics] == ["ok"]
    assert len(report.skipped) == 1 and report.skipped[0][0] == "bad" and reason in report.skipped[0][1]


def test_measure_filter_and_metric_filter_both_apply() -> None:
    ref = _ref("order_count", filter={"where_filters": [{"where_sql_template": "{{ Dimension('order_id__channel') }} = 'web'"}]})
    cat, _ = _one(_metric("m", "simple", ["{{ Dimension('customer__customer_type') }} = 'new'"], measure=ref))
    where = parse(cat.metrics[0].template).args["where"].sql()
    assert "customers.customer_type = 'new'" in where and "orders.channel = 'web'" in where


def test_ratio_becomes_a_derived_metric_dividing_as_real_numbers() -> None:
    cat, report = _one(_metric("food_pct", "ratio", numerator=_ref("food"), denominator=_ref("orders")),
                       _metric("food", "simple", ["{{ Dimension('order_id__is_food_order') }} = true"],
                               measure=_ref("order_count")),
                       _metric("orders", "simple", measure=_ref("order_count")))
    m = {x.id: x for x in cat.metrics}["food_pct"]
    assert m.derived is not None and m.derived.inputs == {"numerator": "food", "denominator": "orders"}
    assert m.derived.expression == "CAST(numerator AS DOUBLE PRECISION) / NULLIF(denominator, 0)"
    assert ("food_pct", "ratio") in report.imported and m.unit == "ratio"


def test_ratio_with_filtered_inputs_gets_input_metrics() -> None:
    flt = {"where_filters": [{"where_sql_template": "{{ Dimension('order_id__channel') }} = 'web'"}]}
    cat, report = _one(_metric("web_share", "ratio", numerator=_ref("orders", filter=flt), denominator=_ref("orders")),
                       _metric("orders", "simple", measure=_ref("order_count")))
    ids = {x.id: x for x in cat.metrics}
    assert report.helpers == ["web_share.numerator"]
    assert ids["web_share"].derived is not None
    assert ids["web_share"].derived.inputs == {"numerator": "web_share.numerator", "denominator": "orders"}
    assert "orders.channel = 'web'" in ids["web_share.numerator"].template


def test_derived_metric_over_aliases() -> None:
    cat, report = _one(_metric("avg_ticket", "derived", expr="total / n",
                               metrics=[_ref("total_m"), _ref("n_m", alias="n")]),
                       _metric("total_m", "simple", measure=_ref("order_total")),
                       _metric("n_m", "simple", measure=_ref("order_count")))
    # an aliased input without filter reads the metric itself; the unaliased one by its name
    assert "avg_ticket" not in {x.id for x in cat.metrics}
    assert report.skipped == [("avg_ticket", "metric avg_ticket: expression names 'total', not one of its inputs")]
    cat, report = _one(_metric("avg_ticket", "derived", expr="total_m / n",
                               metrics=[_ref("total_m"), _ref("n_m", alias="n")]),
                       _metric("total_m", "simple", measure=_ref("order_total")),
                       _metric("n_m", "simple", measure=_ref("order_count")))
    m = {x.id: x for x in cat.metrics}["avg_ticket"]
    assert m.derived is not None and m.derived.inputs == {"total_m": "total_m", "n": "n_m"}
    assert m.derived.expression == "CAST(total_m AS DOUBLE PRECISION) / NULLIF(n, 0)"
    assert parse_expression(m.derived.expression) is not None


@pytest.mark.parametrize(("metric", "reason"), [
    (_metric("g", "derived", expr="a - b", metrics=[_ref("orders", alias="a"),
                                                    _ref("orders", alias="b", offset_to_grain="fortnight")]),
     "offset_to_grain 'fortnight'"),
    (_metric("c7", "cumulative", measure=_ref("order_count"),
             cumulative_type_params={"window": {"count": 7, "granularity": "day"}, "period_agg": "average"}),
     "period_agg 'average'"),
    (_metric("c", "cumulative", measure=_ref("order_count"),
             cumulative_type_params={"window": {"count": 7, "granularity": "fortnight"}}), "'fortnight'"),
    (_metric("b", "simple", ["{{ Dimension('customer__customer_type') }} = 'new'"], measure=_ref("balance")),
     "a filter on another semantic model's dimension of a measure with non_additive_dimension"),
    (_metric("a", "simple", measure=_ref("avg_total")) | {"type": "conversion"}, "metric type 'conversion'"),
    (_metric("r", "ratio", numerator=_ref("d2"), denominator=_ref("orders")), "d2 is a derived metric"),
])
def test_metrics_not_expressible_are_listed_with_the_reason(metric: dict[str, Any], reason: str) -> None:
    _, report = _one(metric, _metric("orders", "simple", measure=_ref("order_count")),
                     _metric("d2", "derived", expr="2 * orders", metrics=[_ref("orders")]))
    skipped = dict(report.skipped)
    assert reason in skipped[metric["name"]], skipped


def test_jaffle_manifest_imports_as_a_valid_pack(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["domain", "import-dbt", str(JAFFLE), "--out", str(tmp_path / "jaffle"),
                                      "--schema", "jaffle"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    imported = sorted(line.split()[1].removeprefix("mf.") for line in lines if line.startswith("imported "))
    assert imported == sorted(["revenue", "order_cost", "food_revenue", "average_revenue", "customers_with_orders",
                               "new_customer", "order_total", "large_order", "orders", "food_orders",
                               "food_revenue_pct", "order_gross_profit", "orders_fill_nulls_with_zero",
                               "revenue_growth_mom", "cumulative_revenue", "twice_orders_fill_nulls_with_0",
                               "orders_last_7_days"])
    assert "imported mf.orders_last_7_days (cumulative)" in lines and "imported mf.revenue_growth_mom (derived)" in lines
    skipped = {line.split()[2].rstrip(":") for line in lines if line.startswith("not imported ")}
    assert skipped == {"median_revenue"}
    assert len(imported) + len(skipped) == len(json.loads(JAFFLE.read_text())["metrics"])
    pack, problems = validate_pack(tmp_path / "jaffle")
    assert problems == [] and pack is not None and pack.name == "jaffle"


def test_reimport_reports_changed_metrics(tmp_path: Path) -> None:
    data = json.loads(JAFFLE.read_text())
    src = tmp_path / "m.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "pack"
    first = import_manifest(src, out, name="jaffle", schema="jaffle")
    assert len(first.added) == 18 and first.changed == [] and first.removed == []
    again = import_manifest(src, out, name="jaffle", schema="jaffle")
    assert again.added == again.changed == again.removed == []
    changed = copy.deepcopy(data)
    for m in changed["metrics"]:
        if m["name"] == "large_order":
            m["filter"]["where_filters"][0]["where_sql_template"] = "{{ Dimension('order_id__order_total_dim') }} >= 25"
    changed["metrics"] = [m for m in changed["metrics"] if m["name"] != "food_orders"]
    src.write_text(json.dumps(changed))
    third = import_manifest(src, out, name="jaffle", schema="jaffle")
    assert third.changed == ["mf.large_order (formula, sql)"] and third.removed == ["mf.food_orders"] and third.added == []


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not JSON"),
    ('{"metrics": []}', "no list `semantic_models`"),
    ('{"semantic_models": [{"name": "orders"}]}', "semantic model orders: missing field 'node_relation'"),
])
def test_a_bad_manifest_is_one_clear_line(tmp_path: Path, content: str, message: str) -> None:
    src = tmp_path / "semantic_manifest.json"
    src.write_text(content)
    result = CliRunner().invoke(main, ["domain", "import-dbt", str(src), "--out", str(tmp_path / "pack")])
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "pack").exists()


# Windows other than the period: each form on a small manifest, its SQL executed on DuckDB over
# a ten-day table (one order a day, order_total = the day of the month).
DAYS = [dt.date(2019, 1, 25) + dt.timedelta(days=i) for i in range(10)]  # 2019-01-25 .. 2019-02-03


def _run(sql: str, start: dt.date, end: dt.date) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE SCHEMA shop")
    con.execute("CREATE TABLE shop.orders (order_id INT, customer_id INT, ordered_at DATE, order_total INT, "
                "channel TEXT, balance INT)")
    con.executemany("INSERT INTO shop.orders VALUES (?, ?, ?, ?, ?, ?)",
                    [(i, i % 2, d, d.day, "web" if i % 2 else "app", 100 + i) for i, d in enumerate(DAYS)])
    con.execute("CREATE TABLE shop.customers (customer_id INT, customer_type TEXT, first_ordered_at DATE)")
    rendered = parse(sql).sql(dialect="duckdb").replace(":start_date", "$start_date").replace(":end_date", "$end_date")
    return con.execute(rendered, {"start_date": start, "end_date": end}).fetchone()[0]  # type: ignore[index]


FEB = (dt.date(2019, 2, 1), dt.date(2019, 3, 1))


@pytest.mark.parametrize(("params", "words", "value"), [
    # as of Feb 1: Jan 26..Feb 1 (the 7 days up to and including it) = 26+..+31+1
    ({"window": {"count": 7, "granularity": "day"}, "period_agg": "first"}, "the 7 days up to and including "
     "the period's first day", 26 + 27 + 28 + 29 + 30 + 31 + 1),
    ({"period_agg": "first"}, "any day up to and including the period's first day (all time)",
     25 + 26 + 27 + 28 + 29 + 30 + 31 + 1),
    ({"grain_to_date": "month", "period_agg": "first"}, "from the start of the month of the period's first day", 1),
    # as of Feb 28, the last day: Feb 22..28 holds no order; month to date: Feb 1..3
    ({"window": {"count": 7, "granularity": "day"}, "period_agg": "last"}, "the period's last day", None),
    ({"grain_to_date": "month", "period_agg": "last"}, "the period's last day", 1 + 2 + 3),
])
def test_cumulative_metric_reads_the_running_value_as_of_one_day(params: dict[str, Any], words: str,
                                                                  value: Any) -> None:
    cat, report = _one(_metric("c", "cumulative", measure=_ref("order_total"), cumulative_type_params=params))
    assert report.imported == [("c", "cumulative")], report.skipped
    m = cat.metrics[0]
    assert words in m.formula and m.time_column == "orders.ordered_at"
    assert _run(m.template, *FEB) == value
    # the answer format says which day a value is read on, the same for every group
    assert m.as_of is not None and f"read on the period's {params['period_agg']} day" in m.as_of
    assert "the same day for every group" in answer_format("ranking", m.rounding, m.as_of)


def test_offset_input_reads_the_period_moved_back() -> None:
    cat, report = _one(_metric("growth", "derived", expr="(cur - prev) * 100 / prev",
                               metrics=[_ref("total", alias="cur"),
                                        _ref("total", alias="prev", offset_window={"count": 1, "granularity": "month"})]),
                       _metric("total", "simple", measure=_ref("order_total", fill_nulls_with=0)))
    ids = {m.id: m for m in cat.metrics}
    assert report.helpers == ["growth.prev"] and ("growth", "derived") in report.imported
    assert ids["growth"].derived is not None and ids["growth"].derived.inputs == {"cur": "total", "prev": "growth.prev"}
    assert "moved back 1 month" in ids["growth.prev"].formula
    assert _run(ids["growth.prev"].template, *FEB) == sum(range(25, 32))  # January's orders
    assert _run(ids["total"].template, *FEB) == 1 + 2 + 3


def test_offset_to_grain_input_reads_the_period_moved_to_the_start_of_its_grain() -> None:
    cat, report = _one(_metric("since", "derived", expr="cur - first",
                               metrics=[_ref("total", alias="cur"), _ref("total", alias="first", offset_to_grain="quarter")]),
                       _metric("total", "simple", measure=_ref("order_total")))
    assert report.skipped == [] and report.helpers == ["since.first"]
    first = {m.id: m for m in cat.metrics}["since.first"]
    assert "moved back to the start of its quarter" in first.formula
    assert _run(first.template, *FEB) == sum(range(25, 32))  # the quarter's first month, January, as long as February


def test_join_to_timespine_with_fill_nulls_is_zero_for_a_period_without_rows() -> None:
    cat, report = _one(_metric("n", "simple", measure=_ref("order_count", join_to_timespine=True, fill_nulls_with=0)))
    m = cat.metrics[0]
    assert report.skipped == [] and "a period without rows is 0 (MetricFlow's time spine)" in m.formula
    assert _run(m.template, dt.date(2019, 6, 1), dt.date(2019, 7, 1)) == 0
    assert _run(m.template, *FEB) == 3


@pytest.mark.parametrize(("nad", "value"), [
    ({"name": "ordered_at"}, 109),  # Feb 3's balance: the last day of the window
    ({"name": "ordered_at", "window_choice": "min"}, 107),
    ({"name": "ordered_at", "window_groupings": ["customer"]}, 108 + 109),  # each customer's last day
])
def test_non_additive_dimension_keeps_the_rows_at_its_last_value_in_the_window(nad: dict[str, Any],
                                                                              value: int) -> None:
    data = shop([_metric("bal", "simple", measure=_ref("balance"))])
    data["semantic_models"][0]["measures"][-1]["non_additive_dimension"] = nad
    _, cat, report = build(parse_manifest(data), name="shop", schema="shop", id_prefix="")
    m = cat.metrics[0]
    assert report.skipped == [] and ("first" if nad.get("window_choice") == "min" else "last") in m.formula
    assert _run(m.template, *FEB) == value
