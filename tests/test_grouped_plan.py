"""Grouped query planning: the partial-aggregate decomposition on the tree, and the
grouped plan answering exactly as the one-statement-per-answer path, for every skeleton of a
copy of the mini pack (domain `minipack_grouped`, schema `mini`) and for a sample of those of a copy
of the demo pack (domain `demo_grouped`, schema `demo` at its default size), on the real Postgres
and Neo4j; and edge verification, one GROUPING SETS statement per side against one per slice."""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dibench.core.config import get_settings
from dibench.core.pack import Pack, load_pack, resolve_pack_path
from dibench.generation.executor import Executor
from dibench.generation.skeletons import Skeleton, enumerate_all
from dibench.generation.tasks import build_candidates, sql_plan, vocabulary
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.rules import plan_rules
from dibench.ingest.verify import EdgeCheck
from dibench.sqlops import grouped
from dibench.sqlops.dialect import parse, render
from dibench.stores.graph import Graph
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import MINIPACK, copy_pack, delete_domain, edit_front, edit_metrics, ensure_mini_loaded

# ------------------------------------------------------------------------------ on the tree
@pytest.mark.parametrize("sql,reason", [
    ("SELECT COUNT(DISTINCT o.customer_id) AS value FROM s.o o", "COUNT DISTINCT/WITHIN GROUP is not decomposable"),
    ("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY o.x) AS value FROM s.o o",
     "PERCENTILE_CONT DISTINCT/WITHIN GROUP is not decomposable"),
    ("SELECT SUM(o.x) AS value FROM s.o o HAVING AVG(o.z) > o.y", "HAVING: a column or subquery outside an aggregate"),
    ("SELECT SUM(o.x) AS value FROM s.o o GROUP BY o.y", "the statement has GROUP"),
    ("SELECT o.x + SUM(o.x) AS value FROM s.o o", "a column or subquery outside an aggregate"),
    ("SELECT STDDEV(o.x) AS value FROM s.o o", "aggregate STDDEV is not decomposable"),
    ("SELECT SUM(o.x) OVER () AS value FROM s.o o", "window function"),
])
def test_what_does_not_decompose_says_why(sql: str, reason: str) -> None:
    assert grouped.decompose(parse(sql, where="test")) == reason


def test_partials_and_recombination_keep_the_metric_expression() -> None:
    tree = parse("SELECT 100.0 * COUNT(*) FILTER (WHERE o.x > :cut) / NULLIF(COUNT(*), 0) + AVG(o.x) AS value "
                 "FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date", where="test")
    d = grouped.decompose(tree)
    assert isinstance(d, grouped.Decomposed)
    from sqlglot import exp
    partials = grouped.partials_query(tree, d, exp.column("y", table="o"), exp.column("t", table="o"))
    assert render(partials) == (
        "SELECT o.y AS g, TO_CHAR(DATE_TRUNC('MONTH', o.t), 'YYYY-MM') AS period, COUNT(*) AS n, "
        "COUNT(*) FILTER(WHERE o.x > :cut) AS c0, COUNT(*) AS c1, SUM(o.x) AS c2, COUNT(o.x) AS c3 "
        "FROM s.o AS o WHERE o.t >= :start_date AND o.t < :end_date "
        "GROUP BY o.y, DATE_TRUNC('MONTH', o.t)")
    types = {"g": "TEXT", "period": "TEXT", "n": "BIGINT", "c0": "BIGINT", "c1": "BIGINT", "c2": "BIGINT",
             "c3": "BIGINT"}
    proxy = grouped.count_rows(grouped.proxy_query(grouped.recombine(d, types), types))
    assert render(proxy) == (
        "SELECT 100.0 * CAST(COALESCE(SUM(gp.c0), 0) AS BIGINT) / NULLIF(CAST(COALESCE(SUM(gp.c1), 0) AS BIGINT), 0)"
        " + (CAST(SUM(gp.c2) AS DECIMAL) / NULLIF(SUM(gp.c3), 0)) AS value "
        "FROM UNNEST(CAST(:gp_g AS TEXT[]), CAST(:gp_period AS TEXT[]), CAST(:gp_n AS BIGINT[]), "
        "CAST(:gp_c0 AS BIGINT[]), CAST(:gp_c1 AS BIGINT[]), CAST(:gp_c2 AS BIGINT[]), CAST(:gp_c3 AS BIGINT[])) "
        "AS gp(g, period, n, c0, c1, c2, c3)")


