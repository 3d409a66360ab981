"""Routing comparators, the read-only SQLite executor and the SQL-tree helpers (real Spider files)."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from dibench.core.config import get_settings
from dibench.routing.compare import CompareConfig, canonical_value, fingerprint, results_match, round_half_up
from dibench.routing.errors import UnitSQLError
from dibench.routing.intents import BOUND_PHRASE, render_intent
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.sqltree import (
    filter_literals, has_order_by, normalise_quoted, parameterise, parse_select, placeholders, render, schema_problems,
)


@pytest.fixture(scope="module")
def singer_db() -> Path:
    return get_settings().data_dir / "spider" / "database" / "concert_singer" / "concert_singer.sqlite"


def test_round_half_up_not_bankers() -> None:
    assert round_half_up(2.675, 2) == Decimal("2.68")  # float 2.675 is 2.67499..., taken as written
    assert round_half_up(0.125, 2) == Decimal("0.13")
    assert round_half_up(-1.005, 2) == Decimal("-1.01")
    assert canonical_value(3) == canonical_value(3.0) == canonical_value(3.001)
    assert canonical_value(3.006) != canonical_value(3.0)


def test_exact_when_rounding_is_off() -> None:
    assert canonical_value(3.001, None) != canonical_value(3, None)
    assert results_match([(1.5,)], [(1.5,)], CompareConfig(ordered=False, decimals=None))


def test_ordered_versus_multiset() -> None:
    gold = [("a", 1), ("b", 2), ("b", 2)]
    shuffled = [("b", 2), ("a", 1), ("b", 2)]
    assert results_match(gold, shuffled, CompareConfig(ordered=False))
    assert not results_match(gold, shuffled, CompareConfig(ordered=True))
    # multiset, not set: a missing duplicate is a mismatch
    assert not results_match(gold, [("a", 1), ("b", 2)], CompareConfig(ordered=False))
    assert fingerprint(gold, CompareConfig(False)) == fingerprint(shuffled, CompareConfig(False))
    assert fingerprint(gold, CompareConfig(True)) != fingerprint(shuffled, CompareConfig(True))


def test_order_by_decides_the_comparator() -> None:
    assert has_order_by(parse_select("SELECT name FROM singer ORDER BY age"))
    assert not has_order_by(parse_select("SELECT name FROM singer WHERE age IN (SELECT age FROM singer ORDER BY age)"))


@pytest.mark.parametrize("sql,kind", [
    ("DELETE FROM singer", "not-select"),
    ("PRAGMA table_info(singer)", "not-select"),
    ("SELECT 1; SELECT 2", "multi-statement"),
    ("ATTACH DATABASE 'x.db' AS x", "not-select"),
    ("SELEC name FROM", "unparseable"),
])
def test_executor_refuses_anything_but_one_query(singer_db: Path, sql: str, kind: str) -> None:
    with SqliteExecutor() as ex, pytest.raises(UnitSQLError) as err:
        ex.run(singer_db, sql)
    assert err.value.kind == kind


def test_executor_reads_and_times_out(singer_db: Path) -> None:
    with SqliteExecutor(timeout_s=0.2) as ex:
        res = ex.run(singer_db, "SELECT count(*) FROM singer")
        assert res.rows == [(6,)]
        with pytest.raises(UnitSQLError) as err:
            ex.run(singer_db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n")
        assert err.value.kind == "timeout"


def test_double_quoted_strings_become_literals_like_sqlite_reads_them() -> None:
    schema = {"singer": {"name", "country", "age"}}
    tree = normalise_quoted(parse_select('SELECT name FROM singer WHERE country = "France" AND "age" > 20'), schema)
    assert render(tree) == "SELECT name FROM singer WHERE country = 'France' AND \"age\" > 20"
    lits = filter_literals(tree)
    assert [(lit.table, lit.column, lit.value) for lit in lits] == [("singer", "country", "France")]
    bound = parameterise(tree, lits[0].index, "bound_value")
    assert placeholders(bound) == {"bound_value"}
    assert "France" not in render(bound)
    assert BOUND_PHRASE in render_intent(bound)


def test_schema_problems_name_unknown_tables_and_columns() -> None:
    schema = {"singer": {"name", "country", "age"}, "concert": {"concert_id", "year"}}
    tree = parse_select("SELECT T1.name, T2.budget FROM singer AS T1 JOIN concert AS T2 ON T1.age = T2.year "
                        "JOIN stadium AS T3 ON T3.id = T2.concert_id")
    kinds = {(p.kind, p.name) for p in schema_problems(tree, schema)}
    assert kinds == {("unknown-table", "stadium"), ("unknown-column", "concert.budget")}
