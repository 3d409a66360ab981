"""Rule operations on the syntax tree: fixture pairs (template + operation -> expected SQL), in
the style of sqlglot's optimizer tests, each also executed.

For every case of tests/fixtures/rewrite/cases.yaml the test checks that
- the rewritten SQL and its bound parameters equal tests/fixtures/rewrite/<name>.sql
  (DIBENCH_UPDATE_SNAPSHOTS=1 rewrites those files);
- no literal value of the rule document appears in the SQL text: each became a parameter;
- the original and the rewritten SQL, run through `execute_readonly` on the mini data over the
  whole range and per sales region, give what Python computes from the raw rows: the original
  metric, and the metric under the rule as the rule's words describe it.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlglot import exp

from dibench.core.models import LLMEffects, MetricSpec
from dibench.core.pack import load_pack
from dibench.sqlops.dialect import parse, parse_expression, render
from dibench.sqlops.ops import AnyEffect, Bound, apply_effects
from dibench.sqlops.shape import group_by
from dibench.sqlops.tree import column
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import MINIPACK, ensure_mini_loaded

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rewrite"
CASES: list[dict[str, Any]] = yaml.safe_load((FIXTURES / "cases.yaml").read_text())
UPDATE = os.environ.get("DIBENCH_UPDATE_SNAPSHOTS") == "1"
WINDOW = {"start_date": dt.date(2023, 1, 1), "end_date": dt.date(2025, 1, 1)}
ALL = "(all)"


# ------------------------------------------------------------------------------ the raw rows
Row = dict[str, Any]
Value = Callable[[list[Row]], Fraction | None]

RAW_SQL = """
SELECT o.order_id, o.ordered_at, (o.amount * 100)::bigint AS cents, o.channel, o.rating, c.region, c.plan
FROM mini.orders o JOIN mini.customers c ON c.customer_id = o.customer_id
WHERE o.ordered_at >= :start_date AND o.ordered_at < :end_date
"""


@pytest.fixture(scope="module")
def rows(warehouse: Warehouse) -> list[Row]:
    ensure_mini_loaded(warehouse)
    out = warehouse.execute_readonly(RAW_SQL, WINDOW).records()
    for r in out:
        r["amount"] = Fraction(r["cents"], 100)  # exact: no float sums on the Python side
    assert len(out) > 1000
    return out


def amount_sum(rs: list[Row], w: Callable[[Row], Fraction] = lambda r: Fraction(1)) -> Fraction | None:
    return sum((r["amount"] * w(r) for r in rs), Fraction(0)) if rs else None


def satisfaction(rs: list[Row], good: Callable[[Row], int] = lambda r: 4,
                 w: Callable[[Row], Fraction] = lambda r: Fraction(1)) -> Fraction | None:
    rated = [r for r in rs if r["rating"] is not None]
    den = sum((w(r) for r in rated), Fraction(0))
    if not rated or den == 0:
        return None
    return 100 * sum((w(r) for r in rated if r["rating"] >= good(r)), Fraction(0)) / den


def average(rs: list[Row], keep: Callable[[Row], bool] = lambda r: True,
            w: Callable[[Row], Fraction] = lambda r: Fraction(1)) -> Fraction | None:
    kept = [r for r in rs if keep(r)]
    den = sum((w(r) for r in kept), Fraction(0))
    return sum((r["amount"] * w(r) for r in kept), Fraction(0)) / den if kept and den else None


def since(day: str) -> Callable[[Row], bool]:
    start = dt.datetime.fromisoformat(day)
    return lambda r: r["ordered_at"] >= start


def only(keep: Callable[[Row], bool], value: Value) -> Value:
    return lambda rs: value([r for r in rs if keep(r)])


ORIGINAL: dict[str, Value] = {
    "MINI-REV-001": amount_sum,
    "MINI-SAT-001": satisfaction,
    "MINI-AOV-001": average,
}

# What each rule says, computed in Python over one group's rows (None: the group is not reported).
EXPECTED: dict[str, Value] = {
    "where": only(lambda r: r["channel"] != "phone" and 2 <= r["rating"] <= 5, satisfaction),
    "exclude": only(lambda r: not r["amount"] > 2000, amount_sum),
    "having": lambda rs: amount_sum(rs) if len(rs) >= 30 else None,
    "threshold": lambda rs: satisfaction(rs, good=lambda r: 5),
    "weight": lambda rs: satisfaction(rs, w=lambda r: Fraction(1, 2) if r["channel"] == "store" else Fraction(3, 2)),
    "override": only(lambda r: r["channel"] != "phone", amount_sum),
    "suppress": lambda rs: satisfaction(rs) if len(rs) >= 100 else None,
    "exclude_applies_when": only(lambda r: not (r["channel"] == "phone" and r["plan"] == "basic"), satisfaction),
    "threshold_from_date": lambda rs: satisfaction(rs, good=lambda r: 5 if since("2024-06-01")(r) else 4),
    "exclude_both_guards": only(
        lambda r: not (r["region"] == "north" and since("2024-01-01")(r) and r["amount"] > 300), amount_sum),
    # An override guarded by a dimension applies to a group only when the whole group is in the slice.
    "override_applies_when": lambda rs: amount_sum(rs, w=lambda r: Fraction(9, 10) if all(
        x["region"] == "north" for x in rs) else Fraction(1)),
    "weight_from_date": lambda rs: amount_sum(rs, w=lambda r: Fraction(2) if since("2024-06-01")(r) else Fraction(1)),
    "weight_avg_filter": lambda rs: average(rs, keep=lambda r: r["rating"] >= 3,
                                            w=lambda r: Fraction(5, 2) if r["plan"] == "enterprise" else Fraction(1)),
    "where_interval": only(lambda r: r["ordered_at"] < dt.datetime(2024, 1, 31), amount_sum),
    "adjust": lambda rs: amount_sum(rs, w=lambda r: Fraction(4, 5)),
    # row by row: a group mixing regions adjusts its north rows only
    "adjust_applies_when": lambda rs: (sum((r["amount"] - (10 if r["region"] == "north" else 0) for r in rs),
                                           Fraction(0)) / len(rs)) if rs else None,
    "adjust_from_date": lambda rs: amount_sum(rs, w=lambda r: Fraction(9, 10) if since("2024-06-01")(r) else Fraction(1)),
}
ORIGINAL_OF_CASE: dict[str, Value] = {"weight_avg_filter": lambda rs: average(rs, keep=lambda r: r["rating"] >= 3)}


def expected_by_group(rows: list[Row], value: Value) -> dict[str, float]:
    groups: dict[str, list[Row]] = {ALL: rows}
    for r in rows:
        groups.setdefault(r["region"], []).append(r)
    out = {g: value(rs) for g, rs in groups.items()}
    return {g: float(v) for g, v in out.items() if v is not None}


# ------------------------------------------------------------------------------ the cases
@pytest.fixture(scope="module")
def metrics() -> dict[str, MetricSpec]:
    return load_pack(MINIPACK).metric_by_id


def case_metric(case: dict[str, Any], metrics: dict[str, MetricSpec]) -> MetricSpec:
    m = metrics[case["metric"]]
    return m.model_copy(update={"sql": case["sql"]}) if "sql" in case else m


def case_effect(case: dict[str, Any]) -> AnyEffect:
    return LLMEffects.model_validate({"effects": [{"metric": case["metric"], **case["effect"]}]}).effects[0]


def rewrite(case: dict[str, Any], metrics: dict[str, MetricSpec]) -> tuple[MetricSpec, Bound, Bound]:
    m = case_metric(case, metrics)
    base = Bound(parse(m.sql))
    return m, base, apply_effects(base, [(case["name"], case_effect(case))], m)


def snapshot_text(gold: Bound) -> str:
    return f"-- params: {json.dumps(gold.params, sort_keys=True, default=str)}\n{render(gold.tree)}\n"


def test_every_operation_and_guard_has_a_case() -> None:
    ops = {c["effect"]["op"] for c in CASES}
    assert ops == {"where", "exclude", "having", "threshold", "adjust", "weight", "override", "suppress"}
    guards = {tuple(sorted(k for k in ("applies_when", "from_date") if k in c["effect"])) for c in CASES}
    assert {("applies_when",), ("from_date",), ("applies_when", "from_date")} <= guards
    assert set(EXPECTED) == {c["name"] for c in CASES}
    assert len({c["name"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_rewritten_sql_matches_fixture(case: dict[str, Any], metrics: dict[str, MetricSpec]) -> None:
    _, _, gold = rewrite(case, metrics)
    path = FIXTURES / f"{case['name']}.sql"
    text = snapshot_text(gold)
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist and was written; check it and rerun")
    assert text == path.read_text()


def _literals(tree: exp.Expression) -> Counter[str]:
    return Counter(str(lit.this) for lit in tree.find_all(exp.Literal))


def document_values(case: dict[str, Any]) -> set[str]:
    """Every value a rule document states in its effect: literals of its SQL fragments, guard values."""
    eff = case["effect"]
    values: set[str] = set()
    for field in ("predicate", "weight", "expression"):
        if field in eff:
            values |= set(_literals(parse_expression(str(eff[field]))))
    for field in ("value", "min_n"):
        if field in eff:
            values.add(str(eff[field]))
    if "applies_when" in eff:
        values.add(str(eff["applies_when"]["value"]))
    if "from_date" in eff:
        values.add(str(eff["from_date"]))
    return values


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_document_values_are_bound_parameters(case: dict[str, Any], metrics: dict[str, MetricSpec]) -> None:
    _, base, gold = rewrite(case, metrics)
    values = document_values(case)
    assert values, "a case without document values proves nothing here"
    # Literals the rewrite added beyond the template's own: only structural ones (a weight
    # guard's ELSE 1, a NULLIF(..., 0)), never a value the document states.
    added = _literals(gold.tree) - _literals(base.tree)
    assert set(added) <= {"1", "0"} | set(_literals(base.tree))
    assert not (set(added) & values), f"document values in the SQL text: {set(added) & values}"
    sql = render(gold.tree)
    for v in values:
        if not v.replace(".", "").isdigit():
            assert f"'{v}'" not in sql, f"string value {v!r} spliced into the SQL"
    bound = " | ".join(str(p) for p in gold.params.values())
    missing = sorted(v for v in values if v not in bound)
    assert not missing, f"document values not among the bound parameters {gold.params}: {missing}"


def run_by_group(wh: Warehouse, tree: exp.Expression, params: dict[str, Any]) -> dict[str, float]:
    """The value over the whole range, and per sales region (one GROUP BY), through the read-only path."""
    out: dict[str, float] = {}
    whole = wh.execute_readonly(render(tree), params)
    if whole.rows and whole.rows[0][0] is not None:
        out[ALL] = float(whole.rows[0][0])
    grouped = group_by(tree, column(tree, "customers.region"))
    for region, value, _n in wh.execute_readonly(render(grouped), params).rows:
        if value is not None:
            out[str(region)] = float(value)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_original_and_rewritten_sql_execute_to_independent_expectation(
        case: dict[str, Any], metrics: dict[str, MetricSpec], rows: list[Row], warehouse: Warehouse) -> None:
    m, base, gold = rewrite(case, metrics)
    params = {**WINDOW, **m.params}
    original = ORIGINAL_OF_CASE.get(case["name"], ORIGINAL[m.id])
    want_base = expected_by_group(rows, original)
    want_gold = expected_by_group(rows, EXPECTED[case["name"]])
    got_base = run_by_group(warehouse, base.tree, params)
    got_gold = run_by_group(warehouse, gold.tree, {**params, **gold.params})
    assert set(got_base) == set(want_base)
    assert set(got_gold) == set(want_gold)
    for g in want_base:
        assert got_base[g] == pytest.approx(want_base[g], rel=1e-9), f"original, group {g}"
    for g in want_gold:
        assert got_gold[g] == pytest.approx(want_gold[g], rel=1e-9), f"rewritten, group {g}"
    # The fixture must show the rule at work somewhere, else it would pass for a no-op rewrite.
    assert got_gold != got_base
