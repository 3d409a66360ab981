"""Catalog step: metric nodes, metric -> table (parsed from SQL, through CTEs and subqueries; a
derived metric reads its inputs' tables; the edge lists the columns of the table the SQL reads),
metric -> metric (composites, and a derived metric's inputs) and metric -> dimension (declared
slicing)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dibench.core.keys import dimension_key, metric_key, row, table_key
from dibench.core.models import MetricSpec
from dibench.core.pack import Pack
from dibench.sqlops.dialect import parse
from dibench.sqlops.tree import columns_read, tables_read


@dataclass(frozen=True)
class CatalogPlan:
    metrics: list[dict[str, Any]]
    reads: list[dict[str, Any]]
    uses: list[dict[str, Any]]
    slices: list[dict[str, Any]]


def metric_tables(pack: Pack, m: MetricSpec) -> list[str]:
    """Tables a metric's SQL reads; a derived metric reads its inputs' tables."""
    if m.derived is not None:
        return sorted({t for mid in m.derived.inputs.values() if mid in pack.metric_by_id
                       for t in metric_tables(pack, pack.metric_by_id[mid])})
    return sorted(tables_read(parse(m.template, where=f"metric {m.id}: sql")))


def metric_columns(pack: Pack, m: MetricSpec) -> dict[str, list[str]]:
    """Per table a metric reads, the columns its SQL names: qualified ones through their alias, and
    unqualified ones when the SQL reads one table only (where they cannot belong to another)."""
    tables = metric_tables(pack, m)
    if m.derived is not None:
        return {t: [] for t in tables}
    tree = parse(m.template, where=f"metric {m.id}: sql")
    out: dict[str, set[str]] = {t: set() for t in tables}
    for t, c in columns_read(tree):
        out.setdefault(t, set()).add(c)
    if len(tables) == 1:
        out[tables[0]] |= {c.name for c in tree.find_all(exp.Column) if not c.table and c.name}
    return {t: sorted(cols) for t, cols in out.items() if t in tables}


def plan_catalog(pack: Pack) -> CatalogPlan:
    d = pack.name
    metrics, reads, uses, slices = [], [], [], []
    for m in pack.metrics:
        tables = metric_tables(pack, m)
        columns = metric_columns(pack, m)
        metrics.append(row(metric_key(d, m.id), {
            "domain": d, "id": m.id, "name": m.name, "tier": m.tier, "description": m.description,
            "formula": m.formula, "sql": m.sql, "time_column": m.time_column, "unit": m.unit,
            "derived": m.derived is not None,
            "derived_json": m.derived.model_dump_json() if m.derived is not None else None,
            "rounding": m.rounding, "params_json": json.dumps(m.params, sort_keys=True),
            "higher_is_better": m.higher_is_better, "target": m.target, "tables": tables,
            "dimensions": m.dimensions, "components": m.components,
        }))
        reads += [{"metric": metric_key(d, m.id), "table": table_key(d, t), "columns": columns.get(t, [])}
                  for t in tables]
        # Each edge once: the edge statements create what is missing, checked before the batch writes.
        uses += [{"metric": metric_key(d, m.id), "component": metric_key(d, c)} for c in dict.fromkeys(m.components)]
        slices += [{"metric": metric_key(d, m.id), "dimension": dimension_key(d, x)} for x in dict.fromkeys(m.dimensions)]
    return CatalogPlan(metrics, reads, uses, slices)
