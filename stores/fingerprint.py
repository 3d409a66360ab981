"""Data fingerprints: per table, the row count and a checksum of the columns the metrics read.

The checksum is `SUM(hashtextextended(ROW(cols)::text, 0))`, one sequential scan through the
read-only path: a checksum of the multiset of rows as the metric SQL sees them, so an update of a
column no metric reads is not a change. Stored as JSON text on Run and Task nodes:
`{"schema": s, "tables": {table: {"columns": [...], "rows": n, "checksum": "..."}}}`.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sqlglot import exp

from dibench.core.errors import RewriteError
from dibench.core.pack import Pack
from dibench.sqlops.dialect import parse, parse_expression, render
from dibench.sqlops.tree import alias_tables, columns_read, tables_read
from dibench.stores.warehouse import Warehouse

Fingerprint = dict[str, Any]
Reads = dict[str, frozenset[str]]
# The sum is cast to text in SQL: the read-only path turns numerics into floats, which would round it.
TEMPLATE = ("SELECT COUNT(*) AS n_rows, CAST(COALESCE(SUM(HASHTEXTEXTENDED(CAST(ROW(f.c) AS TEXT), 0)), 0) AS TEXT) "
            "AS checksum FROM s.t AS f")
EFFECT_FIELDS = ("predicate", "weight", "expression", "count")


# ------------------------------------------------------------------------------ what is read
def pack_columns(pack: Pack) -> dict[str, set[str]]:
    """{table: columns} every metric template, rule effect and declared dimension of `pack` reads."""
    out: dict[str, set[str]] = {}
    for m in pack.metrics:
        if m.derived is not None:
            continue  # reads what its inputs read
        tree = parse(m.template, where=f"metric {m.id}: sql")
        aliases = alias_tables(tree)
        for table, col in columns_read(tree):
            out.setdefault(table, set()).add(col)
        for doc in pack.rules:
            for eff in doc.front.effects or []:
                if eff.metric != m.id:
                    continue
                for name in EFFECT_FIELDS:
                    text = getattr(eff, name, None)
                    if isinstance(text, str):
                        for c in parse_expression(text, where=f"rule {doc.id}: {name}").find_all(exp.Column):
                            if c.table in aliases:
                                out.setdefault(aliases[c.table], set()).add(c.name)
    for d in pack.spec.dimensions:
        table, col = d.column.split(".", 1)
        if table in out:
            out[table].add(col)
    return out


def sql_reads(sqls: Iterable[str | None]) -> Reads | None:
    """{table: columns} the given queries read; None when a column cannot be tied to a table
    (an unqualified column that is not an output alias): then no fingerprint can vouch for it."""
    out: dict[str, set[str]] = {}
    for sql in sqls:
        if not sql:
            continue
        reads = _one_sql_reads(sql)
        if reads is None:
            return None
        for table, cols in reads.items():
            out.setdefault(table, set()).update(cols)
    return {t: frozenset(c) for t, c in out.items()}


@lru_cache(maxsize=4096)
def _one_sql_reads(sql: str) -> Reads | None:
    # Cached: a rule task's variants and many tasks of one skeleton share their SQL, and
    # parsing dominates a check in which every table kept its fingerprint.
    tree = parse(sql, where="stored SQL")
    outputs = {a.alias for a in tree.find_all(exp.Alias)}
    if any(not c.table and c.name not in outputs for c in tree.find_all(exp.Column)):
        return None
    out: dict[str, set[str]] = {t: set() for t in tables_read(tree)}
    for table, col in columns_read(tree):
        out.setdefault(table, set()).add(col)
    return {t: frozenset(c) for t, c in out.items()}


# ------------------------------------------------------------------------------ the query
def fingerprint_sql(schema: str, table: str, columns: Iterable[str]) -> str:
    """The checksum query of one table over `columns` (identifiers quoted on the tree; no column:
    the row count alone, for a table read only by COUNT(*)). Pure."""
    cols = sorted(set(columns))
    tree = parse(TEMPLATE, where="fingerprint")
    src = tree.find(exp.Table)
    row = next(a for a in tree.find_all(exp.Anonymous) if a.name.upper() == "ROW")
    if src is None:
        raise RewriteError(f"fingerprint of {schema}.{table}: malformed template")
    src.set("this", exp.to_identifier(table, quoted=True))
    src.set("db", exp.to_identifier(schema, quoted=True))
    row.set("expressions", [exp.column(c, table="f", quoted=True) for c in cols])
    return str(render(tree))


@dataclass
class Fingerprinter:
    """Computes table fingerprints through the read-only path, each (table, columns) once."""

    wh: Warehouse
    schema: str
    cache: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = field(default_factory=dict)
    queries: int = 0
    seconds: float = 0.0

    def table(self, table: str, columns: Iterable[str]) -> dict[str, Any]:
        cols = tuple(sorted(set(columns)))
        if (table, cols) not in self.cache:
            res = self.wh.execute_readonly(fingerprint_sql(self.schema, table, cols), schema=self.schema)
            n, checksum = res.rows[0]
            self.queries += 1
            self.seconds += res.elapsed_s
            self.cache[(table, cols)] = {"columns": list(cols), "rows": int(n), "checksum": str(checksum)}
        return self.cache[(table, cols)]

    def of(self, columns: Mapping[str, Iterable[str]]) -> Fingerprint:
        return {"schema": self.schema,
                "tables": {t: self.table(t, cols) for t, cols in sorted(columns.items())}}


def pack_fingerprint(wh: Warehouse, pack: Pack) -> Fingerprint:
    """The fingerprint of every table the pack's metrics read (recorded on each generation Run)."""
    return Fingerprinter(wh, pack.schema).of(pack_columns(pack))


def dumps(fp: Fingerprint | None) -> str | None:
    return json.dumps(fp, sort_keys=True) if fp is not None else None


def loads(text: str | None) -> Fingerprint | None:
    return json.loads(text) if text else None


# ------------------------------------------------------------------------------ comparing
def covers(stored: Fingerprint | None, reads: Reads | None, schema: str) -> bool:
    """Whether `stored` has an entry for every table of `reads` with at least the columns read."""
    if stored is None or reads is None or stored.get("schema") != schema:
        return False
    tables = stored.get("tables") or {}
    return all(t in tables and cols <= set(tables[t]["columns"]) for t, cols in reads.items())


def changed_tables(stored: Fingerprint, reads: Reads, fp: Fingerprinter) -> list[str]:
    """Tables of `reads` whose data (over the columns `stored` recorded) differs now."""
    out = []
    for t in sorted(reads):
        entry = stored["tables"][t]
        now = fp.table(t, entry["columns"])
        if (now["rows"], now["checksum"]) != (entry["rows"], entry["checksum"]):
            out.append(t)
    return out


def refreshed(stored: Fingerprint | None, reads: Reads | None, fp: Fingerprinter) -> Fingerprint | None:
    """The current fingerprint over the columns `stored` recorded plus those `reads` needs."""
    cols: dict[str, set[str]] = {t: set(e["columns"]) for t, e in ((stored or {}).get("tables") or {}).items()}
    for t, c in (reads or {}).items():
        cols.setdefault(t, set()).update(c)
    return fp.of(cols) if cols else None
