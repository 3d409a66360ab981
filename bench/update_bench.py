"""Incremental-update benchmark: t(update one rule) / t(full regeneration), next to the share of
the benchmark the rule affects, both measured in the same run on the same graph.

    .venv/bin/python bench/update_bench.py [--metrics 120] [--out bench/results/update.json]

What it builds: a scaled pack `bench_upd` over the mini shop data (schema `mini`): `--metrics`
metrics made from four templates (revenue, satisfaction, average order value, order count,
each with its own `min_amount` parameter) and one rule document per metric (an exclusion or a
threshold change, all counterfactually verified). Every skeleton (metric x dimension x
{no rule, its rule}) is generated: no MMR subset, so that "full regeneration" is the per-task
work of the pipeline (ground, run SQL, phrase, validate, write back) and nothing else.

What it measures, in one run and one process (one worker, warm imports):
1. t_full: ingest + enumerate + plan + generate every skeleton (`generation.pipeline` steps);
2. the rule of metric 0 is edited (its outlier cut-off moves from 2000 to 400), then
   t_update: `dibench update-rule` as a library call (load the document, re-verify its edges,
   re-derive the affected tasks, write in one transaction);
3. share: standard tasks re-derived / admitted standard tasks (and the same in task nodes,
   variants included); the target is ratio <= 1.5 x share + 0.02.
Domain `bench_upd` is deleted before and after (unless --keep).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the pack's loader lives in tests/fixtures/minipack

from dibench.generation.pipeline import create_run, plan_rows
from dibench.generation.skeletons import enumerate_skeletons
from dibench.generation.workers import work
from dibench.ingest.database import load_database
from dibench.stores.pack_data import schema_columns
from dibench.core.pack import load_pack
from dibench.ingest.pipeline import ingest_pack
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.stores.graph import apply_schema, delete_domain, get_graph
from dibench.service.queries import graph_stats
from dibench.stores.warehouse import get_warehouse

DOMAIN = "bench_upd"
RESULTS = REPO / "bench" / "results" / "update.json"
BODY = ("This policy states how the figure is computed each month, which orders count, which are left out, "
        "who owns the definition and from which date it applies, and why the finance and customer teams "
        "agreed on it after reviewing the quarterly reports together. ") * 3
FROM = ("FROM mini.orders o JOIN mini.customers c ON c.customer_id = o.customer_id\n"
        "WHERE o.ordered_at >= :start_date AND o.ordered_at < :end_date AND o.amount >= :min_amount")
TEMPLATES: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = [
    ("Revenue", "SUM(o.amount)", "currency", {}, {"op": "exclude", "predicate": "o.amount > 2000"}),
    ("Satisfaction rate", "100.0 * COUNT(*) FILTER (WHERE o.rating >= :good_rating) / NULLIF(COUNT(o.rating), 0)",
     "percent", {"good_rating": 4}, {"op": "threshold", "param": "good_rating", "value": 5}),
    ("Average order value", "AVG(o.amount)", "currency", {}, {"op": "exclude", "predicate": "o.amount > 2000"}),
    ("Order count", "COUNT(*)", "count", {}, {"op": "exclude", "predicate": "o.channel = 'phone'"}),
]


def write_pack(root: Path, n: int) -> Path:
    shutil.copytree(REPO / "tests" / "fixtures" / "minipack", root, ignore=shutil.ignore_patterns("__pycache__", "rules"))
    spec = yaml.safe_load((root / "pack.yaml").read_text())
    spec["name"] = DOMAIN
    (root / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "rules").mkdir()
    metrics = []
    for i in range(n):
        name, expr, unit, params, effect = TEMPLATES[i % 4]
        mid = f"BU-{i:04d}"
        metrics.append({"id": mid, "name": f"{name} {i}", "tier": 1, "description": f"{name} of orders, variant {i}.",
                        "formula": f"{name.lower()} over orders of at least a minimum amount",
                        "sql": f"SELECT {expr} AS value\n{FROM}\n", "time_column": "o.ordered_at",
                        "dimensions": ["customers.region", "customers.plan", "orders.channel"],
                        "params": {**params, "min_amount": 10 + 5 * (i // 4 % 20)}, "unit": unit})
        front = {"id": f"BU-R-{i:04d}", "title": f"Policy {i} for {name.lower()}", "version": "1",
                 "effective_date": "2023-01-01", "owner": "Finance",
                 "rule_type": "exclusionary" if effect["op"] == "exclude" else "definitional",
                 "effects": [{"metric": mid, **effect}]}
        (root / "rules" / f"r{i:04d}.md").write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n"
                                                      + f"# Policy {i}\n\n{BODY}\n")
    (root / "metrics.yaml").write_text(yaml.safe_dump({"metrics": metrics}, sort_keys=False))
    return root


def count_tasks(graph: Any) -> dict[str, int]:
    rows = graph.run_raw_read("MATCH (t:Task {domain: $d}) RETURN t.variant AS v, t.status AS s, count(*) AS n",
                              {"d": DOMAIN})
    out: dict[str, int] = {}
    for r in rows:
        out[f"{r['v']}/{r['s']}"] = r["n"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metrics", type=int, default=120, help="metrics (one rule each) in the scaled pack")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", action="store_true", help="leave the bench domain in the graph")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    graph, wh = get_graph(), get_warehouse()
    apply_schema(graph)
    tmp = Path(tempfile.mkdtemp(prefix="update_bench_"))
    root = write_pack(tmp / "pack", args.metrics)
    pack = load_pack(root)
    if not {"orders", "customers"} <= set(schema_columns(wh, "mini")):
        load_database(pack, wh)
    delete_domain(graph, DOMAIN)
    try:
        # 1. Full regeneration: ingest, then every skeleton through the generation steps.
        t0 = time.perf_counter()
        ing = ingest_pack(pack, graph, wh)
        skeletons = enumerate_skeletons(graph, DOMAIN, limit=10**9, seed=args.seed)
        run_key = create_run(graph, pack, args.seed, len(skeletons))
        graph.write("skeletons_plan", run=run_key, rows=plan_rows(skeletons, "bench", 0))
        stats = [work(run_key, str(root), args.seed, "w0")]  # one worker, in this process
        t_full = time.perf_counter() - t0
        counts = count_tasks(graph)
        std_admitted = counts.get("standard/admitted", 0)
        nodes_admitted = sum(v for k, v in counts.items() if k.endswith("/admitted"))
        print(f"full regeneration: {len(skeletons)} skeletons, {std_admitted} admitted standard tasks "
              f"({nodes_admitted} admitted task nodes with variants) in {t_full:.1f}s "
              f"(edges verified {ing.verified}, unverified {ing.unverified})", flush=True)

        # 2. Edit one rule document and update incrementally.
        doc_path = root / "rules" / "r0000.md"
        doc_path.write_text(doc_path.read_text().replace("o.amount > 2000", "o.amount > 400"))
        t1 = time.perf_counter()
        pk, doc = load_document(doc_path)
        plan, counters = run_update(lambda: plan_update(pk, doc, graph, wh), graph, pk.name)
        t_update = time.perf_counter() - t1
        log = plan.changelog()
        affected = len(log["tasks"])
        touched_nodes = 3 * affected  # a standard task and at most its two variants
        share = affected / std_admitted if std_admitted else 0.0
        ratio = t_update / t_full
        target = 1.5 * share + 0.02
        result = {
            "domain": DOMAIN, "metrics": args.metrics, "rules": len(pack.rules), "skeletons": len(skeletons),
            "tasks": {"admitted_standard": std_admitted, "admitted_task_nodes": nodes_admitted, "by_state": counts},
            "t_full_regeneration_s": round(t_full, 3), "t_update_one_rule_s": round(t_update, 3),
            "sql_seconds_full": round(sum(s["sql_seconds"] for s in stats), 3),
            "affected_standard_tasks": affected, "affected_task_nodes_upper_bound": touched_nodes,
            "affected_share_of_task_nodes_upper_bound": round(touched_nodes / nodes_admitted, 5) if nodes_admitted else 0,
            "affected_share": round(share, 5), "ratio": round(ratio, 5), "target_ratio": round(target, 5),
            "meets_target": ratio <= target, "update_counts": log["counts"], "update_writes": counters,
            "graph": graph_stats(graph, DOMAIN),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        }
        print(f"update of {doc.id}: {affected} standard tasks re-derived ({log['counts']}) in {t_update:.2f}s")
        print(f"ratio t_update/t_full = {ratio:.4f}; affected share = {share:.4f}; target <= {target:.4f}: "
              f"{'met' if ratio <= target else 'NOT met'}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
        print(f"results: {args.out}")
    finally:
        if not args.keep:
            delete_domain(graph, DOMAIN)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
