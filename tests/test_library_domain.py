"""The library pack (a domain none of demo, berka, pagila, jaffle covers): its generator is
deterministic, its data hold the cases its rules concern, the pack validates against the loaded
schema, and every rule document asks a typed knowledge question. Real PostgreSQL, small loads:
about 5 s."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from psycopg import sql

from dibench.core.pack import load_pack
from dibench.domains.library.load import COLUMNS, LibrarySizeError, load
from dibench.ingest.validate import validate_pack
from dibench.stores.warehouse import Warehouse, admin_cursor

PACK = load_pack("library")


def _checksums(wh: Warehouse, schema: str) -> dict[str, str]:
    out = {}
    with admin_cursor(wh.admin()) as cur:
        for table, columns in COLUMNS.items():
            cur.execute(sql.SQL("SELECT md5(string_agg(x::text, '|' ORDER BY x.{})) FROM {}.{} x").format(
                sql.Identifier(columns[0]), sql.Identifier(schema), sql.Identifier(table)))
            out[table] = cur.fetchone()[0]
    return out


@pytest.fixture(scope="module")
def small(warehouse: Warehouse) -> Iterator[dict[str, Any]]:
    first = load(warehouse.admin(), "library_det_a", size=3000, seed=7)
    a = _checksums(warehouse, "library_det_a")
    load(warehouse.admin(), "library_det_a", size=3000, seed=7)
    load(warehouse.admin(), "library_det_b", size=3000, seed=8)
    yield {"report": first, "again": _checksums(warehouse, "library_det_a"), "first": a,
           "other": _checksums(warehouse, "library_det_b")}
    with admin_cursor(warehouse.admin()) as cur:
        for schema in ("library_det_a", "library_det_b"):
            cur.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def test_the_same_seed_gives_the_same_tables_and_another_seed_others(small: dict[str, Any]) -> None:
    assert small["first"] == small["again"]
    assert small["first"]["loans"] != small["other"]["loans"]
    assert small["report"]["tables"]["loans"] == 3000 and small["report"]["tables"]["branches"] == 12


@pytest.fixture(scope="module")
def full(warehouse: Warehouse) -> str:
    """The pack's own schema at its default size and seed (loaded when absent)."""
    from dibench.ingest.database import load_database
    from dibench.stores.pack_data import schema_columns

    if "loans" not in schema_columns(warehouse, PACK.schema):
        load_database(PACK, warehouse)
    return PACK.schema


def test_the_data_hold_what_the_rules_concern(full: str, warehouse: Warehouse) -> None:
    with admin_cursor(warehouse.admin()) as cur:
        cur.execute("""SELECT COUNT(*) FILTER (WHERE l.channel = 'interlibrary'),
                              COUNT(*) FILTER (WHERE m.is_staff),
                              COUNT(*) FILTER (WHERE l.returned_at > l.due_at
                                               AND l.returned_at <= l.due_at + INTERVAL '2 days'),
                              COUNT(*) FILTER (WHERE l.returned_at > l.due_at + INTERVAL '2 days')
                       FROM library.loans l JOIN library.members m USING (member_id)""")
        interlibrary, staff, in_grace, late = cur.fetchone()
        cur.execute("""SELECT COUNT(*) FROM library.fines f JOIN library.loans l USING (loan_id)
                       JOIN library.members m USING (member_id)
                       WHERE m.member_type = 'child' AND f.kind = 'overdue' AND f.assessed_at >= '2024-04-01'""")
        child_fines_after = cur.fetchone()[0]
        cur.execute("SELECT COUNT(*) FROM library.fines WHERE kind = 'lost' AND assessed_at >= '2024-10-01'")
        lost_after = cur.fetchone()[0]
    assert interlibrary > 1000 and staff > 1000 and in_grace > 3000 and late > 3000 and child_fines_after > 0
    assert lost_after > 0  # the lost-item rule of 1 October 2024 changes the fines after it


def test_a_tiny_size_is_refused(warehouse: Warehouse) -> None:
    with pytest.raises(LibrarySizeError):
        load(warehouse.admin(), "library_never", size=10)


def test_the_pack_validates_against_the_generated_schema(full: str, warehouse: Warehouse) -> None:
    pack, problems = validate_pack(PACK.root, warehouse)
    assert pack is not None and [str(p) for p in problems] == []
    assert len(PACK.metrics) == 6 and len(PACK.rules) == 6
