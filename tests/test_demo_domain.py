"""The built-in demo domain: seeded generator, pack validity, and every rule changing an answer.

Runs against the real PostgreSQL. The `demo` schema is (re)built at its default size once per
module; determinism checks use small scratch schemas that are dropped afterwards.
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from psycopg import sql

from dibench.core.pack import load_pack
from dibench.domains.demo.generate import COLUMNS, DemoSizeError, load
from dibench.ingest.database import load_database
from dibench.ingest.validate import validate_pack
from dibench.ingest.verify import verify_effect
from dibench.stores.warehouse import admin_cursor, Warehouse

PACK = load_pack("demo")
EDGES = [(doc.id, eff) for doc in PACK.rules for eff in doc.front.effects or []]
SCRATCH = ("demo_det_a", "demo_det_b", "demo_det_c")
DATA_START, DATA_END = dt.date(2023, 1, 1), dt.date(2025, 1, 1)


def _admin_query(wh: Warehouse, statement: sql.Composed) -> list[tuple[Any, ...]]:
    with admin_cursor(wh.admin()) as cur:
        cur.execute(statement)
        return cur.fetchall() if cur.description else []


def _checksums(wh: Warehouse, schema: str) -> dict[str, str]:
    """md5 of every table's rows as text, in primary-key order."""
    out = {}
    for table, columns in COLUMNS.items():
        statement = sql.SQL("SELECT md5(string_agg(x::text, '|' ORDER BY x.{})) FROM {}.{} x").format(
            sql.Identifier(columns[0]), sql.Identifier(schema), sql.Identifier(table))
        out[table] = _admin_query(wh, statement)[0][0]
    return out


@pytest.fixture(scope="module")
def demo(warehouse: Warehouse) -> dict[str, Any]:
    """The `demo` schema at the pack's default size and seed; returns the loader's report."""
    return load_database(PACK, warehouse)


