"""Ingest benchmark: `dibench ingest` of the demo pack at scale, counterfactual edge verification
included (target: <= 60 s at 1M tickets), and with `--compare-legacy` the verification
alone on the grouped plan against one statement per slice (DIBENCH_GROUPED_PLAN=0), checking that
both verify the same edges on the same slices.

    .venv/bin/python bench/ingest_demo_bench.py                                   # 1M tickets
    .venv/bin/python bench/ingest_demo_bench.py --size 200000 --compare-legacy
    .venv/bin/python bench/ingest_demo_bench.py --size 1000000 --reuse-data

The pack is copied as domain and schema `--name` (default `bench_ingest`, the generation bench's
`copy_pack`: SQL requalified on the tree), loaded with `--size` tickets unless `--reuse-data`
finds it loaded, and ingested into its own graph domain (deleted before, and after unless
`--keep`). Timed: the whole `ingest.pipeline.ingest_pack` call (what `dibench ingest` runs: schema,
catalog, rules with verification, graph writes), with the SQL it sent (statements and time inside
cursor.execute, the generation bench's `sql_clock`). Results: stdout and `bench/results/ingest_demo.json`.
The copied schema stays for `--reuse-data`; drop it when done (`DROP SCHEMA bench_ingest CASCADE`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generation_bench import copy_pack, legacy_plan, loaded_rows, sql_clock  # noqa: E402
from dibench.ingest.database import load_database
from dibench.core.pack import Pack, load_pack, resolve_pack_path
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.rules import plan_rules
from dibench.core.config import REPO_ROOT
from dibench.stores.graph import Graph, apply_schema, delete_domain
from dibench.stores.warehouse import Warehouse

RESULTS = REPO_ROOT / "bench" / "results" / "ingest_demo.json"
TARGET_S = 60.0


def timed_verification(pack: Pack, wh: Warehouse) -> tuple[dict[str, Any], list[Any]]:
    """The rule plan with every edge verified (no graph write), timed, and its checks."""
    with sql_clock() as clock:
        started = time.perf_counter()
        plan = plan_rules(pack, wh)
        wall = time.perf_counter() - started
    return ({"seconds": round(wall, 2), "sql_seconds": round(clock.seconds, 2), "sql_statements": clock.statements,
             "verified": sum(c.verified for c in plan.checks), "edges": len(plan.checks)}, plan.checks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", default="demo", help="pack name or path (default: demo)")
    ap.add_argument("--name", default="bench_ingest", help="domain name and Postgres schema of the copy")
    ap.add_argument("--size", type=int, default=1_000_000, help="loader size (demo: tickets)")
    ap.add_argument("--size-table", default="tickets", help="table whose row count --size sets (checked)")
    ap.add_argument("--reuse-data", action="store_true", help="keep the copy's schema if it holds --size rows")
    ap.add_argument("--compare-legacy", action="store_true",
                    help="also time the verification with one statement per slice and compare the checks")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", action="store_true", help="keep the bench domain in the graph afterwards")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    graph, wh = Graph(), Warehouse()
    result: dict[str, Any] = {"domain": args.name, "size": args.size, "load_average_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory() as tmp:
        pack = load_pack(copy_pack(resolve_pack_path(args.pack), Path(tmp) / args.name, args.name))
        rows = loaded_rows(wh, pack, args.size_table)
        if not (args.reuse_data and rows == args.size):
            print(f"[bench] loading {pack.schema} ({args.size} {args.size_table}) ...", flush=True)
            result["load"] = load_database(pack, wh, size=args.size, seed=args.seed)
        result["data_rows"] = loaded_rows(wh, pack, args.size_table)
        apply_schema(graph)
        delete_domain(graph, pack.name)
        with sql_clock() as clock:
            started = time.perf_counter()
            report = ingest_pack(pack, graph, wh)
            wall = time.perf_counter() - started
        result["ingest"] = {"seconds": round(wall, 2), "sql_seconds": round(clock.seconds, 2),
                            "sql_statements": clock.statements, "verified": report.verified,
                            "unverified": report.unverified}
        print(f"[bench] ingest of {result['data_rows']} {args.size_table}: {wall:.1f}s (SQL {clock.seconds:.1f}s in "
              f"{clock.statements} statements), {report.verified} edges verified, {report.unverified} not; "
              f"<= {TARGET_S:.0f}s: {'PASS' if wall <= TARGET_S else 'FAIL'}", flush=True)
        if args.compare_legacy:
            grouped, checks = timed_verification(pack, wh)
            with legacy_plan():
                legacy, legacy_checks = timed_verification(pack, wh)
            same = checks == legacy_checks
            result["verification"] = {"grouped": grouped, "legacy": legacy, "identical_checks": same}
            for name, v in (("grouped", grouped), ("legacy", legacy)):
                print(f"[bench] verification, {name:7s}: {v['seconds']:7.1f}s, SQL {v['sql_seconds']:7.1f}s in "
                      f"{v['sql_statements']:5d} statements; {v['verified']}/{v['edges']} edges verified")
            print(f"[bench] legacy / grouped: {legacy['seconds'] / max(grouped['seconds'], 1e-9):.1f}x; "
                  f"identical checks (edges, slices changed, slices checked): {same}")
        if not args.keep:
            delete_domain(graph, pack.name)
    graph.close()
    wh.dispose()
    result["load_average_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"[bench] results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
