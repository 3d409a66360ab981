"""Load the original PKDD'99 Berka `.asc` files into a clean Postgres schema.

One transaction: drop and recreate the schema, create the tables (schema.sql), COPY every
file, check its row count against the published count, then add keys and indexes
(constraints.sql). Any failure rolls the whole load back, so a previously loaded schema
survives a bad path or a truncated file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.domains.berka.asc import FILES, FileSpec, read_rows
from dibench.stores.pack_data import replacing_schema

HERE = Path(__file__).resolve().parent


class BerkaLoadError(DibenchError):
    """The Berka source folder or one of its files is missing or not the original."""

    hint = "give --path the folder holding the PKDD'99 files account.asc ... trans.asc"


def source_files(path: Path) -> dict[str, Path]:
    """{table: file} for the eight files, after checking they all exist."""
    if not path.is_dir():
        raise BerkaLoadError(f"Berka data folder {path} does not exist or is not a folder")
    missing = [spec.file for spec in FILES if not (path / spec.file).is_file()]
    if missing:
        raise BerkaLoadError(f"Berka data folder {path} lacks {', '.join(missing)}")
    return {spec.table: path / spec.file for spec in FILES}


def _copy(cur: psycopg.Cursor[Any], spec: FileSpec, file: Path) -> int:
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(spec.table), sql.SQL(", ").join(sql.Identifier(c) for c in spec.columns))
    n = 0
    with cur.copy(statement) as copy:
        for row in read_rows(file, spec):
            copy.write_row(row)
            n += 1
    if n not in spec.counts:
        expected = " or ".join(f"{c:,}" for c in sorted(spec.counts))
        raise BerkaLoadError(f"{file}: {n:,} rows, expected {expected}: not the original PKDD'99 file")
    return n


def load(engine: Engine, schema: str, path: str | Path | None = None, **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with the Berka tables read from `path` (default: <data_dir>/berka).

    `size` and `seed` (options of generated domains) are accepted and ignored. Returns
    {"tables": {table: rows}, "source": folder}.
    """
    folder = Path(path) if path is not None else Settings().data_dir / "berka"
    files = source_files(folder)
    counts: dict[str, int] = {}
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        for spec in FILES:
            counts[spec.table] = _copy(cur, spec, files[spec.table])
        try:
            cur.execute((HERE / "constraints.sql").read_text())
        except psycopg.errors.IntegrityError as exc:  # duplicate ids or dangling references
            raise BerkaLoadError(f"Berka files in {folder} break a key: {exc.diag.message_primary}") from exc
    return {"tables": counts, "source": str(folder)}