@pytest.fixture(scope="module")
def scratch(warehouse: Warehouse) -> Iterator[dict[str, dict[str, str]]]:
    """Checksums of three small loads: two with seed 7, one with seed 8."""
    try:
        sums = {}
        for schema, seed in zip(SCRATCH, (7, 7, 8)):
            load(warehouse.admin(), schema, size=3000, seed=seed)
            sums[schema] = _checksums(warehouse, schema)
        yield sums
    finally:
        for schema in SCRATCH:
            _admin_query(warehouse, sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def test_same_seed_gives_identical_tables(scratch: dict[str, dict[str, str]]) -> None:
    a, b = scratch["demo_det_a"], scratch["demo_det_b"]
    assert set(a) == set(COLUMNS)
    assert all(v is not None for v in a.values())
    assert a == b


def test_different_seed_gives_different_data(scratch: dict[str, dict[str, str]]) -> None:
    a, c = scratch["demo_det_a"], scratch["demo_det_c"]
    for table in ("customers", "agents", "tickets", "ticket_status_history", "surveys", "refunds"):
        assert a[table] != c[table], table
    # Reference tables are constants, independent of the seed.
    assert a["countries"] == c["countries"]


def test_generator_refuses_tiny_sizes(warehouse: Warehouse) -> None:
    with pytest.raises(DemoSizeError, match="at least 100"):
        load(warehouse.admin(), "demo_det_never", size=10)


def test_default_row_counts(demo: dict[str, Any]) -> None:
    n = demo["tables"]
    assert n["tickets"] == 20_000
    assert n["customers"] == 2_500
    assert n["plans"] == 3
    assert n["countries"] == 32
    assert n["teams"] == 7
    assert 60 <= n["agents"] <= 150
    assert 4 * n["tickets"] <= n["ticket_status_history"] <= 7 * n["tickets"]
    assert 0.25 * n["tickets"] <= n["surveys"] <= 0.45 * n["tickets"]
    assert 0.05 * n["tickets"] <= n["refunds"] <= 0.2 * n["tickets"]


def _one(wh: Warehouse, query: str) -> Any:
    return wh.execute_readonly(query).rows[0][0]


def test_data_contains_the_rule_cases(demo: dict[str, Any], warehouse: Warehouse) -> None:
    wh = warehouse
    lo, hi = wh.execute_readonly("SELECT MIN(created_at), MAX(created_at) FROM demo.tickets").rows[0]
    assert (lo.date(), hi.date()) == (DATA_START, dt.date(2024, 12, 31))
    weekend_basic_breaches = _one(wh, """
        SELECT COUNT(*) FROM demo.tickets t JOIN demo.customers c ON c.customer_id = t.customer_id
        WHERE c.plan = 'basic' AND NOT c.has_24h_support AND EXTRACT(ISODOW FROM t.created_at) IN (6, 7)
          AND t.first_response_at - t.created_at > INTERVAL '24 hours'""")
    assert weekend_basic_breaches > 300
    neutral_share = _one(wh, "SELECT AVG((score = 3)::int) FROM demo.surveys")
    assert 0.2 <= neutral_share <= 0.4
    paused = _one(wh, "SELECT COUNT(DISTINCT ticket_id) FROM demo.ticket_status_history "
                      "WHERE status = 'waiting_on_customer'")
    assert paused > 0.25 * demo["tables"]["tickets"]
    dormant = _one(wh, "SELECT COUNT(*) FROM demo.tickets WHERE resolved_at - created_at > INTERVAL '60 days'")
    assert dormant > 50
    small_countries = _one(wh, """
        SELECT COUNT(*) FROM (SELECT c.country_code FROM demo.customers c
                              GROUP BY c.country_code HAVING COUNT(*) < 10) s""")
    assert small_countries >= 5
    statuses = {r[0] for r in wh.execute_readonly("SELECT DISTINCT status FROM demo.tickets").rows}
    assert {"closed", "resolved", "open"} <= statuses


def test_pack_validates_against_loaded_schema(demo: dict[str, Any], warehouse: Warehouse) -> None:
    pack, problems = validate_pack(PACK.root, warehouse)
    assert pack is not None
    assert [str(p) for p in problems] == []


def test_knowledge_base_shape() -> None:
    assert len(PACK.metrics) >= 22
    assert {m.tier for m in PACK.metrics} == {1, 2, 3}
    assert sum(1 for m in PACK.metrics if m.components) >= 3
    assert len(PACK.rules) >= 13
    types = Counter(doc.front.rule_type.value for doc in PACK.rules)
    assert set(types) == {"definitional", "exclusionary", "temporal", "conditional", "privacy", "override"}
    assert types["conditional"] >= 2
    conditional_dims = {eff.applies_when.dimension for _, eff in EDGES if eff.applies_when}
    assert conditional_dims
    from_dates = [eff.from_date for _, eff in EDGES if eff.from_date]
    assert from_dates and all(DATA_START < d < DATA_END for d in from_dates)
    assert any(eff.op == "suppress" for _, eff in EDGES)
    rules_per_metric = Counter(eff.metric for _, eff in EDGES)
    assert sum(1 for n in rules_per_metric.values() if n >= 2) >= 5
    for doc in PACK.rules:
        assert 400 <= doc.word_count() <= 1000, doc.id
        for section in ("## Core rule", "## Scope", "## Exceptions", "## Rationale", "## Expected impact"):
            assert section in doc.body, (doc.id, section)


@pytest.mark.parametrize(("rule_id", "effect"), EDGES, ids=[f"{r}->{e.metric}" for r, e in EDGES])
def test_every_rule_effect_changes_an_answer(demo: dict[str, Any], warehouse: Warehouse, rule_id: str,
                                             effect: Any) -> None:
    check = verify_effect(warehouse, PACK.metric_by_id[effect.metric], rule_id, effect)
    assert check.error is None
    assert check.verified, f"{rule_id} does not change {effect.metric} on any slice"
