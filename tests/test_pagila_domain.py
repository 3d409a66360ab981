"""The Pagila domain pack: loader from the pg_dump files, and its metric/rule knowledge base.

Loader tests write to their own schema (pagila_loadtest), dropped afterwards. Rule tests need
the pack's own schema `pagila`; it is loaded once if absent (reloading it would drop it under
concurrent users of the server).
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.core.pack import load_pack
from dibench.domains.pagila.load import load, strip_owner_statements, table_counts
from dibench.ingest.database import load_database
from dibench.ingest.indexes import missing_indexes
from dibench.ingest.validate import validate_pack
from dibench.ingest.verify import verify_effect
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.ops import Bound, apply_effect
from dibench.stores.pack_data import schema_columns, metric_window
from dibench.stores.warehouse import Warehouse, get_warehouse

SCHEMA = "pagila_loadtest"
SOURCE = Settings().data_dir / "pagila"
PACK = load_pack("pagila")
EFFECTS = [(doc.id, i, eff) for doc in PACK.rules for i, eff in enumerate(doc.front.effects or [])]
KNOWN = {"rental": 16_044, "payment": 16_049, "film": 1_000, "customer": 599, "inventory": 4_581}


@pytest.fixture(scope="module")
def wh() -> Warehouse:
    return get_warehouse()


@pytest.fixture(scope="module")
def engine(wh: Warehouse) -> Iterator[Engine]:
    yield wh.admin()
    with wh.admin().begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def public_tables(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())


@pytest.fixture(scope="module")
def report(engine: Engine) -> dict:
    before = public_tables(engine)
    out = load(engine, SCHEMA, size=123, seed=7)  # size/seed belong to generated domains: ignored
    assert public_tables(engine) == before, "the loader must not touch schema public"
    return out


@pytest.fixture(scope="module")
def pagila_loaded(wh: Warehouse) -> Warehouse:
    if not {"rental", "payment", "film"} <= set(schema_columns(wh, PACK.schema)):
        load_database(PACK, wh)
    return wh


# ------------------------------------------------------------------ dump handling
def test_owner_lines_are_dropped_but_copy_rows_are_kept() -> None:
    dump = (b"CREATE TABLE public.t (x text);\n"
            b"ALTER TABLE public.t OWNER TO postgres;\n"
            b"COPY public.t (x) FROM stdin;\n"
            b"ALTER TABLE public.t OWNER TO postgres;\n"
            b"\\.\n"
            b"ALTER FUNCTION public.f(integer, text) OWNER TO postgres;\n")
    assert strip_owner_statements(dump).split(b"\n") == [
        b"CREATE TABLE public.t (x text);",
        b"COPY public.t (x) FROM stdin;",
        b"ALTER TABLE public.t OWNER TO postgres;",  # a data row that looks like DDL stays
        b"\\.",
        b"",
    ]


def test_public_is_refused(engine: Engine) -> None:
    with pytest.raises(DibenchError, match="not public"):
        load(engine, "public")


def test_missing_folder_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(DibenchError, match="/no/such/pagila/pagila-schema.sql"):
        load(engine, SCHEMA, path="/no/such/pagila")


# ------------------------------------------------------------------ loader
def test_row_counts_match_the_published_counts(report: dict) -> None:
    assert {t: report["tables"][t] for t in KNOWN} == KNOWN
    assert report["tables"]["film_category"] == 2_367  # this release tags films with 1-3 categories


def test_objects_land_in_the_target_schema(engine: Engine, report: dict) -> None:
    with engine.connect() as conn:
        partitions = conn.execute(text(
            "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind = 'r'"),
            {"s": SCHEMA}).scalar_one()
        types = set(conn.execute(text(
            "SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
            "WHERE n.nspname = :s AND t.typname IN ('mpaa_rating', 'year')"), {"s": SCHEMA}).scalars())
        functions = set(conn.execute(text(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s"),
            {"s": SCHEMA}).scalars())
        default = conn.execute(text(
            "SELECT column_default FROM information_schema.columns "
            "WHERE table_schema = :s AND table_name = 'rental' AND column_name = 'rental_id'"),
            {"s": SCHEMA}).scalar_one()
    assert partitions == 7  # payment_p2022_01 .. payment_p2022_07
    assert types == {"mpaa_rating", "year"}
    assert {"last_updated", "inventory_in_stock", "get_customer_balance"} <= functions
    assert default == f"nextval('{SCHEMA}.rental_rental_id_seq'::regclass)"


def test_reload_is_idempotent(engine: Engine, report: dict) -> None:
    assert load(engine, SCHEMA) == report
    assert table_counts(engine, SCHEMA) == report["tables"]


def test_incomplete_release_is_refused_and_the_old_schema_survives(engine: Engine, report: dict,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "pagila-schema.sql").symlink_to(SOURCE / "pagila-schema.sql")
    lines = (SOURCE / "pagila-data.sql").read_bytes().split(b"\n")
    start = lines.index(b"COPY public.film_category (film_id, category_id, last_update) FROM stdin;")
    (tmp_path / "pagila-data.sql").write_bytes(b"\n".join(lines[:start + 1] + lines[start + 2:]))
    with pytest.raises(DibenchError, match="film_category: 2366 rows, expected 2367"):
        load(engine, SCHEMA, path=tmp_path)
    assert table_counts(engine, SCHEMA) == report["tables"]


def test_pack_schema_is_loaded_outside_public(pagila_loaded: Warehouse) -> None:
    columns = schema_columns(pagila_loaded, PACK.schema)
    assert {"rental", "payment", "film", "customer", "inventory", "category"} <= set(columns)
    assert {t: n for t, n in table_counts(pagila_loaded.admin(), PACK.schema).items() if t in KNOWN} == KNOWN
    assert "rental" not in public_tables(pagila_loaded.admin())


# ------------------------------------------------------------------ knowledge base
def test_pack_shape() -> None:
    assert len(PACK.metrics) >= 22
    assert {m.tier for m in PACK.metrics} == {1, 2, 3}
    assert sum(1 for m in PACK.metrics if m.components) >= 3
    assert len(PACK.rules) >= 13
    assert set(Counter(r.front.rule_type.value for r in PACK.rules)) == {
        "definitional", "exclusionary", "temporal", "conditional", "privacy", "override"}
    lengths = {r.id: r.word_count() for r in PACK.rules}
    assert all(400 <= n <= 1000 for n in lengths.values()), lengths


def test_validate_passes(pagila_loaded: Warehouse) -> None:
    pack, problems = validate_pack(PACK.root, pagila_loaded)
    assert pack is not None
    assert [str(p) for p in problems] == []


def test_temporal_rules_start_inside_the_data(pagila_loaded: Warehouse) -> None:
    dated = [(rule_id, eff) for rule_id, _, eff in EFFECTS if eff.from_date is not None]
    assert dated
    for rule_id, eff in dated:
        lo, hi = metric_window(pagila_loaded, PACK.metric_by_id[eff.metric])
        assert lo < eff.from_date < hi, (rule_id, eff.metric, lo, hi)


@pytest.mark.parametrize(("rule_id", "index", "eff"), EFFECTS,
                         ids=[f"{r}-{i}-{e.metric}" for r, i, e in EFFECTS])
def test_every_rule_effect_changes_an_answer(pagila_loaded: Warehouse, rule_id: str, index: int, eff) -> None:
    check = verify_effect(pagila_loaded, PACK.metric_by_id[eff.metric], rule_id, eff)
    assert check.error is None
    assert check.verified, f"{rule_id} effect {index} does not change {eff.metric}"


def test_the_grace_period_rule_moves_the_late_return_rate(pagila_loaded: Warehouse) -> None:
    """A known value: the 24-hour grace period takes the late return rate from 51.20% to 40.36%."""
    metric = PACK.metric_by_id["PG-LAT-001"]
    eff = next(e for e in PACK.rule("RULE-LATE-GRACE").front.effects or [] if e.metric == metric.id)
    params = {"start_date": dt.date(2022, 1, 1), "end_date": dt.date(2023, 1, 1), **metric.params}
    gold = apply_effect(Bound(parse(metric.sql)), eff, metric, "RULE-LATE-GRACE")
    base_value = pagila_loaded.execute_readonly(metric.sql, params).rows[0][0]
    gold_value = pagila_loaded.execute_readonly(render(gold.tree), {**params, **gold.params}).rows[0][0]
    assert (round(base_value, 2), round(gold_value, 2)) == (51.20, 40.36)


def test_the_loader_indexes_what_the_metrics_filter_on(pagila_loaded: Warehouse) -> None:
    # rental and payment are the tables above MIN_ROWS; the dump indexes rental_date, the loader payment_date
    assert [n.line(PACK.schema) for n in missing_indexes(PACK, pagila_loaded)] == []
