"""Routing benchmark on a Spider-style release: the routing figures, in one run.

    .venv/bin/python bench/routing_bench.py                        # ../shared/data/spider, 815 contracts
    .venv/bin/python bench/routing_bench.py --path /data/spider --n 200 --keep
    .venv/bin/python bench/routing_bench.py --subset world_1,car_1,dog_kennels     # a 3-database catalog
    .venv/bin/python bench/routing_bench.py --postgres world_1,car_1,dog_kennels,concert_singer,pets_1
    .venv/bin/python bench/routing_bench.py --lenient    # routing generate --lenient: word-matched requests kept

Times catalog ingest, `routing generate` and each router's evaluation (the library calls the
commands make), then reports the score table with 95% Wilson intervals (oracle without and with
the clarification turn, lexical, random, layout-only, select-every-database), the behaviour mix
built against its targets (with why a behaviour fell short), and the share of segments whose
text is a released human question. `--subset` copies those Spider databases and their dev
questions into a temporary release; `--postgres` copies them into PostgreSQL schemas of the
warehouse (dropped afterwards) and ingests those. The catalog (default `bench_routing`) is deleted
before the run and after it unless `--keep`. Results: stdout and `bench/results/routing.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dibench.core.config import REPO_ROOT, get_settings
from dibench.routing.audit import AUDITED
from dibench.routing.catalog_store import delete_catalog
from dibench.routing.evaluate import EvalResult, behaviour_mix, evaluate, random_router
from dibench.routing.ingest import IngestReport, ingest_postgres_schemas, ingest_sqlite_folder
from dibench.routing.models import Contract, SourceUnit
from dibench.routing.pipeline import load_eval, run_generate
from dibench.routing.routers.layout import LayoutRouter
from dibench.routing.routers.lexical import LexicalRouter
from dibench.routing.routers.oracle import OracleRouter
from dibench.routing.routers.select_all import SelectAllRouter
from dibench.routing.task_store import base_unit_id
from dibench.stores.graph import apply_schema, get_graph
from dibench.stores.warehouse import get_warehouse

sys.path.insert(0, str(REPO_ROOT))  # the test fixtures that copy Spider databases
from tests.fixtures.routing_catalogs import (  # noqa: E402
    drop_schemas, spider_into_postgres, spider_subset_folder,
)


def question_share(contracts: list[Contract], units: list[SourceUnit]) -> dict[str, Any]:
    """Segments whose base unit's text is a released question, overall and per behaviour."""
    source = {u.unit_id: u.intent_source for u in units}
    asked_dbs = {u.database for u in units if u.intent_source == "question"}
    total: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    rendered_db_has_questions = 0
    for c in contracts:
        for u in c.units():
            total[c.behaviour] += 1
            if source[base_unit_id(u.unit_id)] == "question":
                asked[c.behaviour] += 1
            elif u.database in asked_dbs:
                rendered_db_has_questions += 1
    n, k = sum(total.values()), sum(asked.values())
    return {"segments": n, "with_question": k, "share": round(k / n, 4) if n else 0.0,
            "by_behaviour": {b: f"{asked[b]}/{total[b]}" for b in total},
            "rendered_on_database_without_questions": n - k - rendered_db_has_questions,
            "rendered_on_database_with_questions": rendered_db_has_questions,
            "databases_with_questions": len(asked_dbs), "databases_with_units": len({u.database for u in units})}


def run_router(setup: Any, router: Any, *, ask: bool) -> tuple[EvalResult, float]:
    started = time.perf_counter()
    result = evaluate(setup.contracts, setup.indexes, setup.route_executor, router, clarify=ask)
    return result, round(time.perf_counter() - started, 2)


def asks_beyond_sources(contracts: list[Contract]) -> dict[str, str]:
    """Per behaviour: tasks asking some source more than once, of all its tasks (branch by branch:
    an interactive task's two readings each ask their own source once)."""
    mix = behaviour_mix(contracts)
    more = Counter(str(c.behaviour) for c in contracts if any(len(b.units) > len(b.databases) for b in c.branches))
    return {b: f"{more[b]}/{n}" for b, n in sorted(mix.items())}


def ingest_catalog(args: argparse.Namespace, graph: Any, tmp: Path) -> tuple[IngestReport, Path, list[str]]:
    """The catalog of the run: the release folder, a subset of it, or a subset copied into PostgreSQL."""
    if args.postgres:
        names = args.postgres.split(",")
        schemas = spider_into_postgres(get_warehouse().admin(), names, "bench_rt_")
        root = spider_subset_folder(tmp / "release", names, rename=schemas)
        return ingest_postgres_schemas(graph, get_warehouse().admin(), list(schemas.values()),
                                       catalog=args.catalog), root, list(schemas.values())
    root = spider_subset_folder(tmp / "release", args.subset.split(",")) if args.subset else args.path
    return ingest_sqlite_folder(graph, root, catalog=args.catalog), root, []


