"""`dibench domain check NAME`: what a pack finds in the warehouse it reads, before any ingest.

For a data team's own warehouse (a pack without a loader, possibly on its own database): per
table the pack needs, whether it exists, its row count (through the read-only path), the
columns its metric templates, rule effects and declared dimensions need, and which of them are
missing, and the time and dimension columns the metrics filter on that no index serves, each
with the CREATE INDEX that would (ingest/indexes.py). Plus the pack's warnings (e.g. short rule
documents). The database is named by the environment variable that holds its URL, never by the URL.
"""
from __future__ import annotations

from typing import Any

from dibench.core.pack import Pack
from dibench.ingest.indexes import index_review
from dibench.stores.fingerprint import Fingerprinter, pack_columns
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse


def needed_columns(pack: Pack) -> dict[str, set[str]]:
    """{table: columns} the pack's metrics, effects and every declared dimension read."""
    out = pack_columns(pack)
    for d in pack.spec.dimensions:
        table, col = d.column.split(".", 1)
        out.setdefault(table, set()).add(col)
    return out


def rules_without_effects(pack: Pack) -> list[dict[str, Any]]:
    """The rule documents in force that state no effects (with no LLM, none are extracted), each
    with the metrics it concerns: their policy is unknown, so generation makes no task of them
    until the document states its effects (or `effects: []`, that it changes no computation)."""
    from dibench.ingest.rules import mentioned_metrics, needs_extraction

    return [{"rule": doc.id, "metrics": mentioned_metrics(doc, pack)} for doc in pack.rules if needs_extraction(doc)]


def check_domain(pack: Pack, wh: Warehouse) -> dict[str, Any]:
    present = schema_columns(wh, pack.schema)
    rows = Fingerprinter(wh, pack.schema)
    tables: list[dict[str, Any]] = []
    missing = 0
    for table, cols in sorted(needed_columns(pack).items()):
        exists = table in present
        gone = sorted(cols - set(present.get(table, {})))
        missing += len(gone)
        tables.append({"table": table, "exists": exists, "rows": rows.table(table, [])["rows"] if exists else None,
                       "needed": sorted(cols), "missing": gone})
    needs, skipped = index_review(pack, wh) if present else ([], [])
    return {
        "domain": pack.name, "schema": pack.schema, "schema_exists": bool(present),
        "loader": pack.spec.loader.entry if pack.spec.loader else None,
        "database": f"from ${pack.spec.database_env}" if pack.spec.database_env else "DIBENCH_DATABASE_URL",
        "engine": wh.display_name, "index_advice": wh.advises_indexes,
        "tables": tables, "missing": missing, "warnings": list(pack.warnings),
        "rules_without_effects": rules_without_effects(pack),
        "indexes": [{"table": n.table, "column": n.column, "kind": n.kind, "metrics": list(n.metrics),
                     "create": n.create_sql(pack.schema), "advice": n.line(pack.schema)}
                    for n in needs],
        "indexes_skipped": [{"table": t.table, "rows": t.rows, "unserved": list(t.unserved), "reason": t.line()}
                            for t in skipped],
    }
