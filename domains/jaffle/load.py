"""Build the Jaffle Shop tables in PostgreSQL or in a DuckDB file from the shared jafgen CSVs.

One transaction: drop and recreate the schema, COPY each `raw_*.csv` into a temporary table
(schema.sql), check its row count against the published one, then build the tables the dbt
project's semantic models read (models.sql: the dbt models' SQL as PostgreSQL; on DuckDB each
statement rendered by sqlglot, money columns as DECIMAL(18,2), as exact as PostgreSQL's numeric).
The CSVs are read where they are (<data_dir>/jaffle/jaffle-data), never copied."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlglot
from psycopg import sql
from sqlalchemy import Engine
from sqlglot import exp

from dibench.core.config import Settings
from dibench.core.errors import DibenchError
from dibench.stores.duckdb_warehouse import DuckDBFile
from dibench.stores.pack_data import replacing_schema

HERE = Path(__file__).resolve().parent
# Rows of the shared seeds (jafgen 1: 2018-09-01 .. 2019-08-31), from <data_dir>/jaffle/README.md.
EXPECTED_ROWS = {"raw_customers": 927, "raw_orders": 72235, "raw_items": 107414, "raw_products": 10,
                 "raw_stores": 6, "raw_supplies": 65}


class JaffleLoadError(DibenchError):
    """The Jaffle Shop CSV folder or one of its files is missing or not the shared one."""

    hint = "give --path the jaffle-data folder holding raw_customers.csv ... raw_supplies.csv"


def _folder(path: str | Path | None) -> Path:
    folder = Path(path) if path is not None else Settings().data_dir / "jaffle" / "jaffle-data"
    missing = [t for t in EXPECTED_ROWS if not (folder / f"{t}.csv").is_file()]
    if missing:
        raise JaffleLoadError(f"Jaffle Shop data folder {folder} lacks {', '.join(f'{t}.csv' for t in missing)}")
    return folder


def _check_rows(folder: Path, table: str, rows: int) -> None:
    if rows != EXPECTED_ROWS[table]:
        raise JaffleLoadError(f"{folder / (table + '.csv')}: {rows:,} rows, expected {EXPECTED_ROWS[table]:,}: "
                              "not the shared jafgen seed")


def load(engine: Engine | DuckDBFile, schema: str, path: str | Path | None = None,
         **_ignored: Any) -> dict[str, Any]:
    """Replace `schema` with the Jaffle Shop tables built from `path` (default:
    <data_dir>/jaffle/jaffle-data), in PostgreSQL (an Engine) or a DuckDB file (a DuckDBFile).
    Returns {"tables": {csv table: rows}, "source": folder}."""
    folder = _folder(path)
    if isinstance(engine, DuckDBFile):
        return {"tables": load_duckdb(engine, schema, folder), "source": str(folder)}
    counts: dict[str, int] = {}
    with replacing_schema(engine, schema, HERE / "schema.sql") as cur:
        for table, expected in EXPECTED_ROWS.items():
            statement = sql.SQL("COPY {} FROM STDIN WITH (FORMAT csv, HEADER true)").format(sql.Identifier(table))
            with (folder / f"{table}.csv").open("rb") as f, cur.copy(statement) as copy:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)
            counts[table] = cur.rowcount
            _check_rows(folder, table, counts[table])
        cur.execute((HERE / "models.sql").read_text())
    return {"tables": counts, "source": str(folder)}


def _duckdb_statements(path: Path) -> list[exp.Expression]:
    """The statements of a PostgreSQL file that mean something on DuckDB (no index, no ANALYZE:
    a column store scans)."""
    return [t for t in sqlglot.parse(path.read_text(), read="postgres")
            if t is not None and not (isinstance(t, exp.Create) and t.kind == "INDEX") and not isinstance(t, exp.Analyze)]


def load_duckdb(target: DuckDBFile, schema: str, folder: Path) -> dict[str, int]:
    """Replace `schema` in the DuckDB file with the Jaffle Shop tables, in one transaction (the old
    schema survives a failure). Returns {csv table: rows}."""
    counts: dict[str, int] = {}
    name = exp.to_identifier(schema, quoted=True).sql(dialect="duckdb")
    with target.connect() as conn:
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            conn.execute(f"CREATE SCHEMA {name}")
            conn.execute(f"SET search_path = {exp.Literal.string(schema).sql(dialect='duckdb')}")
            for statement in _duckdb_statements(HERE / "schema.sql"):
                conn.execute(statement.sql(dialect="duckdb"))
            for table in EXPECTED_ROWS:
                source = exp.Literal.string(str(folder / f"{table}.csv")).sql(dialect="duckdb")
                conn.execute(f"COPY {table} FROM {source} (FORMAT csv, HEADER true)")
                counts[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                _check_rows(folder, table, counts[table])
            for statement in _duckdb_statements(HERE / "models.sql"):
                if isinstance(statement, exp.Alter):  # the keys, once every money column has its type
                    _money_as_decimal(conn, schema)
                conn.execute(statement.sql(dialect="duckdb"))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return counts


def _money_as_decimal(conn: Any, schema: str) -> None:
    """Every DOUBLE column of the schema (a number of cents / 100.0) as DECIMAL(18,2); once."""
    doubles = conn.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = ? "
                           "AND database_name = current_database() AND data_type = 'DOUBLE'", [schema]).fetchall()
    for table, column in doubles:
        t, c = (exp.to_identifier(n, quoted=True).sql(dialect="duckdb") for n in (table, column))
        conn.execute(f"ALTER TABLE {t} ALTER COLUMN {c} TYPE DECIMAL(18, 2)")
