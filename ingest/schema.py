"""Schema step: tables, foreign-key joins and dimensions (with cardinality measured on the data).

Which columns are dimensions: exactly those a pack declares in pack.yaml `dimensions`, each
typed temporal / spatial / categorical / numeric. Cardinality is COUNT(DISTINCT column). A
dimension declared categorical on a column of fractional numbers (a price, an order total: a dbt
semantic layer declares such dimensions) is ingested as numeric, with a warning: no task slices a
metric "for the 18.02 order total".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dibench.core.errors import DibenchError
from dibench.core.keys import dimension_key, row, table_key
from dibench.core.pack import Pack
from dibench.sqlops.dialect import render
from dibench.stores.warehouse import Warehouse


@dataclass(frozen=True)
class SchemaPlan:
    tables: list[dict[str, Any]]
    joins: list[dict[str, Any]]
    dimensions: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


FRACTIONAL = ("numeric", "decimal", "real", "double", "float")  # column types whose values are amounts


def _fractional(column_type: str) -> bool:
    return str(column_type).lower().startswith(FRACTIONAL)


def _cardinality(wh: Warehouse, schema: str, table: str, column: str) -> int:
    query = exp.select(exp.func("COUNT", exp.Distinct(expressions=[exp.column(column)]))).from_(
        exp.table_(table, db=schema))
    return int(wh.execute_readonly(render(query), schema=schema).rows[0][0])


def plan_schema(pack: Pack, wh: Warehouse) -> SchemaPlan:
    schema, domain = pack.schema, pack.name
    shapes = wh.inspect_schema(schema)
    if shapes is None:
        raise DibenchError(f"schema {schema!r} of pack {domain!r} is not loaded", hint=f"dibench domain load {domain}")
    tables, joins = [], []
    labels = pack.spec.entity_labels
    for t in sorted(shapes):
        shape = shapes[t]
        tables.append(row(table_key(domain, t), {
            "domain": domain, "name": t, "schema": schema, "label": labels.get(t, t.replace("_", " ")),
            "columns": [c for c, _ in shape.columns], "column_types": [ty for _, ty in shape.columns],
            "primary_key": list(shape.primary_key),
        }))
        for fk in shape.foreign_keys:
            if fk.referred_schema not in (None, schema):
                continue
            pairs = [f"{t}.{a}={fk.referred_table}.{b}" for a, b in zip(fk.columns, fk.referred_columns)]
            joins.append({"src": table_key(domain, t), "dst": table_key(domain, fk.referred_table),
                          "columns": ",".join(pairs)})
    known = {t["props"]["name"] for t in tables}
    dims, warnings = [], []
    for d in pack.spec.dimensions:
        t, c = d.column.split(".")
        if t not in known:
            raise DibenchError(f"{pack.root}/pack.yaml: dimensions: table {t!r} not in schema {schema!r}")
        kind = d.type.value
        if kind == "categorical" and _fractional(dict(shapes[t].columns).get(c, "")):
            kind = "numeric"
            warnings.append(f"{pack.root}/pack.yaml: dimension {d.column} is declared categorical but holds "
                            f"fractional numbers: ingested as numeric (no task slices a metric by one of its values)")
        dims.append(row(dimension_key(domain, d.column), {
            "domain": domain, "column": d.column, "table": t, "name": c, "type": kind, "label": d.label,
            "cardinality": _cardinality(wh, schema, t, c),
        }, table=table_key(domain, t)))
    unique_joins = {(j["src"], j["dst"], j["columns"]): j for j in joins}  # two identical FK constraints: one edge
    return SchemaPlan(tables, [unique_joins[k] for k in sorted(unique_joins)], dims, warnings)
