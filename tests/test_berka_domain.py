"""The Berka domain pack: loader from the original .asc files, and its metric/rule knowledge base.

Loader tests write to their own schema (berka_loadtest), dropped afterwards. Rule tests need
the pack's own schema `berka`; it is loaded once if absent (a user's load of the complete
trans.asc is left in place: every assertion on `berka` holds for both files).
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, MetaData, Table, func, inspect, select
from sqlalchemy.schema import DropSchema

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.core.pack import load_pack
from dibench.domains.berka.asc import birth_number, yymmdd
from dibench.domains.berka.load import load
from dibench.ingest.database import load_database
from dibench.ingest.indexes import missing_indexes
from dibench.ingest.validate import validate_pack
from dibench.ingest.verify import verify_effect
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse

SCHEMA = "berka_loadtest"
SOURCE = Settings().data_dir / "berka"
PACK = load_pack("berka")
EFFECTS = [(doc.id, i, eff) for doc in PACK.rules for i, eff in enumerate(doc.front.effects or [])]
COUNTS = {"district": 77, "account": 4500, "client": 5369, "disp": 5369, "permanent_order": 6471,
          "loan": 682, "card": 892}


@pytest.fixture(scope="module")
def engine(warehouse: Warehouse) -> Iterator[Engine]:
    yield warehouse.admin()
    with warehouse.admin().begin() as conn:
        conn.execute(DropSchema(SCHEMA, cascade=True, if_exists=True))


@pytest.fixture(scope="module")
def report(engine: Engine) -> dict[str, Any]:
    return load(engine, SCHEMA, size=123, seed=7)  # size/seed belong to generated domains: ignored


@pytest.fixture(scope="module")
def berka_loaded(warehouse: Warehouse) -> Warehouse:
    if not schema_columns(warehouse, PACK.schema):
        load_database(PACK, warehouse)
    return warehouse


def table(engine: Engine, name: str) -> Table:
    return Table(name, MetaData(schema=SCHEMA), autoload_with=engine)


def counts_by(engine: Engine, name: str, column: str) -> dict[Any, int]:
    t = table(engine, name)
    with engine.connect() as conn:
        return {k: n for k, n in conn.execute(select(t.c[column], func.count()).group_by(t.c[column])).all()}


def one_row(engine: Engine, name: str, columns: list[str], **where: Any) -> tuple[Any, ...]:
    t = table(engine, name)
    query = select(*(t.c[c] for c in columns)).where(*(t.c[k] == v for k, v in where.items()))
    with engine.connect() as conn:
        return tuple(conn.execute(query).one())


def source_copy(tmp_path: Path, name: str, content: bytes | None) -> Path:
    """tmp_path holding links to the shared originals, with file `name` replaced (or left out if None)."""
    for f in SOURCE.glob("*.asc"):
        if f.name != name:
            (tmp_path / f.name).symlink_to(f)
        elif content is not None:
            (tmp_path / f.name).write_bytes(content)
    return tmp_path


# ------------------------------------------------------------------ pure conversions
def test_yymmdd_dates_and_card_timestamps() -> None:
    assert yymmdd("930101") == dt.date(1993, 1, 1)
    assert yymmdd("931107 00:00:00") == dt.date(1993, 11, 7)
    with pytest.raises(ValueError):
        yymmdd("93011")


def test_birth_number_encodes_sex() -> None:
    assert birth_number("706213") == ("706213", dt.date(1970, 12, 13), "F")
    assert birth_number("450204") == ("450204", dt.date(1945, 2, 4), "M")


# ------------------------------------------------------------------ loader
def test_row_counts_match_the_published_counts(report: dict[str, Any]) -> None:
    assert report["tables"] == {**COUNTS, "trans": 99_999}
    assert report["source"] == str(SOURCE)


def test_known_values(engine: Engine, report: dict[str, Any]) -> None:
    assert counts_by(engine, "loan", "status") == {"A": 203, "B": 31, "C": 403, "D": 45}
    assert counts_by(engine, "card", "type") == {"classic": 659, "junior": 145, "gold": 88}
    assert counts_by(engine, "disp", "type") == {"OWNER": 4500, "DISPONENT": 869}


def test_original_codes_are_kept(engine: Engine, report: dict[str, Any]) -> None:
    assert set(counts_by(engine, "trans", "type")) == {"PRIJEM", "VYDAJ", "VYBER"}
    assert counts_by(engine, "account", "frequency") == {
        "POPLATEK MESICNE": 4167, "POPLATEK TYDNE": 240, "POPLATEK PO OBRATU": 93}
    symbols = counts_by(engine, "trans", "k_symbol")
    assert {"UROK", "SLUZBY", "SANKC. UROK", "SIPO", "DUCHOD", "UVER", "POJISTNE"} <= set(symbols)
    assert "" not in symbols  # blank codes are NULL, not empty strings


def test_dates_are_real_dates(engine: Engine, report: dict[str, Any]) -> None:
    columns = schema_columns(Warehouse(engine=engine), SCHEMA)
    for name, column in [("account", "open_date"), ("trans", "trans_date"), ("loan", "grant_date"),
                         ("card", "issue_date"), ("client", "birth_date")]:
        assert columns[name][column] == "DATE", (name, column)
    # The original YYMMDD columns were `date` (and `issued` in card.asc): none survives.
    assert [(t, c) for t, cols in columns.items() for c in cols if c in ("date", "issued")] == []
    trans = table(engine, "trans")
    with engine.connect() as conn:
        span = tuple(conn.execute(select(func.min(trans.c.trans_date), func.max(trans.c.trans_date))).one())
    assert span == (dt.date(1993, 1, 1), dt.date(1994, 10, 31))
    assert one_row(engine, "client", ["birth_number", "birth_date", "gender"], client_id=1) == (
        "706213", dt.date(1970, 12, 13), "F")


def test_district_columns_have_readable_names_and_comments(engine: Engine, report: dict[str, Any]) -> None:
    described = inspect(engine).get_columns("district", schema=SCHEMA)
    assert [c["name"] for c in described][:3] == ["district_id", "district_name", "region"]
    comments = {c["name"]: c.get("comment") for c in described}
    assert comments["unemployment_1995"] == "A12: unemployment rate 1995 (percent)"
    # '?' in the original file
    assert one_row(engine, "district", ["unemployment_1995", "crimes_1995"], district_id=69) == (None, None)


def test_keys_are_declared(engine: Engine, report: dict[str, Any]) -> None:
    insp = inspect(engine)
    fks = {(t, tuple(fk["constrained_columns"]), fk["referred_table"])
           for t in insp.get_table_names(schema=SCHEMA) for fk in insp.get_foreign_keys(t, schema=SCHEMA)}
    assert fks == {
        ("account", ("district_id",), "district"), ("client", ("district_id",), "district"),
        ("disp", ("client_id",), "client"), ("disp", ("account_id",), "account"),
        ("permanent_order", ("account_id",), "account"), ("trans", ("account_id",), "account"),
        ("loan", ("account_id",), "account"), ("card", ("disp_id",), "disp"),
    }
    for name in [*COUNTS, "trans"]:
        assert insp.get_pk_constraint(name, schema=SCHEMA)["constrained_columns"], name


def test_missing_folder_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(DibenchError, match="/no/such/berka"):
        load(engine, SCHEMA, path="/no/such/berka")


def test_missing_file_is_named(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(DibenchError, match="lacks loan.asc"):
        load(engine, SCHEMA, path=source_copy(tmp_path, "loan.asc", None))


def test_truncated_file_is_named_and_the_old_schema_survives(engine: Engine, report: dict[str, Any],
                                                             tmp_path: Path) -> None:
    # account.asc is read second, so the error comes before the large trans.asc is parsed.
    lines = (SOURCE / "account.asc").read_bytes().split(b"\r\n")
    folder = source_copy(tmp_path, "account.asc", b"\r\n".join(lines[:100]) + b"\r\n")
    with pytest.raises(DibenchError, match=r"account\.asc: 99 rows, expected 4,500"):
        load(engine, SCHEMA, path=folder)
    assert sum(counts_by(engine, "account", "frequency").values()) == 4500  # rolled back


def test_wrong_header_is_named(engine: Engine, tmp_path: Path) -> None:
    renamed = (SOURCE / "district.asc").read_bytes().replace(b"A1;", b"B1;", 1)
    with pytest.raises(DibenchError, match=r"district\.asc: header"):
        load(engine, SCHEMA, path=source_copy(tmp_path, "district.asc", renamed))


# ------------------------------------------------------------------ knowledge base
def test_pack_shape() -> None:
    assert len(PACK.metrics) == 29
    assert {m.tier for m in PACK.metrics} == {1, 2, 3}
    assert sum(1 for m in PACK.metrics if m.components) >= 3
    assert len(PACK.rules) == 17
    assert set(Counter(r.front.rule_type.value for r in PACK.rules)) == {
        "definitional", "exclusionary", "temporal", "conditional", "privacy", "override"}
    lengths = {r.id: r.word_count() for r in PACK.rules}
    assert all(600 <= n <= 1000 for n in lengths.values()), lengths


def test_every_metric_is_modified_by_some_rule() -> None:
    assert {m.id for m in PACK.metrics} == {eff.metric for _, _, eff in EFFECTS}


def test_validate_passes(berka_loaded: Warehouse) -> None:
    pack, problems = validate_pack(PACK.root, berka_loaded)
    assert pack is not None
    assert [str(p) for p in problems] == []


@pytest.mark.parametrize(("rule_id", "index", "eff"), EFFECTS,
                         ids=[f"{r}-{i}-{e.metric}" for r, i, e in EFFECTS])
def test_every_rule_effect_changes_an_answer(berka_loaded: Warehouse, rule_id: str, index: int, eff: Any) -> None:
    check = verify_effect(berka_loaded, PACK.metric_by_id[eff.metric], rule_id, eff)
    assert check.error is None
    assert check.verified, f"{rule_id} effect {index} does not change {eff.metric}"


def test_the_loader_indexes_what_the_metrics_filter_on(berka_loaded: Warehouse) -> None:
    # trans is the one table above MIN_ROWS: its date, and each of its dimensions with the date
    assert [n.line(PACK.schema) for n in missing_indexes(PACK, berka_loaded)] == []
