"""Persist units and contracts: RoutingUnit / RoutingTask nodes in Neo4j, and JSONL files."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dibench.routing.errors import RoutingError
from dibench.routing.models import Contract, SourceUnit, UnitFailure
from dibench.stores.graph import Graph, add_counters


def unit_key(catalog: str, unit_id: str) -> str:
    return f"routing-unit:{catalog}/{unit_id}"


def task_key(catalog: str, task_id: str) -> str:
    return f"routing-task:{catalog}/{task_id}"


def base_unit_id(contract_unit_id: str) -> str:
    """`u_x~bound_value` (rewritten) and `u_x@db_y` (re-owned) both come from unit `u_x`."""
    return contract_unit_id.split("@")[0].split("~")[0]


def write_units(graph: Graph, catalog: str, units: list[SourceUnit], failures: list[UnitFailure]) -> dict[str, int]:
    """The catalog's units and failures as RoutingUnit nodes; units of an earlier build that this one
    did not produce (failed or not) are removed."""
    rows: list[dict[str, Any]] = [{
        "key": unit_key(catalog, u.unit_id), "catalog": catalog, "unit_id": u.unit_id, "database": u.database,
        "origin": u.origin, "status": "ok", "intent": u.intent, "intent_source": u.intent_source, "sql": u.sql,
        "ordered": u.ordered, "fingerprint": u.fingerprint, "n_rows": u.n_rows, "error": None,
        "columns": u.columns, "tables": u.tables} for u in units]
    rows += [{
        "key": unit_key(catalog, f"failed:{f.origin}"), "catalog": catalog, "unit_id": f"failed:{f.origin}",
        "database": f.database, "origin": f.origin, "status": "failed", "intent": None, "intent_source": None,
        "sql": None, "ordered": None, "fingerprint": None, "n_rows": None, "error": f"{f.kind}: {f.error}",
        "columns": None, "tables": None} for f in failures]
    counters = graph.write_rows("routing_unit_upsert", rows, batch_size=1000)
    return add_counters(counters, graph.write("routing_unit_prune", catalog=catalog, keep=[r["key"] for r in rows]))


def read_units(graph: Graph, catalog: str) -> list[SourceUnit]:
    return [SourceUnit(catalog=catalog, **r) for r in graph.read("routing_units_read", catalog=catalog)]


def write_contracts(graph: Graph, catalog: str, contracts: list[Contract],
                    catalog_of: dict[str, str] | None = None) -> dict[str, int]:
    """catalog_of: the benchmark's public id -> catalog id, so tasks link to the catalog's databases."""
    to_catalog = catalog_of or {}
    rows = [{"key": task_key(catalog, c.task_id), "catalog": catalog, "task_id": c.task_id,
             "behaviour": c.behaviour, "request": c.request, "renderer": c.renderer, "seed": c.seed,
             "contract": c.model_dump_json(),
             "required": sorted(to_catalog.get(d, d) for d in c.required_databases()),
             "units": sorted({unit_key(catalog, base_unit_id(u.unit_id)) for u in c.units()})} for c in contracts]
    counters = graph.write_rows("routing_task_upsert", rows, batch_size=200)
    pruned = graph.write("routing_task_prune", catalog=catalog, keep=[r["key"] for r in rows])
    return add_counters(counters, pruned)


def read_contracts(graph: Graph, catalog: str) -> list[Contract]:
    return [Contract.model_validate_json(r["contract"]) for r in graph.read("routing_tasks_read", catalog=catalog)]


def task_counts(graph: Graph, catalog: str) -> dict[str, int]:
    return {r["behaviour"]: r["tasks"] for r in graph.read("routing_task_counts", catalog=catalog)}


def export_jsonl(contracts: list[Contract], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for c in contracts:
            fh.write(c.model_dump_json() + "\n")


def import_jsonl(path: Path) -> list[Contract]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Contract.model_validate_json(line))
        except ValidationError as exc:
            raise RoutingError(f"{path}:{n}: not a routing contract: {str(exc).splitlines()[0]}") from exc
    return out
