"""Index advice: the time and dimension columns a pack's metrics filter on that no index of the
warehouse leads with, on tables of at least MIN_ROWS rows, each with the CREATE INDEX a user could
run (a dimension column on the table a metric windows on, together with that time column).
dibench never creates an index in a warehouse it does not load.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from dibench.core.pack import Pack
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.tree import alias_tables
from dibench.stores.warehouse import Warehouse

MIN_ROWS = 10_000

# Every table of the schema with its row estimate (the planner's, else the live rows the
# statistics collector counted: a table loaded and not yet analysed has no planner estimate) and
# the first key column of each valid index (NULL for a table without one). `indkey` is an int2vector, subscripted from 0; an expression
# index has 0 there and joins no attribute.
CATALOG_SQL = (
    "SELECT c.relname AS table_name, "
    "CASE WHEN c.reltuples >= 0 THEN c.reltuples ELSE COALESCE(s.n_live_tup, -1) END AS row_estimate, "
    "a.attname AS leading_column "
    "FROM pg_catalog.pg_class AS c "
    "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_catalog.pg_stat_all_tables AS s ON s.relid = c.oid "
    "LEFT JOIN pg_catalog.pg_index AS i ON i.indrelid = c.oid AND i.indisvalid "
    "LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] "
    "WHERE n.nspname = :schema AND c.relkind IN ('r', 'p', 'm')"
)


@dataclass(frozen=True)
class IndexNeed:
    """A column that some metrics filter on, and the index that would serve them."""

    table: str
    column: str
    kind: Literal["time", "dimension"]
    metrics: tuple[str, ...]
    index_columns: tuple[str, ...]  # `column` first

    def create_sql(self, schema: str) -> str:
        index = exp.Index(table=exp.table_(self.table, db=schema, quoted=None),
                          params=exp.IndexParameters(columns=[exp.Ordered(this=exp.column(c))
                                                              for c in self.index_columns]))
        return render(exp.Create(this=index, kind="INDEX")) + ";"

    def line(self, schema: str) -> str:
        used = ", ".join(self.metrics[:3]) + (f" and {len(self.metrics) - 3} more" if len(self.metrics) > 3 else "")
        return (f"no index on {self.table}.{self.column} ({self.kind} column of {used}): "
                f"{self.create_sql(schema)}")


@dataclass(frozen=True)
class Catalog:
    leading: dict[str, frozenset[str]]  # table -> first key columns of its valid indexes
    rows: dict[str, float]  # table -> row estimate (-1: never analysed)


def needed_indexes(pack: Pack) -> list[IndexNeed]:
    """Every (table, column) the pack's metrics window on (time) or slice by (dimension), with
    the metrics that do; a pure function of the pack."""
    users: dict[tuple[str, str, str], set[str]] = {}
    for m in pack.metrics:
        if m.derived is not None or m.template is None:
            continue  # reads what its inputs read
        tables = alias_tables(parse(m.template, where=f"metric {m.id}: sql"))
        if m.time_column and "." in m.time_column:
            alias, col = m.time_column.split(".", 1)
            if alias in tables:
                users.setdefault((tables[alias], col, "time"), set()).add(m.id)
        for dim in m.dimensions:
            table, col = dim.split(".", 1)
            users.setdefault((table, col, "dimension"), set()).add(m.id)
    # table -> the time column most of its metrics window on (ties: the first by name)
    time_of: dict[str, str] = {}
    for (table, col, kind), metrics in sorted(users.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if kind == "time":
            time_of.setdefault(table, col)
    needs = []
    for (table, col, kind), metrics in sorted(users.items()):
        if kind == "dimension" and (table, col, "time") in users:
            continue  # a temporal dimension: its time need covers it
        time_col = time_of.get(table)
        extra = (time_col,) if kind == "dimension" and time_col and time_col != col else ()
        needs.append(IndexNeed(table, col, "time" if kind == "time" else "dimension", tuple(sorted(metrics)),
                               (col, *extra)))
    return needs


def read_catalog(wh: Warehouse, schema: str) -> Catalog:
    """The schema's tables, row estimates and leading index columns, from pg_catalog."""
    res = wh.execute_readonly(CATALOG_SQL, {"schema": schema}, schema=schema)
    leading: dict[str, set[str]] = {}
    rows: dict[str, float] = {}
    for table, estimate, col in res.rows:
        rows[table] = float(estimate)
        cols = leading.setdefault(table, set())
        if col is not None:
            cols.add(col)
    return Catalog({t: frozenset(c) for t, c in leading.items()}, rows)


@dataclass(frozen=True)
class SkippedTable:
    """A table too small for index advice, with the filter columns that no index serves on it."""

    table: str
    rows: float
    unserved: tuple[str, ...]
    min_rows: float

    def line(self) -> str:
        return (f"not checked for indexes: {self.table} ({self.rows:,.0f} rows, under {self.min_rows:,.0f}, where a "
                f"scan is cheap); no index leads with {', '.join(self.unserved)}")


def index_review(pack: Pack, wh: Warehouse, *, min_rows: float | None = None) -> tuple[list[IndexNeed],
                                                                                       list[SkippedTable]]:
    """The needs no index serves on tables of at least `min_rows` rows (default MIN_ROWS; a table
    never analysed counts as large), and the smaller tables with unserved needs, which are
    skipped; tables that do not exist are `domain check`'s other report."""
    if not wh.advises_indexes:  # an engine without secondary indexes to propose (DuckDB scans columns)
        return [], []
    min_rows = MIN_ROWS if min_rows is None else min_rows
    cat = read_catalog(wh, pack.schema)
    unserved = [n for n in needed_indexes(pack) if n.table in cat.rows and n.column not in cat.leading[n.table]]
    large = [n for n in unserved if cat.rows[n.table] < 0 or cat.rows[n.table] >= min_rows]
    small: dict[str, list[str]] = {}
    for n in unserved:
        if n not in large:
            small.setdefault(n.table, []).append(n.column)
    return large, [SkippedTable(t, cat.rows[t], tuple(cols), min_rows) for t, cols in sorted(small.items())]


def missing_indexes(pack: Pack, wh: Warehouse, *, min_rows: float | None = None) -> list[IndexNeed]:
    """The needs no index serves, on tables of at least `min_rows` rows (see `index_review`)."""
    return index_review(pack, wh, min_rows=min_rows)[0]
