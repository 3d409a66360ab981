"""Build the Jaffle Shop tables in PostgreSQL from the shared jafgen CSVs.

One transaction: drop and recreate the schema, COPY each `raw_*.csv` into a temporary table
(schema.sql), check its row count against the published one, then build the tables the dbt
project's semantic models read (models.sql: the dbt models' SQL as PostgreSQL). The CSVs are read
where they are (<data_dir>/jaffle/jaffle-data), never copied."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from psycopg import sql
from sqlalchemy import Engine

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.stores.pack_data import replacing_schema

HERE = Path(__file__).resolve().parent
# Rows of the shared seeds (jafgen 1: 2018-09-01 .. 2019-08-31), from <data_dir>/jaffle/README.md.
EXPECTED_ROWS = {"raw_customers": 927, "raw_orders": 72235, "raw_items": 107414, "raw_products": 10,
                 "raw_stores": 6, "raw_supplies": 65}


class JaffleLoadError(DibenchError):
    """The Jaffle Shop CSV folder or one of its files is missing or not the shared one."""

    hint = "give --path the jaffle-data folder holding raw_customers.csv ... raw_supplies.csv"


def load(engine: Engine, schema: str, path: str | Path | None = None, **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with the Jaffle Shop tables built from `path` (default:
    <data_dir>/jaffle/jaffle-data). Returns {"tables": {csv table: rows}, "source": folder}."""
    folder = Path(path) if path is not None else Settings().data_dir / "jaffle" / "jaffle-data"
    missing = [t for t in EXPECTED_ROWS if not (folder / f"{t}.csv").is_file()]
    if missing:
        raise JaffleLoadError(f"Jaffle Shop data folder {folder} lacks {', '.join(f'{t}.csv' for t in missing)}")
    counts: dict[str, int] = {}
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        for table, expected in EXPECTED_ROWS.items():
            statement = sql.SQL("COPY {} FROM STDIN WITH (FORMAT csv, HEADER true)").format(sql.Identifier(table))
            with (folder / f"{table}.csv").open("rb") as f, cur.copy(statement) as copy:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)
            counts[table] = cur.rowcount
            if counts[table] != expected:
                raise JaffleLoadError(f"{folder / (table + '.csv')}: {counts[table]:,} rows, expected {expected:,}: "
                                      "not the shared jafgen seed")
        cur.execute((HERE / "models.sql").read_text())
    return {"tables": counts, "source": str(folder)}
