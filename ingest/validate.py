"""`dibench domain validate`: every problem of a pack, one line each, with file and field."""
from __future__ import annotations

from pathlib import Path

from sqlglot import exp

from ingest.database import schema_columns
from ingest.pack import Pack, _rel, load_pack
from service.errors import DibenchError, PackError, PackErrors
from service.warehouse import Warehouse, check_readonly
from sqlops.dialect import parse, parse_expression, placeholders
from sqlops.tree import columns_read, tables_read, value_projection


def _metric_problems(pack: Pack, columns: dict[str, dict[str, str]]) -> list[PackError]:
    file = _rel(pack.root / pack.spec.metrics)
    dims = {d.column for d in pack.spec.dimensions}
    out: list[PackError] = []
    ids = set(pack.metric_by_id)
    for i, m in enumerate(pack.metrics):
        at = f"metrics.{i}({m.id})"
        try:
            tree = check_readonly(m.sql)
        except DibenchError as exc:
            out.append(PackError(file, f"{at}.sql", f"not a single SELECT: {exc}"))
            continue
        try:
            value_projection(parse(m.sql))
        except DibenchError as exc:
            out.append(PackError(file, f"{at}.sql", str(exc)))
        holes = placeholders(tree)
        for need in ("start_date", "end_date"):
            if need not in holes:
                out.append(PackError(file, f"{at}.sql", f"missing placeholder :{need}"))
        for h in sorted(holes - {"start_date", "end_date"} - set(m.params)):
            out.append(PackError(file, f"{at}.sql", f"placeholder :{h} has no default in params"))
        for c in m.components:
            if c not in ids:
                out.append(PackError(file, f"{at}.components", f"unknown metric {c!r}"))
        for d in m.dimensions:
            if d not in dims:
                out.append(PackError(file, f"{at}.dimensions", f"{d!r} is not declared in pack.yaml dimensions"))
        if columns:
            for t in sorted(tables_read(tree)):
                if t not in columns:
                    out.append(PackError(file, f"{at}.sql", f"table {t!r} does not exist in schema {pack.schema!r}"))
            for t, c in sorted(columns_read(tree)):
                if t in columns and c not in columns[t]:
                    out.append(PackError(file, f"{at}.sql", f"column {t}.{c} does not exist"))
    return out


def _rule_problems(pack: Pack) -> list[PackError]:
    out: list[PackError] = []
    dims = {d.column for d in pack.spec.dimensions}
    for doc in pack.rules:
        file = _rel(doc.path)
        for j, eff in enumerate(doc.front.effects or []):
            at = f"effects.{j}"
            metric = pack.metric_by_id.get(eff.metric)
            if metric is None:
                out.append(PackError(file, f"{at}.metric", f"unknown metric {eff.metric!r}"))
                continue
            if eff.applies_when and eff.applies_when.dimension not in dims:
                out.append(PackError(file, f"{at}.applies_when.dimension",
                                     f"{eff.applies_when.dimension!r} is not a declared dimension"))
            for fname in ("predicate", "weight", "expression", "count"):
                text = getattr(eff, fname, None)
                if text:
                    try:
                        parse_expression(text, where=f"{at}.{fname}")
                    except DibenchError as exc:
                        out.append(PackError(file, f"{at}.{fname}", str(exc)))
            if eff.op == "threshold" and eff.param not in metric.params:
                out.append(PackError(file, f"{at}.param", f"metric {metric.id} has no parameter {eff.param!r}"))
    return out


def validate_pack(path: str | Path, wh: Warehouse | None = None) -> tuple[Pack | None, list[PackError]]:
    """Return the pack (if readable) and every problem found."""
    try:
        pack = load_pack(path)
    except PackErrors as exc:
        return None, exc.errors
    columns = schema_columns(wh, pack.schema) if wh is not None else {}
    problems = _metric_problems(pack, columns) + _rule_problems(pack)
    if wh is not None and not columns:
        problems.append(PackError(_rel(pack.root / "pack.yaml"), "schema",
                                  f"schema {pack.schema!r} is not loaded, so table and column references were not checked "
                                  f"(run `dibench domain load {pack.name}`)"))
    for d in pack.spec.dimensions:
        t, c = d.column.split(".")
        if columns and (t not in columns or c not in columns[t]):
            problems.append(PackError(_rel(pack.root / "pack.yaml"), "dimensions", f"{d.column} does not exist"))
    _ = exp
    return pack, problems