@pytest.mark.parametrize("where,reason", [
    ("WHERE o.t >= :start_date AND o.t < :end_date AND o.k = 1", None),
    ("WHERE (o.t >= :start_date AND o.t < :end_date)", None),
    ("WHERE o.t >= :start_date AND o.t < :end_date AND o.done >= :end_date",
     ":end_date is used beyond bounding the time column"),
    ("WHERE o.t >= :start_date OR o.t < :end_date", ":start_date is used beyond bounding the time column"),
    ("WHERE o.u >= :start_date AND o.t < :end_date", ":start_date is used beyond bounding the time column"),
])
def test_the_window_may_only_bound_the_time_column(where: str, reason: str | None) -> None:
    from sqlglot import exp
    tree = parse(f"SELECT COUNT(*) AS value FROM s.o o {where}", where="test")
    assert grouped.window_only_bounds_time(tree, exp.column("t", table="o")) == reason
    counted = parse("SELECT COUNT(*) FILTER (WHERE o.done >= :end_date) AS value FROM s.o o "
                    "WHERE o.t >= :start_date AND o.t < :end_date", where="test")
    assert grouped.window_only_bounds_time(counted, exp.column("t", table="o")) == \
        ":end_date is used beyond bounding the time column"


@pytest.mark.parametrize("where", [
    "WHERE o.t >= :start_date AND o.t < :end_date",
    "WHERE o.k = 3 OR o.t >= :start_date AND o.t < :end_date",
    "WHERE o.t >= :start_date AND o.t < :end_date AND o.k > 9",
])
def test_time_bounds_are_min_and_max_over_the_metric_rows(where: str, warehouse: Warehouse) -> None:
    """The first and last time in order, over the rows the joins and the WHERE keep, NULL times
    left out: MIN and MAX of the time column, as the same server computes them."""
    from sqlglot import exp
    from dibench.sqlops.shape import time_bounds
    sql = ("SELECT COUNT(*) AS value FROM (VALUES (CAST(NULL AS DATE), 2), (DATE '2024-01-05', 1), "
           "(DATE '2024-02-01', 2), (DATE '2024-03-09', 3), (DATE '2024-04-30', 1), (NULL, 3)) AS o(t, k) "
           f"JOIN (VALUES (2), (3)) AS j(k) ON j.k = o.k {where} GROUP BY o.k HAVING COUNT(*) > 5")
    tree, t = parse(sql, where="test"), exp.column("t", table="o")
    params = {"start_date": dt.date(1900, 1, 1), "end_date": dt.date(2200, 1, 1)}
    plain = "SELECT MIN(o.t) AS lo, MAX(o.t) AS hi FROM " + sql.split(" FROM ", 1)[1].split(" GROUP BY")[0]
    want = warehouse.execute_readonly(plain, params).rows
    assert warehouse.execute_readonly(render(time_bounds(tree, t)), params).rows == want
    assert want[0] in ((dt.date(2024, 2, 1), dt.date(2024, 3, 9)), (None, None))


def test_float_partials_are_not_recombined() -> None:
    from decimal import Decimal
    assert grouped.column_type([1.5, None]) is None
    assert grouped.column_type([Decimal("1.50"), None]) == "NUMERIC"
    assert grouped.column_type([3, None]) == "BIGINT"


def test_the_sql_plan_of_an_analysis_names_its_fallbacks() -> None:
    assert sql_plan([]) == "none"
    assert sql_plan(["grouped", "grouped"]) == "grouped"
    assert sql_plan(["legacy: window function", "legacy: window function"]) == "legacy: window function"
    assert sql_plan(["grouped", "legacy: b", "legacy: a"]) == "mixed: a; b"


# ------------------------------------------------------------------------------ against the real data
def ingested(name: str, tmp: Path, graph: Graph, wh: Warehouse) -> Pack:
    """A copy of the mini pack (schema mini; `minipack_distinct`: its privacy rule suppresses groups
    of fewer than 3 distinct customers) or of the demo pack (schema demo, default size) as domain
    `<name>_grouped`, its data loaded if missing, ingested."""
    if name.startswith("minipack"):
        ensure_mini_loaded(wh)
        root = copy_pack(tmp / "pack", f"{name}_grouped")
        if name == "minipack_distinct":  # suppression by distinct customers, a bound most cells reach
            edit_front(root / "rules" / "privacy.md",
                       lambda f: f["effects"][0].update(count="COUNT(DISTINCT o.customer_id)", min_n=3))
    else:
        if "tickets" not in schema_columns(wh, "demo"):
            load_database(load_pack("demo"), wh)
        root = copy_pack(tmp / "pack", f"{name}_grouped", src=resolve_pack_path("demo"))
    pk = load_pack(root)
    delete_domain(graph, pk.name)
    ingest_pack(pk, graph, wh)
    return pk


def skeletons(pk: Pack, graph: Graph) -> list[Skeleton]:
    """The mini pack's every skeleton; of the demo's 473, per metric the first categorical and the
    first temporal one (every metric, every analysis type, every kind of rule), and for a few a
    categorical one with a featured rule (a counterfactual; a distinct count's and a suppression
    by distinct customers' significance test tries windows over the metric's cells)."""
    all_ = sorted(enumerate_all(graph, pk.name, seed=42).skeletons, key=lambda s: s.key)
    if pk.schema == "mini":
        return all_
    firsts: dict[tuple[str, bool | str], Skeleton] = {}
    for sk in all_:
        firsts.setdefault((sk.metric, sk.dimension_type == "temporal"), sk)
        if sk.rules and sk.dimension_type != "temporal" and 2 <= sk.cardinality <= 25 \
                and sk.metric in (*CELLS_METRICS, "MV-RES-001"):
            firsts.setdefault((sk.metric, "featured"), sk)
    return list(firsts.values())


