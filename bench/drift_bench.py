"""Drift benchmark: `dibench drift` on the Berka benchmark after one month of transactions is
appended, timed against a full regeneration of the benchmark on the same data.

    .venv/bin/python bench/drift_bench.py                      # Berka sample (99,999 transactions)
    .venv/bin/python bench/drift_bench.py --trans-rows 1000000 # transactions replicated to 1M rows first
    .venv/bin/python bench/drift_bench.py --target 20 --min-per-type 0   # a quick smoke run

The Berka pack is copied under another domain name and Postgres schema (default `bench_drift`,
with `generation_bench.copy_pack`), so no schema or graph domain anyone else uses is touched.
Steps, each timed: load, ingest, generate (the benchmark as `dibench demo --domain berka`
builds it: target 60, at least 10 per analysis type), a drift check with no change (every task
skipped by fingerprint), the append (the last month of transactions copied one month later
with new ids), a drift check, a drift --apply, another check (all skipped again), and a full
regeneration (`generate` again, what one would run without drift). The drift check and the
regeneration are printed side by side. Results: stdout and `bench/results/drift.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from generation_bench import copy_pack, loaded_rows  # type: ignore[import-not-found]
from sqlalchemy import text

from dibench.core.config import REPO_ROOT, get_settings
from dibench.core.pack import Pack, load_pack, resolve_pack_path
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.drift import DriftPlan, run_drift
from dibench.stores.graph import Graph, apply_schema, delete_domain
from dibench.stores.warehouse import Warehouse

RESULTS = REPO_ROOT / "bench" / "results" / "drift.json"
T = TypeVar("T")
COLUMNS = "account_id, trans_date, type, operation, amount, balance, k_symbol, partner_bank, partner_account"


def timed(label: str, fn: Callable[[], T], out: dict[str, Any]) -> T:
    started = time.perf_counter()
    value = fn()
    out[label] = round(time.perf_counter() - started, 3)
    print(f"[bench] {label}: {out[label]:.2f}s", flush=True)
    return value


def admin(wh: Warehouse, schema: str, statement: str) -> int:
    """A data change made by the warehouse's owner (not generated SQL): the bench's own schema."""
    with wh.admin().begin() as c:
        return int(c.execute(text(statement.replace("{s}", schema))).rowcount or 0)


def replicate(wh: Warehouse, pack: Pack, rows: int) -> int:
    """Copies of the transactions (new ids, same dates) until the table holds `rows` rows."""
    while (n := loaded_rows(wh, pack, "trans") or 0) < rows:
        admin(wh, pack.schema, f"INSERT INTO {{s}}.trans (trans_id, {COLUMNS}) SELECT trans_id + (SELECT MAX(trans_id) "
                               f"FROM {{s}}.trans), {COLUMNS} FROM {{s}}.trans LIMIT {rows - n:d}")
    return n


def append_month(wh: Warehouse, schema: str) -> int:
    """The last month of transactions again, one month later, with new ids: a month of new data."""
    shifted = COLUMNS.replace("trans_date", "CAST(trans_date + interval '1 month' AS date)")
    return admin(wh, schema, f"INSERT INTO {{s}}.trans (trans_id, {COLUMNS}) "
                             f"SELECT trans_id + (SELECT MAX(trans_id) FROM {{s}}.trans), {shifted} FROM {{s}}.trans "
                             f"WHERE trans_date >= (SELECT date_trunc('month', MAX(trans_date)) FROM {{s}}.trans)")


def summary(plan: DriftPlan) -> dict[str, Any]:
    log = plan.changelog()
    return {"counts": log["counts"], "not_computed": log["not_computed"], **log["timing"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="bench_drift", help="domain name and Postgres schema of the Berka copy")
    ap.add_argument("--target", type=int, default=60, help="skeletons picked by MMR selection (dibench demo: 60)")
    ap.add_argument("--min-per-type", type=int, default=10, help="augmentation minimum per analysis type")
    ap.add_argument("--trans-rows", type=int, default=0, help="replicate transactions to this many rows first")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", action="store_true", help="keep the bench domain and schema afterwards")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if get_settings().llm_provider:
        sys.exit("unset DIBENCH_LLM_PROVIDER: the benchmark measures drift without an LLM")
    graph, wh = Graph(), Warehouse()
    t: dict[str, Any] = {}
    result: dict[str, Any] = {"domain": args.name, "seed": args.seed, "target": args.target, "seconds": t,
                              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                          "load_average_before": list(os.getloadavg())}}
    with tempfile.TemporaryDirectory() as tmp:
        pack = load_pack(copy_pack(resolve_pack_path("berka"), Path(tmp) / args.name, args.name))
        timed("load", lambda: load_database(pack, wh), t)
        if args.trans_rows:
            timed("replicate", lambda: replicate(wh, pack, args.trans_rows), t)
        result["trans_rows_before"] = loaded_rows(wh, pack, "trans")
        apply_schema(graph)
        delete_domain(graph, pack.name)
        timed("ingest", lambda: ingest_pack(pack, graph, wh), t)
        run = timed("generate", lambda: generate(pack, graph, target=args.target, seed=args.seed,
                                                 min_per_type=args.min_per_type), t)
        result["generated"] = {"admitted": run.admitted, "by_type": run.by_type}
        result["check_no_change"] = summary(timed("drift_no_change", lambda: run_drift(graph, wh, pack.name), t))
        result["appended_rows"] = timed("append_month", lambda: append_month(wh, pack.schema), t)
        result["trans_rows_after"] = loaded_rows(wh, pack, "trans")
        result["check_after_append"] = summary(timed("drift_check", lambda: run_drift(graph, wh, pack.name), t))
        result["apply"] = summary(timed("drift_apply", lambda: run_drift(graph, wh, pack.name, apply=True), t))
        result["check_after_apply"] = summary(timed("drift_after_apply", lambda: run_drift(graph, wh, pack.name), t))
        timed("regenerate", lambda: generate(pack, graph, target=args.target, seed=args.seed,
                                             min_per_type=args.min_per_type), t)
        if not args.keep:
            delete_domain(graph, pack.name)
            admin(wh, pack.schema, "DROP SCHEMA {s} CASCADE")
    graph.close()
    wh.dispose()
    result["machine"]["load_average_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    c = result["check_after_append"]
    print(f"[bench] {run.admitted} standard tasks admitted; {result['appended_rows']} transactions appended "
          f"({result['trans_rows_before']} -> {result['trans_rows_after']})")
    print(f"[bench] after the append: {c['counts']} ({c['sql_statements']} SQL statements, "
          f"{c['fingerprint_queries']} fingerprint queries in {c['fingerprint_seconds']}s)")
    print(f"[bench] {'step':<34}{'seconds':>10}")
    for label, key in (("drift check, no change", "drift_no_change"), ("drift check after the append", "drift_check"),
                       ("drift --apply", "drift_apply"), ("full regeneration", "regenerate")):
        print(f"[bench] {label:<34}{t[key]:>10.2f}")
    print(f"[bench] full regeneration / drift check = {t['regenerate'] / t['drift_check']:.1f}x; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