def with_interval(s: Any, metric: str) -> str:
    lo, hi = s.interval(metric)
    return f"{100 * getattr(s, metric):5.1f}% [{100 * lo:.1f}-{100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", type=Path, default=get_settings().data_dir / "spider")
    ap.add_argument("--subset", default="", help="comma-separated Spider databases: a catalog of only these")
    ap.add_argument("--postgres", default="", help="comma-separated Spider databases, copied into PostgreSQL")
    ap.add_argument("--catalog", default="bench_routing")
    ap.add_argument("--n", type=int, default=815)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--lenient", action="store_true",
                    help="routing generate --lenient: keep word-matched requests and gold sets repeated up to 10%% "
                         "of a behaviour (the default is strict, as the command's)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/routing.json"))
    args = ap.parse_args()
    graph = get_graph()
    apply_schema(graph)
    delete_catalog(graph, args.catalog)
    tmp = Path(tempfile.mkdtemp(prefix="routing_bench_"))
    t0 = time.perf_counter()
    ingest, root, schemas = ingest_catalog(args, graph, tmp)
    t_ingest = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    gen = run_generate(graph, catalog=args.catalog, root=root, n=args.n, seed=args.seed,
                       strict=not args.lenient)
    t_generate = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    setup = load_eval(graph, args.catalog)
    t_load = round(time.perf_counter() - t0, 2)
    contracts = setup.contracts
    runs = {"oracle (no asking)": (OracleRouter(contracts, args.seed), False),
            "oracle (asks once)": (OracleRouter(contracts, args.seed), True),
            "lexical": (LexicalRouter("never"), False),
            "random": (random_router(args.seed, contracts), False),
            "layout-only": (LayoutRouter(args.seed), False), "select-all": (SelectAllRouter(), False)}
    scores: dict[str, Any] = {}
    for name, (router, ask) in runs.items():
        result, seconds = run_router(setup, router, ask=ask)
        s = result.summary
        scores[name] = {"ra_set": s.ra_set, "ra_graph": s.ra_graph, "ea_micro": s.ea_micro,
                        "route_exec_graph": s.route_exec_graph, "executor": result.executor, "seconds": seconds,
                        "intervals": {k: s.interval(k) for k in ("ra_set", "ra_graph", "ea_micro", "route_exec_graph")},
                        "table": [with_interval(s, k) for k in ("ra_set", "ra_graph", "ea_micro", "route_exec_graph")],
                        "interactive_ra_graph": s.by_behaviour["interactive"].ra_graph
                        if "interactive" in s.by_behaviour else None}
    setup.executor.close()
    data = {
        "release": str(root), "catalog": args.catalog, "n": args.n, "seed": args.seed,
        "strict": not args.lenient, "rejected": gen.report.rejected,
        "loadavg": os.getloadavg(),
        "ingest": {"databases": ingest.databases, "skipped": ingest.skipped, "relations": ingest.relations},
        "units": {"read": gen.units.read, "units": len(gen.units.units), "by_source": gen.units.by_source,
                  "failures": gen.units.failure_counts(),
                  "with_question": sum(u.intent_source == "question" for u in gen.units.units)},
        "mix": {"targets": gen.report.targets, "produced": gen.report.produced,
                "short": gen.report.shortfall_lines()},
        "question_share": question_share(contracts, gen.units.units),
        "asks_beyond_sources": asks_beyond_sources(contracts),
        "seconds": {"ingest": t_ingest, "generate": t_generate, "generate_units": gen.unit_seconds,
                    "generate_contracts": gen.contract_seconds, "shortcut_audit": gen.audit_seconds,
                    "eval_load": t_load,
                    "eval": {k: v["seconds"] for k, v in scores.items()}},
        "scores": scores,
        "shortcut_audit": gen.audit.to_dict() if gen.audit else None,
        "requests": {b: [c.request for c in contracts if c.behaviour == b][:4] for b in sorted(behaviour_mix(contracts))},
    }
    if not args.keep:
        delete_catalog(graph, args.catalog)
    if schemas:
        drop_schemas(get_warehouse().admin(), schemas)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1))
    print(json.dumps({k: v for k, v in data.items() if k not in ("scores", "shortcut_audit")}, indent=1))
    print(f"{'router':28} {'RA-Set':>20} {'RA-Graph':>20} {'EA-Micro':>20} {'Route+Exec-Graph':>20}")
    for name, sc in scores.items():
        print(f"{name:28} " + " ".join(f"{cell:>20}" for cell in sc["table"]))
    if gen.audit:  # every shortcut router, then the chance level: the best of them per metric
        for name, m in sorted(gen.audit.routers.items(), key=lambda kv: -kv[1]["ra_graph"]):
            print(f"{'  ' + name:28} " + " ".join(f"{100 * m[k]:>19.1f}%" for k in AUDITED))
        print(f"{'best shortcut (chance)':28} " + " ".join(
            f"{f'{100 * x.value:.1f}% [{100 * x.low:.1f}-{100 * x.high:.1f}]':>20}" for x in gen.audit.chance))


if __name__ == "__main__":
    main()