CELLS_METRICS = ("MV-AGT-001", "MV-CSAT-002")


def candidates(pack: Pack, sks: list[Skeleton], wh: Warehouse, grouped_plan: bool) -> tuple[list[Any], Executor]:
    ex = Executor(wh, schema=pack.schema, grouped=grouped_plan)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(wh, pack.schema).items()})
    windows: dict[str, Any] = {}
    out = []
    for sk in sks:
        out += build_candidates(sk, pack, ex, vocab, seed=42, windows=windows)
    return out, ex


# The fallbacks each pack calls for: none for the mini pack (its privacy rule's HAVING COUNT(*)
# is recombined); the demo has distinct counts and percentiles (the median rule), suppression by
# distinct customers and agents (HAVING COUNT(DISTINCT ...) >= k, with cells of fewer than k at
# the default size) and a backlog counted at the window's end. NUMERIC sums (amounts, a weight
# written 1.5) are recombined: partials are read as exact Decimals and decimal literals bind as
# NUMERIC.
FALLBACKS = {
    "minipack": set(),
    # The islands' (group, month) cells hold one or two customers: by region, the cells do not decide.
    "minipack_distinct": {"HAVING: COUNT DISTINCT is below its bound in some (group, month) cell"},
    "demo": {"HAVING: COUNT DISTINCT is below its bound in some (group, month) cell",
             "COUNT DISTINCT/WITHIN GROUP is not decomposable",
             "PERCENTILE_CONT DISTINCT/WITHIN GROUP is not decomposable",
             ":end_date is used beyond bounding the time column"},
}


@pytest.mark.parametrize("name", ["minipack", "minipack_distinct", "demo"])
def test_grouped_and_legacy_plans_give_identical_tasks(name: str, graph: Graph, warehouse: Warehouse,
                                                       tmp_path: Path) -> None:
    """Every candidate of the skeletons: answers, facts, stored SQL and parameters, rejections."""
    pk = ingested(name, tmp_path, graph, warehouse)
    try:
        sks = skeletons(pk, graph)
        new, ex_new = candidates(pk, sks, warehouse, True)
        old, ex_old = candidates(pk, sks, warehouse, False)
    finally:
        delete_domain(graph, pk.name)
    assert len(new) == len(old) > 100
    for a, b in zip(new, old):
        left, right = dataclasses.asdict(a), dataclasses.asdict(b)
        assert left.pop("sql_plan") != "" and right.pop("sql_plan") != ""
        assert left == right, a.key
    assert all(c.sql_plan.startswith("legacy: switched off") or c.sql_plan == "none" for c in old)
    assert {p.split(": ", 1)[1] for p in ex_new.plan_log if p != "grouped"} == FALLBACKS[name]
    paths = Counter((c.analysis_type, c.sql_plan.split(":")[0]) for c in new)
    if name == "demo":  # all numeric: every analysis that runs SQL is answered from the grouped plan somewhere
        for analysis in {c.analysis_type for c in new} - {"knowledge_retrieval"}:
            assert paths[(analysis, "grouped")] > 0, (analysis, paths)
    # A monthly series (a significance test's, a trend's) over every month, kept per window try.
    assert any(isinstance(k, tuple) and k[0] == "answer" and k[3] is None for k in ex_new.cache)
    if name == "demo":  # agents' distinct counts (194 tickets per agent) in combined statements, in two steps
        assert ex_new.pinned.get(("rows per value", pk.schema, "tickets", "agent_id")) is True
    if name == "demo":  # a counterfactual's variants: the policy without two rules, from the second cube
        assert any(isinstance(k, tuple) and k[0] == "pairs" and v for k, v in ex_new.pinned.items())
    if name == "demo":  # a monthly series of two groups of a rule task, read from the metric's (group, month) cells
        for metric in CELLS_METRICS:
            assert any(c.sql_plan == "grouped" and c.metric_id == metric and c.featured_rule for c in new
                       if c.analysis_type == "significance_testing"), (metric, paths)
    if name.startswith("minipack"):  # under its suppression rule (HAVING COUNT(*) >= 100), from the partials
        assert any(c.sql_plan == "grouped" and c.metric_id == "MINI-SAT-001" for c in new)
    if name == "minipack_distinct":  # HAVING COUNT(DISTINCT ...) >= 3 decided by the cells of a plan or a channel
        assert any(c.sql_plan == "grouped" and c.metric_id == "MINI-SAT-001" and c.featured_rule == "MINI-R-PRIVACY"
                   for c in new), paths


