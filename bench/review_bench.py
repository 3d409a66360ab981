"""Review app benchmark: how long a task page takes, at p50 and p95, with 50 rows of gold evidence.

    .venv/bin/python bench/review_bench.py [--requests 200] [--out bench/results/review.json]

What it builds: a copy of the mini pack as domain `bench_review` (ingested, tasks generated), in
which one admitted task's gold SQL is replaced by a query returning 60 rows of the orders table,
so its page carries the most rows a page shows (50, the cap) beside the task's own policy,
verdicts and lineage. The app is served by uvicorn on a loopback port, as `dibench review serve`
serves it, and requested over HTTP by one client with a reviewer's bearer token.

What it measures: `--requests` GETs of that task page after 20 warm-up requests, one at a time
(each reads the task, its policy and rule documents from Neo4j and runs the gold SQL as the
domain's read-only role): p50, p95 and max in milliseconds; the target is p95 < 300 ms. It also
checks that the page holds 50 rows and no value a reader may not see when asked with a reader's
token. Domain `bench_review` is deleted before and after (unless --keep).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the pack's loader lives in tests/fixtures/minipack

import httpx  # noqa: E402

from dibench.core.config import Reviewer, get_settings  # noqa: E402
from dibench.service.review import ReviewOptions  # noqa: E402
from dibench.stores.graph import apply_schema, delete_domain, get_graph  # noqa: E402
from dibench.stores.warehouse import get_warehouse  # noqa: E402
from tests.fixtures.review_app import review_app, served  # noqa: E402
from tests.test_update import generated_domain  # noqa: E402

DOMAIN = "bench_review"
RESULTS = REPO / "bench" / "results" / "review.json"
ROWS_SQL = ("SELECT o.order_id, o.customer_id, o.amount, o.rating, o.ordered_at FROM mini.orders AS o "
            "WHERE o.amount >= :min_amount ORDER BY o.order_id LIMIT 60")
WARMUP = 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    graph, wh = get_graph(), get_warehouse()
    apply_schema(graph)
    with tempfile.TemporaryDirectory() as tmp:
        generated_domain(Path(tmp) / "pack", DOMAIN, graph, wh, target=8)
        try:
            run(args, graph, Path(tmp))
        finally:
            if not args.keep:
                delete_domain(graph, DOMAIN)


def run(args: argparse.Namespace, graph: object, tmp: Path) -> None:
    from dibench.stores.graph import Graph

    assert isinstance(graph, Graph)
    rows = graph.read("review_queue_tasks", domain=DOMAIN, variants=["standard"], judge_rejected=False)
    key = next(r["key"] for r in rows if r["tier"] == "K+A+R")
    graph.write("bench_set_task_sql", key=key, sql=ROWS_SQL, params=json.dumps({"min_amount": 0}))
    reviewer = Reviewer(name="bench", token="bench-review-token-0001")
    reader = Reviewer(name="reader", token="bench-reader-token-0001", role="reader")
    cfg = get_settings().model_copy(update={"reviewers": [reviewer, reader], "state_dir": tmp})
    with served(review_app(cfg, ReviewOptions())) as base, httpx.Client(base_url=base, timeout=30) as client:
        url, params = f"/review/{DOMAIN}/task", {"key": key}
        auth = {"Authorization": f"Bearer {reviewer.token}"}
        first = client.get(url, params=params, headers=auth)
        first.raise_for_status()
        shown = first.text.split("Rows the gold SQL returns")[1].split("</table>")[0].count("<tr>") - 1
        private = client.get(url, params=params, headers={"Authorization": f"Bearer {reader.token}"}).text
        for _ in range(WARMUP):
            client.get(url, params=params, headers=auth)
        times = []
        for _ in range(args.requests):
            t0 = time.perf_counter()
            r = client.get(url, params=params, headers=auth)
            times.append((time.perf_counter() - t0) * 1000)
            r.raise_for_status()
    times.sort()
    result = {
        "requests": args.requests, "rows_shown": shown, "page_bytes": len(first.text),
        "p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[int(0.95 * len(times)) - 1], 1),
        "max_ms": round(times[-1], 1), "target_p95_ms": 300,
        "reader_page_has_gold_sql": "Rows the gold SQL returns" in private or "mini.orders" in private,
        "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"task page with {shown} gold rows ({len(first.text):,} bytes): p50 {result['p50_ms']} ms, "
          f"p95 {result['p95_ms']} ms, max {result['max_ms']} ms over {args.requests} requests "
          f"(target p95 < 300 ms); reader's page holds the gold SQL or rows: {result['reader_page_has_gold_sql']}")


if __name__ == "__main__":
    main()
