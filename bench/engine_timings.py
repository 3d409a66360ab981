"""Import, load, ingest and generate the Jaffle Shop on PostgreSQL and on DuckDB; prints the timings.

    .venv/bin/python bench/engine_timings.py [--target 12] [--duckdb /tmp/jaffle-bench/warehouse.duckdb]

The import (`domain import-dbt` of the shared manifest) does not touch a warehouse: it is timed
once. The load builds the dbt models from the shared CSVs; ingest and generate (seed 42, one
worker) run on each engine in turn, on the same graph (the domain is deleted between them and at
the end). Also says whether both engines gave the same tasks and gold.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dibench.core.config import get_settings
from dibench.core.pack import Pack, load_pack
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.dbt.pack import import_manifest
from dibench.ingest.pipeline import ingest_pack
from dibench.stores.graph import delete_domain, get_graph
from dibench.stores.pack_data import warehouse_for
from dibench.stores.warehouse import get_warehouse

ENV = "DIBENCH_BENCH_JAFFLE_DUCKDB_URL"


def timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def run(pack: Pack, target: int) -> tuple[dict[str, float], list[tuple[Any, ...]]]:
    graph, wh = get_graph(), warehouse_for(pack)
    _, load_s = timed(lambda: load_database(pack, wh, replace=True))
    wh.dispose()  # DuckDB: the loader's writer is gone, readers open again on first use
    delete_domain(graph, pack.name)
    _, ingest_s = timed(lambda: ingest_pack(pack, graph, warehouse_for(pack)))
    summary, generate_s = timed(lambda: generate(pack, graph, target=target, seed=42, workers=1, min_per_type=0))
    tasks = [(r.task_id, r.question, repr(r.gold_answer), repr(r.base_answer)) for r in load_tasks(graph, pack.name)]
    delete_domain(graph, pack.name)
    return {"load": load_s, "ingest": ingest_s, "generate": generate_s, "admitted": summary.admitted}, tasks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=int, default=12)
    ap.add_argument("--duckdb", type=Path, default=None, help="the DuckDB file to build (default: a tmp folder)")
    args = ap.parse_args()
    pack = load_pack("jaffle")
    with tempfile.TemporaryDirectory() as tmp:
        _, import_s = timed(lambda: import_manifest(get_settings().data_dir / "jaffle" / "target" /
                                                    "semantic_manifest.json", Path(tmp) / "jaffle",
                                                    name="jaffle", schema="jaffle"))
        path = args.duckdb or Path(tmp) / "warehouse.duckdb"
        os.environ[ENV] = f"duckdb://{path.resolve()}"
        on_duck = dataclasses.replace(pack, spec=pack.spec.model_copy(update={"database_env": ENV}))
        assert get_warehouse().engine_name == "postgresql"
        pg, pg_tasks = run(pack, args.target)
        duck, duck_tasks = run(on_duck, args.target)
    print(f"import-dbt (no warehouse): {import_s:.2f} s")
    print("| step | PostgreSQL | DuckDB |\n|---|---|---|")
    for step in ("load", "ingest", "generate"):
        print(f"| {step} | {pg[step]:.1f} s | {duck[step]:.1f} s |")
    print(f"| admitted standard tasks (target {args.target}) | {pg['admitted']} | {duck['admitted']} |")
    print(f"same tasks and gold on both engines: {pg_tasks == duck_tasks} ({len(pg_tasks)} tasks with variants)")
    return 0 if pg_tasks == duck_tasks else 1


if __name__ == "__main__":
    sys.exit(main())