# ------------------------------------------------------------------------------ edge verification
@pytest.fixture()
def legacy_plan(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """DIBENCH_GROUPED_PLAN=0 for the duration of a test."""
    monkeypatch.setenv("DIBENCH_GROUPED_PLAN", "0")
    get_settings.cache_clear()
    yield
    monkeypatch.delenv("DIBENCH_GROUPED_PLAN")
    get_settings.cache_clear()


def edge_checks(pk: Pack, wh: Warehouse) -> list[EdgeCheck]:
    return plan_rules(pk, wh).checks


@pytest.mark.parametrize("name", ["demo", "minipack", "berka"])
def test_edge_verification_is_the_same_on_both_paths(name: str, warehouse: Warehouse,
                                                     request: pytest.FixtureRequest) -> None:
    """Which edges verify, on which slices, with how many slices checked: every effect of the demo
    pack (numeric data), of the mini pack (float amounts, a suppression rule: HAVING) and of the
    Berka pack (a rule that filters on :end_date: the window is more than a time bound there)."""
    pk = load_pack(MINIPACK if name == "minipack" else name)
    if name == "minipack":
        ensure_mini_loaded(warehouse)
    elif not schema_columns(warehouse, pk.schema):
        load_database(pk, warehouse)
    grouped_checks = edge_checks(pk, warehouse)
    request.getfixturevalue("legacy_plan")
    legacy_checks = edge_checks(pk, warehouse)
    assert grouped_checks == legacy_checks
    assert sum(c.verified for c in grouped_checks) >= 5 and not any(c.error for c in grouped_checks)


@pytest.mark.parametrize("grouped_plan", [True, False])
def test_a_minimum_group_size_that_bites_in_one_month_only_verifies_the_edge(
        grouped_plan: bool, tmp_path: Path, warehouse: Warehouse, request: pytest.FixtureRequest) -> None:
    """Satisfaction by plan and channel: every plan and channel holds over 1,200 orders and every
    month over 140, but a plan or a channel in one month holds 45 to 64. A task asks for one plan
    over whole months, so a minimum of 50 orders can suppress its answer: the edge is verified on
    the (value, month) slices, and the rule is in the metric's policy."""
    root = copy_pack(tmp_path / "pack", "mini_month_cells")
    edit_metrics(root, lambda ms: [m.update(dimensions=["customers.plan", "orders.channel"]) for m in ms
                                   if m["id"] == "MINI-SAT-001"])
    edit_front(root / "rules" / "privacy.md", lambda f: f["effects"][0].update(min_n=50))
    ensure_mini_loaded(warehouse)
    if not grouped_plan:
        request.getfixturevalue("legacy_plan")
    [check] = [c for c in edge_checks(load_pack(root), warehouse) if c.rule_id == "MINI-R-PRIVACY"]
    assert check.verified and check.changed_slices, check
    by_month = ("customers.plan by month=", "orders.channel by month=")
    assert all(s.startswith(by_month) for s in check.changed_slices), check
    assert check.slices_checked == 6  # all, plan, channel, month, plan by month, channel by month


def test_a_variant_is_combined_only_when_it_adds_a_row_filter() -> None:
    from dibench.sqlops import sides
    base = parse("SELECT COUNT(*) AS value FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date", where="t")
    filtered = base.copy().where("o.k = :k")
    assert render(sides.row_filter(base, filtered)) == "o.k = :k"  # type: ignore[arg-type]
    assert sides.row_filter(base, base.copy()) is None
    joined = parse("SELECT COUNT(*) AS value FROM s.o o JOIN s.p p ON p.id = o.id "
                   "WHERE o.t >= :start_date AND o.t < :end_date", where="t")
    assert sides.row_filter(base, joined) == "the variant changes more than WHERE, value and HAVING"
    other = parse("SELECT COUNT(*) AS value FROM s.o o WHERE o.t >= :start_date", where="t")
    assert sides.row_filter(base, other) == "the variant's WHERE is not the base's plus a condition"
    side = sides.side(base, filtered, {"k": 1, "start_date": 0}, 2)
    assert isinstance(side, sides.Side) and side.params == {"s2_k": 1, "start_date": 0}
    assert render(sides.combined(base, [side])) == (
        "SELECT COUNT(*) FILTER(WHERE (o.k = :s2_k)) AS v0, COUNT(*) FILTER(WHERE (o.k = :s2_k)) AS e0, TRUE AS h0 "
        "FROM s.o AS o WHERE o.t >= :start_date AND o.t < :end_date")


def test_row_filters_added_one_after_another_are_one_condition() -> None:
    from dibench.sqlops import sides
    base = parse("SELECT COUNT(*) AS value FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date", where="t")
    two = base.copy().where("o.k = :k").where("o.j = :j")
    assert render(sides.row_filter(base, two)) == "o.k = :k AND o.j = :j"  # type: ignore[arg-type]
    side = sides.side(base, two, {"k": 1, "j": 2}, 0)
    assert isinstance(side, sides.Side) and render(side.rows) == "o.k = :s0_k AND o.j = :s0_j"  # type: ignore[arg-type]


def test_the_cube_groups_every_dimension_by_month_and_filters_each_rule_set() -> None:
    from sqlglot import exp
    base = parse("SELECT SUM(o.x) AS value FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date", where="t")
    d = grouped.decompose(base)
    assert isinstance(d, grouped.Decomposed)
    rows = parse("SELECT 1 WHERE o.k = :s1_k", where="t").args["where"].this
    months = grouped.month_params((dt.date(2024, 1, 15), dt.date(2024, 3, 1)))
    assert months == {"dibench_months_0": dt.date(2024, 1, 1), "dibench_months_1": dt.date(2024, 2, 1)}
    cube = grouped.cube_query(base, [grouped.CubeSide(None, d), grouped.CubeSide(rows, None)],
                              [exp.column("y", table="o"), exp.column("z", table="o")], exp.column("t", table="o"),
                              list(months))
    assert render(cube) == (
        "SELECT o.y AS k0, o.z AS k1, TO_CHAR(dibench_months.m, 'YYYY-MM') AS period, "
        "GROUPING(o.y, o.z) AS gs, COUNT(*) AS n0, SUM(o.x) AS s0_c0, COUNT(*) FILTER(WHERE (o.k = :s1_k)) AS n1 "
        "FROM s.o AS o LEFT JOIN (VALUES (CAST(:dibench_months_0 AS DATE)), (CAST(:dibench_months_1 AS DATE))) "
        "AS dibench_months(m) ON dibench_months.m = CAST(DATE_TRUNC('MONTH', o.t) AS DATE) "
        "WHERE o.t >= :start_date AND o.t < :end_date "
        "GROUP BY GROUPING SETS ((o.y, dibench_months.m), (o.z, dibench_months.m), (dibench_months.m))")
    # GROUPING(k0, k1): 1 = k1 not grouped (the set of k0), 2 = the set of k1, 3 = by month only
    assert [grouped.cube_set(g, 2) for g in (1, 2, 3)] == [0, 1, None]


def test_a_having_is_recombined_as_the_value_is() -> None:
    """A suppression's HAVING over partials: COUNT(*) recombined as a sum of counts, applied by the
    proxy to the groups a shape forms; never to the partial rows themselves."""
    from sqlglot import exp
    tree = parse("SELECT AVG(o.x) AS value FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date "
                 "HAVING (COUNT(*) >= :n) AND (MAX(o.x) > 3)", where="t")
    d = grouped.decompose(tree)
    assert isinstance(d, grouped.Decomposed) and d.having is not None
    assert [(p.name, p.kind) for p in d.partials] == [("c0", "sum"), ("c1", "count"), ("c2", "count"), ("c3", "self")]
    types = {"c0": "NUMERIC", "c1": "BIGINT", "c2": "BIGINT", "c3": "NUMERIC"}
    assert render(grouped.proxy_query(grouped.recombine(d, types), types, grouped.recombine(d, types, d.having))) \
        .endswith("HAVING (CAST(COALESCE(SUM(gp.c2), 0) AS BIGINT) >= :n) AND (MAX(gp.c3) > 3)")
    assert "HAVING" not in render(grouped.partials_query(tree, d, None, exp.column("t", table="o")))
    # A distinct count in HAVING does not add up over months, and is compared with a bound only as
    # a suppression's `COUNT(DISTINCT x) >= k` (or `>`): see the next test.
    assert grouped.decompose(parse("SELECT SUM(o.x) AS value FROM s.o o HAVING COUNT(DISTINCT o.c) = 3",
                                   where="t")) == "HAVING: COUNT DISTINCT/WITHIN GROUP is not decomposable"
    assert grouped.decompose(parse("SELECT SUM(o.x) AS value FROM s.o o HAVING COUNT(DISTINCT o.c) >= MAX(o.x)",
                                   where="t")) == "HAVING: COUNT DISTINCT/WITHIN GROUP is not decomposable"


@pytest.mark.parametrize("bound,cells,having", [
    (":k", [5, 7], "COUNT(gp.n) > 0 AND CAST(COALESCE(SUM(gp.c2), 0) AS BIGINT) > 2"),  # every cell >= 5
    (":k", [5, 4], "HAVING: COUNT DISTINCT is below its bound in some (group, month) cell"),
    ("0", [0, 3], "TRUE AND CAST(COALESCE(SUM(gp.c2), 0) AS BIGINT) > 2"),  # any count meets >= 0
    (":k", [], "COUNT(gp.n) > 0 AND CAST(COALESCE(SUM(gp.c2), 0) AS BIGINT) > 2"),  # no cell: no group passes
])
def test_a_distinct_count_in_having_is_decided_by_the_cells(bound: str, cells: list[int], having: str) -> None:
    """A suppression by distinct customers: when every (group, month) cell alone counts k distinct
    values, every group of cells does (it counts at least its largest cell's), and a group without a
    cell counts none; otherwise the cells do not decide it."""
    tree = parse("SELECT SUM(o.x) AS value FROM s.o o WHERE o.t >= :start_date AND o.t < :end_date "
                 f"HAVING COUNT(DISTINCT o.c) >= {bound} AND COUNT(*) > 2", where="t")
    d = grouped.decompose(tree)
    assert isinstance(d, grouped.Decomposed)
    assert [(p.name, p.kind) for p in d.partials] == [("c0", "sum"), ("c1", "distinct"), ("c2", "count")]
    from sqlglot import exp
    assert "COUNT(DISTINCT o.c) AS c1" in render(grouped.partials_query(tree, d, None, exp.column("t", table="o")))
    decided = grouped.decide_having(d, {"c1": cells}, {"k": 5})
    types = {"c0": "BIGINT", "c2": "BIGINT"}
    assert (decided if isinstance(decided, str) else render(grouped.recombine(d, types, decided))) == having
    strict = grouped.decompose(parse("SELECT SUM(o.x) AS value FROM s.o o HAVING 5 < COUNT(DISTINCT o.c)", where="t"))
    assert isinstance(strict, grouped.Decomposed)
    assert isinstance(grouped.decide_having(strict, {"c1": [5, 7]}, {}), str)  # 5 is not > 5
    assert render(grouped.recombine(strict, types, grouped.decide_having(strict, {"c1": [6, 7]}, {}))) == "COUNT(gp.n) > 0"


def test_only_a_shape_whose_groups_are_cells_reads_cell_values() -> None:
    """A value that does not decompose is exact over the (group, month) cells only for a shape that
    groups by both (whatever it wraps around them); a window or a two-group filter keeps whole cells."""
    from sqlglot import exp
    from dibench.sqlops.shape import filter_in, group_by, month_bucket
    proxy = grouped.proxy_query(grouped.cell_value(), {grouped.GROUP: "TEXT", grouped.CELL: "NUMERIC"})
    month = month_bucket(grouped.month_column())
    series = group_by(group_by(filter_in(proxy, grouped.group_column(), ["a", "b"]), grouped.group_column()), month)
    assert grouped.one_cell_per_group(series, by_group=True)
    assert grouped.one_cell_per_group(group_by(proxy, month), by_group=False)
    assert not grouped.one_cell_per_group(group_by(proxy, month), by_group=True)  # every group of a month
    assert not grouped.one_cell_per_group(group_by(proxy, grouped.group_column()), by_group=True)  # every month
    assert not grouped.one_cell_per_group(proxy, by_group=False)  # the whole window
    wrapped = exp.select("*").from_(group_by(proxy, month).subquery("x")).order_by("value").limit(3)
    assert grouped.one_cell_per_group(wrapped, by_group=False)
    assert grouped.cell_type([1.5, None]) == "DOUBLE PRECISION" and grouped.column_type([1.5]) is None


def test_a_series_row_by_row_is_computed_once_for_every_window() -> None:
    """A shape each of whose rows is one cell's (a monthly series of two groups) gives, over any
    months, the rows over all months that fall in them (the grouped-vs-legacy test checks the
    answers); anything that reads across rows (an order with a limit, a wrapper) does not."""
    from sqlglot import exp
    from dibench.sqlops.shape import filter_in, group_by, month_bucket
    proxy = grouped.proxy_query(grouped.cell_value(), {grouped.GROUP: "TEXT", grouped.CELL: "NUMERIC"})
    month = month_bucket(grouped.month_column())
    series = group_by(group_by(filter_in(proxy, grouped.group_column(), ["a", "b"]), grouped.group_column()),
                      month, alias="period")
    assert grouped.cell_rows_period(series, by_group=True) == 0  # period, grp, value, n_rows
    assert grouped.cell_rows_period(group_by(proxy, month), by_group=False) == 0
    assert grouped.cell_rows_period(series.copy().order_by("value").limit(3), by_group=True) is None
    assert grouped.cell_rows_period(exp.select("*").from_(series.subquery("x")), by_group=True) is None
    assert grouped.cell_rows_period(group_by(proxy, grouped.group_column()), by_group=True) is None


def test_partial_rows_without_a_row_still_have_text_groups_and_months() -> None:
    """No row (a rule set that keeps none; every cell rejected by a HAVING at 2,000 tickets): the
    proxy's group is still compared with text values, and its months with text."""
    from dibench.generation.grouped import Partials, typed_columns
    d = grouped.decompose(parse("SELECT COUNT(*) AS value FROM s.o o", where="t"))
    assert isinstance(d, grouped.Decomposed)
    p = typed_columns({grouped.GROUP: [], grouped.PERIOD: [], grouped.ROWS: [], "c0": []}, d, {}, False)
    assert isinstance(p, Partials) and p.types == {"g": "TEXT", "period": "TEXT", "n": "BIGINT", "c0": "NUMERIC"}
    assert grouped.cell_type([None], grouped.EMPTY_TYPES[grouped.GROUP]) == "TEXT"


def test_a_per_row_subquery_inside_an_aggregate_is_joined_once() -> None:
    from dibench.sqlops.shape import hoist_row_subqueries
    tree = parse("SELECT AVG(x.a - (SELECT SUM(h.d) FROM s.h h WHERE h.id = x.id)) AS v, "
                 "SUM((SELECT SUM(h.d) FROM s.h h WHERE h.id = x.id)) FILTER (WHERE x.k = 1) AS w, "
                 "(SELECT 5) AS z FROM s.x x WHERE x.t >= :start_date GROUP BY x.g", where="t")
    assert render(hoist_row_subqueries(tree)) == (
        "SELECT AVG(x.a - dibench_row0.v) AS v, SUM(dibench_row0.v) FILTER(WHERE x.k = 1) AS w, (SELECT 5) AS z "
        "FROM s.x AS x CROSS JOIN LATERAL (SELECT (SELECT SUM(h.d) FROM s.h AS h WHERE h.id = x.id) AS v) "
        "AS dibench_row0 WHERE x.t >= :start_date GROUP BY x.g")

    # Under different placeholders with the same values (two rule sets of a cube), still one join.
    twice = parse("SELECT SUM((SELECT SUM(h.d) FROM s.h h WHERE h.id = x.id AND h.k = :a_k)) AS v, "
                  "SUM((SELECT SUM(h.d) FROM s.h h WHERE h.id = x.id AND h.k = :b_k)) AS w, "
                  "SUM((SELECT SUM(h.d) FROM s.h h WHERE h.id = x.id AND h.k = :c_k)) AS u FROM s.x x", where="t")
    hoisted = render(hoist_row_subqueries(twice, {"a_k": "paused", "b_k": "paused", "c_k": "open"}))
    assert hoisted.count("CROSS JOIN LATERAL") == 2
    assert "SUM(dibench_row0.v) AS v, SUM(dibench_row0.v) AS w, SUM(dibench_row1.v) AS u" in hoisted


def test_a_cube_or_batch_that_fails_leaves_each_rule_set_to_its_own_statement(
        graph: Graph, warehouse: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cube or combined statement that fails (a statement timeout on a loaded server) is a lost
    shortcut, never a lost task: the same candidates come from the smaller statements."""
    from dibench.core.errors import WarehouseError
    pk = ingested("minipack", tmp_path, graph, warehouse)
    try:
        sks = skeletons(pk, graph)[:8]
        normal, _ = candidates(pk, sks, warehouse, True)
        real = Executor.run

        def failing(self: Executor, sql: str, params: dict[str, Any], **kw: Any) -> Any:
            if "GROUPING SETS" in sql or " AS v0, " in sql:
                raise WarehouseError("canceling statement due to statement timeout")
            return real(self, sql, params, **kw)

        monkeypatch.setattr(Executor, "run", failing)
        degraded, _ = candidates(pk, sks, warehouse, True)
    finally:
        delete_domain(graph, pk.name)
    assert [dataclasses.asdict(c) for c in degraded] == [dataclasses.asdict(c) for c in normal]


def test_a_row_filter_goes_after_within_group_and_never_into_a_subquery() -> None:
    from dibench.sqlops import sides
    value = parse("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY o.x) + SUM(o.y) FILTER (WHERE o.q) "
                  "+ (SELECT COUNT(*) FROM s.z z) AS value FROM s.o o", where="t").expressions[0].this
    rows = parse("SELECT 1 WHERE o.k = 1", where="t").args["where"].this
    assert render(sides.filtered(value, rows)) == (
        "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY o.x) FILTER(WHERE (o.k = 1)) "
        "+ SUM(o.y) FILTER(WHERE (o.q) AND (o.k = 1)) + (SELECT COUNT(*) FROM s.z AS z)")


# ------------------------------------------------------------------------------ distinct counts in two steps
# Rows with a NULL agent, a NULL filter column, a group without agents, agents shared by groups.
DISTINCT_ROWS = ("(VALUES ('a', 1, TRUE, 5), ('a', 1, FALSE, 7), ('a', 2, TRUE, NULL), ('a', NULL, TRUE, 1), "
                 "('b', 2, NULL, 3), ('b', 3, FALSE, 4), ('b', 3, FALSE, 2), ('c', NULL, TRUE, 9), "
                 "('d', 1, FALSE, 6)) AS o(g, agent, ok, n)")


@pytest.mark.parametrize("select", [
    "o.g AS grp, COUNT(*) * 1.0 / NULLIF(COUNT(DISTINCT o.agent), 0) AS value, COUNT(*) AS n_rows {from} GROUP BY o.g",
    "COUNT(*) FILTER (WHERE o.ok) * 1.0 / NULLIF(COUNT(DISTINCT o.agent) FILTER (WHERE o.ok), 0) AS v0, "
    "COUNT(DISTINCT o.agent) FILTER (WHERE o.n > 2) >= :k AS h1, TRUE AS h0, COUNT(o.n) AS c, "
    "MIN(o.n) FILTER (WHERE o.ok) AS lo, MAX(o.n) AS hi, BOOL_AND(o.ok) AS every, BOOL_OR(o.ok) AS some {from}",
    "o.g, COUNT(DISTINCT o.agent) AS value {from} GROUP BY o.g HAVING COUNT(DISTINCT o.agent) >= :k AND COUNT(*) > 1",
    "o.g AS grp, o.ok AS okay, COUNT(DISTINCT o.agent) AS value {from} GROUP BY o.g, o.ok",
    "COUNT(DISTINCT o.agent) AS value, COUNT(*) AS n_rows {from} WHERE o.n > 100",  # no row: one row of 0s
    "o.g AS grp, COUNT(DISTINCT o.agent) AS value {from} WHERE o.n > 100 GROUP BY o.g",  # no row: no group
])
def test_distinct_counts_computed_in_two_steps_are_the_same_rows(select: str, warehouse: Warehouse) -> None:
    """The pre-aggregated statement returns the original's columns, groups, types and values, on
    the real server (NULL agents and filters, empty inputs, HAVING, several keys)."""
    from dibench.sqlops.distinct import pre_aggregated
    tree = parse("SELECT " + select.format(**{"from": "FROM " + DISTINCT_ROWS}), where="test")
    two_steps = pre_aggregated(tree)
    assert two_steps is not None and "o.agent AS dx" in render(two_steps)
    params = {"k": 2}
    want = warehouse.execute_readonly(render(tree), params, exact=True)
    got = warehouse.execute_readonly(render(two_steps), params, exact=True)
    assert got.columns == want.columns
    assert sorted(map(repr, got.rows)) == sorted(map(repr, want.rows))  # Decimal('2.50') is not Decimal('2.5')


def test_a_monthly_distinct_count_in_two_steps_groups_by_the_joined_month(warehouse: Warehouse) -> None:
    """A key that is the month of the time column is grouped by the month joined from the list of
    the window's months in the first step: the same rows, a group per listed month."""
    from sqlglot import exp
    from dibench.sqlops.distinct import Months, pre_aggregated
    rows = ("(VALUES (TIMESTAMP '2024-01-03 10:00', 'a', 1), (TIMESTAMP '2024-01-31 23:59:59', 'a', 2), "
            "(TIMESTAMP '2024-02-01 00:00', 'a', 1), (TIMESTAMP '2024-02-11 08:00', 'b', NULL), "
            "(TIMESTAMP '2024-03-30 12:00', 'b', 2), (TIMESTAMP '2023-12-31 23:00', 'a', 3)) AS o(t, g, agent)")
    from dibench.sqlops.shape import group_by, month_bucket
    t = exp.column("t", table="o")
    metric = parse(f"SELECT COUNT(*) * 1.0 / NULLIF(COUNT(DISTINCT o.agent), 0) AS value FROM {rows} "
                   "WHERE o.t >= :start_date AND o.t < :end_date", where="test")
    tree = group_by(group_by(metric, exp.column("g", table="o"), alias="g"), month_bucket(t), alias="period")
    window = (dt.date(2024, 1, 1), dt.date(2024, 4, 1))
    months = grouped.month_params(window)
    two_steps = pre_aggregated(tree, Months(t, tuple(months)))
    assert two_steps is not None and "GROUP BY o.g, dibench_months.m, o.agent" in render(two_steps)
    params = {"start_date": window[0], "end_date": window[1]}
    want = warehouse.execute_readonly(render(tree), params, exact=True)
    got = warehouse.execute_readonly(render(two_steps), {**params, **months}, exact=True)
    assert got.columns == want.columns and len(want.rows) == 4
    assert sorted(map(repr, got.rows)) == sorted(map(repr, want.rows))


@pytest.mark.parametrize("sql", [
    "SELECT o.g, SUM(o.n) / COUNT(DISTINCT o.agent) AS value FROM s.o o GROUP BY o.g",  # a sum: its type is unknown
    "SELECT AVG(o.n) + COUNT(DISTINCT o.agent) AS value FROM s.o o",
    "SELECT COUNT(DISTINCT o.agent) + COUNT(DISTINCT o.g) AS value FROM s.o o",  # two distinct columns
    "SELECT COUNT(*) AS value FROM s.o o",  # nothing distinct
    "SELECT UPPER(o.g) AS g, COUNT(DISTINCT o.agent) AS value FROM s.o o GROUP BY o.g",  # a column outside
    "SELECT o.g, COUNT(DISTINCT o.agent) AS value FROM s.o o GROUP BY 1",  # by position
    "SELECT o.g, COUNT(DISTINCT o.agent) AS value FROM s.o o GROUP BY o.g ORDER BY value DESC LIMIT 3",
    "SELECT COUNT(DISTINCT o.agent) AS value, SUM(COUNT(*)) OVER () AS w FROM s.o o",
    "SELECT COUNT(DISTINCT LOWER(o.g)) AS value FROM s.o o",  # not a column
    "SELECT o.g, COUNT(DISTINCT o.agent) AS value FROM s.o o GROUP BY GROUPING SETS ((o.g), ())",
    "SELECT COUNT(DISTINCT o.agent) FROM s.o o",  # an unnamed column
])
def test_what_is_not_computed_in_two_steps(sql: str) -> None:
    from dibench.sqlops.distinct import distinct_key, pre_aggregated
    tree = parse(sql, where="test")
    assert distinct_key(tree) is None and pre_aggregated(tree) is None
