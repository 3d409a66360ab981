"""Ingest benchmark: write throughput of the batched `UNWIND $rows` path against a per-row
baseline, and rules-for-metric latency, on a synthetic graph of >= 1M edges.

    .venv/bin/python bench/ingest_bench.py [--metrics 100000 --rules 50000 --batch 5000 --workers 2]

The synthetic graph goes through the very statements `dibench ingest` runs
(`cypher/ingest_*.cypher`: MERGE for nodes, create-where-missing for edges, which is MERGE's
outcome without its locks), with rows shaped as the ingest planners shape them, written the
way `ingest_pack` writes a plan above DIBENCH_INGEST_TX_ROWS (`Graph.write_concurrently`), into
the domain `bench_synth`. The baselines write a proportional, smaller graph with the same
statements, one row per statement, into `bench_synth_row` / `bench_synth_tx`. A warm-up graph
(`--warmup`) is written and deleted first. All domains are deleted in batches before and after
(unless --keep). Results: a table on stdout and `bench/results/ingest.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dibench.core.config import get_settings
from dibench.core.keys import dimension_key, metric_key, row, rule_key, rule_version_key, table_key
from dibench.ingest.pipeline import modifies_by_rule, write_batched as write_batched_step
from dibench.service.queries import graph_stats, rules_for
from dibench.stores import local
from dibench.stores.graph import Graph, Tx, add_counters, apply_schema, batched, delete_domain, get_graph

RESULTS = Path(__file__).resolve().parent / "results" / "ingest.json"
DOMAIN, ROW_DOMAIN, TX_DOMAIN, WARM_DOMAIN = "bench_synth", "bench_synth_row", "bench_synth_tx", "bench_synth_warm"
OPS = ("where", "exclude", "threshold", "weight", "override", "suppress", "having")
DIM_TYPES = ("categorical", "spatial", "temporal", "numeric")
RULE_TYPES = ("definitional", "exclusionary", "temporal", "conditional", "privacy", "override")
# About 110 words: the order of a real rule's summary; real documents (600-1,100 words) only
# make each property write longer, not the element count.
BODY = ("This policy states how the figure is computed each month, which records count, which are left out, "
        "who owns the definition and from which date it applies. ") * 4


# ------------------------------------------------------------------------------ synthetic graph
@dataclass(frozen=True)
class Synth:
    """A deterministic synthetic pack-shaped graph: tables with dimensions and joins; metrics
    reading 3 tables, sliced by 2 dimensions, 40% of them composites of 2 lower-tier metrics
    (paths up to 2 hops); rules modifying 1-13 metrics (mean 7), 40% conditional."""

    domain: str
    metrics: int
    rules: int
    seed: int = 42
    tables: int = field(init=False)
    metric_tables: list[tuple[int, ...]] = field(init=False, repr=False)
    metric_components: list[tuple[int, ...]] = field(init=False, repr=False)
    rule_metrics: list[tuple[int, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        tables = max(5, self.metrics // 100)
        base = int(self.metrics * 0.6)  # tier 1: indexes [0, base); tier 2: [base, derived); tier 3: the rest
        derived = int(self.metrics * 0.85)
        mt: list[tuple[int, ...]] = []
        mc: list[tuple[int, ...]] = []
        for i in range(self.metrics):
            mt.append(tuple(rng.sample(range(tables), 3)))
            if i < base:
                mc.append(())
            elif i < derived:
                mc.append(tuple(rng.sample(range(base), 2)))
            else:
                mc.append(tuple(rng.sample(range(derived), 2)))
        rm = [tuple(rng.sample(range(self.metrics), rng.randint(1, 13))) for _ in range(self.rules)]
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "metric_tables", mt)
        object.__setattr__(self, "metric_components", mc)
        object.__setattr__(self, "rule_metrics", rm)

    # ids and keys ----------------------------------------------------------------------
    def metric_id(self, i: int) -> str:
        return f"SYN-M-{i:06d}"

    def rule_id(self, r: int) -> str:
        return f"SYN-R-{r:06d}"

    def table(self, t: int) -> str:
        return f"t{t:05d}"

    def dim_column(self, t: int, k: int) -> str:
        return f"{self.table(t)}.d{k}"

    def metric_dims(self, i: int) -> tuple[str, str]:
        t = self.metric_tables[i]
        return self.dim_column(t[0], i % 3), self.dim_column(t[1], (i + 1) % 3)

    def content_hash(self, r: int) -> str:
        return f"{self.seed:08x}{r:056x}"  # 64 hex digits, like a sha256

    # rows, one generator per ingest statement -------------------------------------------
    def table_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for t in range(self.tables):
            cols = ["id", "d0", "d1", "d2", "amount", "created_at", "parent_id"]
            yield row(table_key(d, self.table(t)), {
                "domain": d, "name": self.table(t), "schema": "synth", "label": f"entity {t}", "columns": cols,
                "column_types": ["INTEGER", "TEXT", "TEXT", "TIMESTAMP", "NUMERIC", "TIMESTAMP", "INTEGER"],
                "primary_key": ["id"]})

    def join_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for t in range(self.tables):
            for step in (1, 7):
                u = (t + step) % self.tables
                yield {"src": table_key(d, self.table(t)), "dst": table_key(d, self.table(u)),
                       "columns": f"{self.table(t)}.parent_id={self.table(u)}.id"}

    def dimension_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for t in range(self.tables):
            for k in range(3):
                col = self.dim_column(t, k)
                yield row(dimension_key(d, col), {
                    "domain": d, "column": col, "table": self.table(t), "name": f"d{k}",
                    "type": DIM_TYPES[(t + k) % 4], "label": f"dimension {k} of entity {t}",
                    "cardinality": 3 + (t * 7 + k) % 40}, table=table_key(d, self.table(t)))

    def metric_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for i in range(self.metrics):
            tabs = [self.table(t) for t in self.metric_tables[i]]
            comps = [self.metric_id(c) for c in self.metric_components[i]]
            sql = (f"SELECT SUM(a.amount) AS value FROM synth.{tabs[0]} a JOIN synth.{tabs[1]} b ON b.id = a.parent_id "
                   f"JOIN synth.{tabs[2]} c ON c.id = b.parent_id "
                   f"WHERE a.created_at >= :start_date AND a.created_at < :end_date")
            yield row(metric_key(d, self.metric_id(i)), {
                "domain": d, "id": self.metric_id(i), "name": f"Synthetic metric {i}", "tier": 3 if comps else 1,
                "description": f"Synthetic metric number {i} over three entities.",
                "formula": "sum of amounts", "sql": sql, "time_column": "a.created_at", "unit": "currency",
                "rounding": 2, "params_json": "{}", "higher_is_better": True, "target": None, "tables": sorted(tabs),
                "dimensions": list(self.metric_dims(i)), "components": comps})

    def read_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for i in range(self.metrics):
            for t in self.metric_tables[i]:
                yield {"metric": metric_key(d, self.metric_id(i)), "table": table_key(d, self.table(t))}

    def use_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for i in range(self.metrics):
            for c in self.metric_components[i]:
                yield {"metric": metric_key(d, self.metric_id(i)), "component": metric_key(d, self.metric_id(c))}

    def slice_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for i in range(self.metrics):
            for col in self.metric_dims(i):
                yield {"metric": metric_key(d, self.metric_id(i)), "dimension": dimension_key(d, col)}

    def rule_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for r in range(self.rules):
            rid, h = self.rule_id(r), self.content_hash(r)
            rtype = "conditional" if self.conditional(r) else RULE_TYPES[r % 6]
            yield row(rule_key(d, rid), {
                "domain": d, "id": rid, "title": f"Synthetic rule {r}", "rule_type": rtype, "owner": "Finance",
                "version": "1", "effective_date": "2024-01-01", "path": f"r{r}.md", "content_hash": h,
                "effects_source": "front_matter", "body": BODY,
            }, version_key=rule_version_key(d, rid, h), version_props={
                "domain": d, "rule_id": rid, "version": "1", "hash": h, "effective_date": "2024-01-01", "body": BODY,
                "effects_json": "[]", "ingested_at": "2026-01-01T00:00:00+00:00"})

    def conditional(self, r: int) -> bool:
        return r % 5 < 2

    def modify_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for r in range(self.rules):
            for j, i in enumerate(self.rule_metrics[r]):
                op = OPS[(r + j) % len(OPS)]
                effect = json.dumps({"metric": self.metric_id(i), "op": op, "predicate": "a.amount > 100"},
                                    sort_keys=True)
                yield row("", {
                    "op": effect, "op_type": op, "verified": (r + j) % 10 != 0,
                    "changed_slices": ["all", "month=2024-01"], "slices_checked": 4, "error": None,
                    "version": "1",
                }, rule=rule_key(d, self.rule_id(r)), metric=metric_key(d, self.metric_id(i)))

    def apply_rows(self) -> Iterator[dict[str, Any]]:
        d = self.domain
        for r in range(self.rules):
            if self.conditional(r):
                col = self.metric_dims(self.rule_metrics[r][0])[0]
                yield {"rule": rule_key(d, self.rule_id(r)), "dimension": dimension_key(d, col), "value": f"v{r % 7}"}

    def steps(self) -> list[tuple[str, Callable[[], Iterator[dict[str, Any]]]]]:
        """(statement, planner rows) in the order `ingest.pipeline.plan_steps` gives them; see
        `statement_rows` for the one statement that takes them regrouped."""
        return [("ingest_tables", self.table_rows), ("ingest_joins", self.join_rows),
                ("ingest_dimensions", self.dimension_rows), ("ingest_metrics", self.metric_rows),
                ("ingest_metric_reads", self.read_rows), ("ingest_metric_uses", self.use_rows),
                ("ingest_metric_slices", self.slice_rows), ("ingest_rules", self.rule_rows),
                ("ingest_rule_modifies", self.modify_rows), ("ingest_rule_applies", self.apply_rows)]


def statement_rows(name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Planner rows as `ingest.pipeline.plan_steps` hands them to the statement: rule -> metric
    edges grouped by rule, everything else as it is."""
    return modifies_by_rule(rows) if name == "ingest_rule_modifies" else rows


# ------------------------------------------------------------------------------ measurement
@dataclass
class StepResult:
    statement: str
    rows: int = 0
    nodes: int = 0
    relationships: int = 0
    properties: int = 0
    seconds: float = 0.0

    @property
    def elements(self) -> int:
        return self.nodes + self.relationships

    def add(self, counters: dict[str, int], seconds: float, rows: int) -> None:
        self.rows += rows
        self.nodes += counters.get("nodes_created", 0)
        self.relationships += counters.get("relationships_created", 0)
        self.properties += counters.get("properties_set", 0)
        self.seconds += seconds


def total(steps: list[StepResult]) -> dict[str, Any]:
    elements = sum(s.elements for s in steps)
    seconds = sum(s.seconds for s in steps)
    return {"rows": sum(s.rows for s in steps), "nodes": sum(s.nodes for s in steps),
            "relationships": sum(s.relationships for s in steps), "elements": elements,
            "seconds": round(seconds, 3), "elements_per_s": round(elements / seconds, 1) if seconds else 0.0}


def write_batched(graph: Graph, synth: Synth, batch: int, workers: int, progress: bool) -> list[StepResult]:
    """The ingest path for a large plan (`ingest.pipeline.ingest_pack` above DIBENCH_INGEST_TX_ROWS):
    each statement's rows, planned first, written by `Graph.write_concurrently` in batches of
    `batch` rows, one transaction each, `workers` at a time. Timed: the writes, not the planning."""
    out = []
    for name, rows in synth.steps():
        planned = statement_rows(name, list(rows()))
        res = StepResult(name)
        started = time.perf_counter()
        counters = write_batched_step(graph, name, planned, batch_size=batch, workers=workers)
        res.add(counters, time.perf_counter() - started, len(planned))
        out.append(res)
        if progress:
            print(f"  batched {name:<22} {res.rows:>9,} rows {res.elements:>9,} elements "
                  f"{res.seconds:7.2f} s  {res.elements / max(res.seconds, 1e-9):>10,.0f} el/s", file=sys.stderr)
    return out


def write_per_row(graph: Graph, synth: Synth) -> list[StepResult]:
    """Baseline: one MERGE statement per row, each its own (auto-committed) transaction."""
    out = []
    for name, rows in synth.steps():
        res = StepResult(name)
        for r in rows():
            started = time.perf_counter()
            counters = graph.write(name, rows=statement_rows(name, [r]))
            res.add(counters, time.perf_counter() - started, 1)
        out.append(res)
    return out


def write_per_row_grouped(graph: Graph, synth: Synth, group: int = 1000) -> list[StepResult]:
    """Stricter baseline: one MERGE statement per row, `group` statements per transaction (so the
    difference to the batched path is the per-statement round trip, not the commit)."""
    out = []
    for name, rows in synth.steps():
        res = StepResult(name)
        for chunk in batched(rows(), group):
            def work(tx: Tx, chunk: list[dict[str, Any]] = chunk, name: str = name) -> dict[str, int]:
                for r in chunk:
                    tx.run(name, rows=statement_rows(name, [r]))
                return tx.counters

            started = time.perf_counter()
            counters = graph.transaction(work)
            res.add(counters, time.perf_counter() - started, len(chunk))
        out.append(res)
    return out


def timed_delete_domain(graph: Graph, domain: str, batch: int = 10_000) -> tuple[int, float]:
    """Batched DETACH DELETE of one domain; returns (nodes deleted, seconds)."""
    started = time.perf_counter()
    deleted = delete_domain(graph, domain, batch)
    return deleted, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[k]


def latency(graph: Graph, synth: Synth, samples: int, warmup: int, seed: int) -> dict[str, Any]:
    """p50/p95 of `rules_for` (metric lookup + rules_for_metric) and of the statement alone."""
    rng = random.Random(seed)
    picks = [rng.randrange(synth.metrics) for _ in range(samples + warmup)]
    lib, stmt, sizes = [], [], []
    for n, i in enumerate(picks):
        started = time.perf_counter()
        rows = rules_for(graph, synth.metric_id(i), synth.domain)
        mid = time.perf_counter()
        graph.read("rules_for_metric", metric=metric_key(synth.domain, synth.metric_id(i)))
        end = time.perf_counter()
        if n >= warmup:
            lib.append((mid - started) * 1000)
            stmt.append((end - mid) * 1000)
            sizes.append(len(rows))

    def summary(ms: list[float]) -> dict[str, float]:
        return {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2),
                "p99_ms": round(percentile(ms, 99), 2), "max_ms": round(max(ms), 2),
                "mean_ms": round(statistics.fmean(ms), 2)}

    return {"samples": samples, "warmup": warmup, "rules_for": summary(lib), "rules_for_metric_statement": summary(stmt),
            "rows_per_answer": {"mean": round(statistics.fmean(sizes), 1), "max": max(sizes),
                                "with_composite_paths": sum(1 for i in picks[warmup:] if synth.metric_components[i])}}


# ------------------------------------------------------------------------------ machine
def server_info(graph: Graph) -> dict[str, Any]:
    rows = graph.read("bench_server_info")
    return {r["name"]: r["value"] for r in rows}


class ServerCpu:
    """CPU seconds used by the local Neo4j process (from /proc), to tell a slow server from a
    busy machine: on a shared host the wall-clock rate depends on what else runs."""

    def __init__(self) -> None:
        pid = next((s.pid for s in local.status(get_settings()) if s.name == "neo4j"), None)
        self.stat = Path(f"/proc/{pid}/stat") if pid else None

    def seconds(self) -> float | None:
        if self.stat is None or not self.stat.is_file():
            return None
        fields = self.stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def machine_load() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]}


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> dict[str, Any]:
    settings = get_settings()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=int, default=100_000, help="synthetic metrics (default 100000)")
    ap.add_argument("--rules", type=int, default=50_000, help="synthetic rule documents (default 50000)")
    ap.add_argument("--batch", type=int, default=settings.write_batch,
                    help=f"rows per UNWIND batch and transaction (default DIBENCH_WRITE_BATCH, {settings.write_batch})")
    ap.add_argument("--workers", type=int, default=settings.write_workers,
                    help=f"concurrent batch transactions (default DIBENCH_WRITE_WORKERS, {settings.write_workers})")
    ap.add_argument("--warmup", type=float, default=0.1,
                    help="before measuring, write and delete a synthetic graph this fraction of the size, so "
                         "that Neo4j's JIT compiler and query cache are warm (default 0.1; 0 for a cold server)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="batched writes of the whole graph, each into a fresh domain; the median rate is "
                         "the result, all are printed (default 3)")
    ap.add_argument("--sample", type=int, default=20_000, help="elements written by each per-row baseline (default 20000)")
    ap.add_argument("--queries", type=int, default=500, help="rules-for calls timed (default 500)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keep", action="store_true", help="keep the synthetic domains in the graph afterwards")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    graph = get_graph()
    apply_schema(graph)
    for d in (DOMAIN, ROW_DOMAIN, TX_DOMAIN, WARM_DOMAIN):
        delete_domain(graph, d)
    if args.warmup > 0:
        warm = Synth(WARM_DOMAIN, max(10, int(args.metrics * args.warmup)), max(5, int(args.rules * args.warmup)), args.seed)
        print(f"warm-up: {warm.metrics:,} metrics, {warm.rules:,} rules, written and deleted", file=sys.stderr)
        write_batched(graph, warm, args.batch, args.workers, progress=False)
        delete_domain(graph, WARM_DOMAIN)

    load_before = machine_load()
    cpu = ServerCpu()
    started = time.perf_counter()
    synth = Synth(DOMAIN, args.metrics, args.rules, args.seed)
    gen_s = time.perf_counter() - started
    print(f"synthetic plan: {synth.metrics:,} metrics, {synth.rules:,} rules, {synth.tables:,} tables "
          f"({gen_s:.1f} s to plan); load average {load_before['load_average_1_5_15']} on "
          f"{load_before['cpus']} CPUs", file=sys.stderr)
    runs: list[tuple[dict[str, Any], list[StepResult]]] = []
    for rep in range(args.repeat):
        if rep:
            delete_domain(graph, DOMAIN)  # each repetition writes the whole graph afresh
        print(f"batched write {rep + 1} of {args.repeat}:", file=sys.stderr)
        cpu0, wall0 = cpu.seconds(), time.perf_counter()
        steps = write_batched(graph, synth, args.batch, args.workers, progress=True)
        cpu1, wall1 = cpu.seconds(), time.perf_counter()
        run_total = total(steps)
        if cpu0 is not None and cpu1 is not None:
            run_total["neo4j_cpu_s"] = round(cpu1 - cpu0, 1)
            run_total["neo4j_cpu_share_of_wall"] = round((cpu1 - cpu0) / (wall1 - wall0), 2)
            run_total["elements_per_neo4j_cpu_s"] = round(run_total["elements"] / max(cpu1 - cpu0, 1e-9), 1)
        runs.append((run_total, steps))
    # The run with the median rate (the lower one of an even count) stands for the batched path.
    batched_total, batched_steps = sorted(runs, key=lambda r: r[0]["elements_per_s"])[(len(runs) - 1) // 2]
    batched_total["rates_of_all_runs"] = [r[0]["elements_per_s"] for r in runs]
    load_after_write = machine_load()

    # Write a second time: the statements must find everything in place and write nothing.
    started = time.perf_counter()
    rewrite: dict[str, int] = {}
    for name, rows in synth.steps():
        planned = statement_rows(name, list(rows()))
        add_counters(rewrite, write_batched_step(graph, name, planned, batch_size=args.batch, workers=args.workers))
    rewrite_s = time.perf_counter() - started

    edges_in_graph = sum(graph_stats(graph, DOMAIN)["edges"].values())

    # Baselines on a proportional sample of the same generator.
    fraction = args.sample / max(batched_total["elements"], 1)
    small_m, small_r = max(10, round(args.metrics * fraction)), max(5, round(args.rules * fraction))
    print(f"per-row baselines: {small_m:,} metrics, {small_r:,} rules each", file=sys.stderr)
    row_total = total(write_per_row(graph, Synth(ROW_DOMAIN, small_m, small_r, args.seed)))
    tx_total = total(write_per_row_grouped(graph, Synth(TX_DOMAIN, small_m, small_r, args.seed)))

    print(f"rules-for latency over {args.queries} random metrics ...", file=sys.stderr)
    lat = latency(graph, synth, args.queries, warmup=50, seed=args.seed)

    cleanup = {}
    if not args.keep:
        for d in (DOMAIN, ROW_DOMAIN, TX_DOMAIN):
            n, s = timed_delete_domain(graph, d)
            cleanup[d] = {"nodes_deleted": n, "seconds": round(s, 1)}

    batched_rate = batched_total["elements_per_s"]
    result = {
        "config": vars(args) | {"out": str(args.out)},
        "machine": {"python": platform.python_version(), "platform": platform.platform(), **server_info(graph),
                    "before": load_before, "after_batched_write": load_after_write, "at_end": machine_load()},
        "planning_s": round(gen_s, 2),
        "graph": {"domain": DOMAIN, "metrics": synth.metrics, "rules": synth.rules, "tables": synth.tables,
                  "edges_in_graph": edges_in_graph},
        "batched": {"total": batched_total, "steps": [asdict(s) | {"elements": s.elements} for s in batched_steps]},
        "rewrite_same_rows": {"counters": rewrite, "seconds": round(rewrite_s, 2)},
        "per_row_autocommit": row_total,
        "per_row_grouped_1000_per_tx": tx_total,
        "ratio_vs_per_row_autocommit": round(batched_rate / row_total["elements_per_s"], 1),
        "ratio_vs_per_row_grouped": round(batched_rate / tx_total["elements_per_s"], 1),
        "latency": lat,
        "cleanup": cleanup,
        "targets": {
            "batched_elements_per_s>=50000": batched_rate >= 50_000,
            "ratio_vs_per_row>=20": batched_rate / row_total["elements_per_s"] >= 20,
            "rules_for_p95_ms<=10": lat["rules_for"]["p95_ms"] <= 10,
            "edges>=1000000": edges_in_graph >= 1_000_000,
        },
    }
    print_report(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"\nwritten {args.out}")
    return result


def print_report(r: dict[str, Any]) -> None:
    b, a, g = r["batched"]["total"], r["per_row_autocommit"], r["per_row_grouped_1000_per_tx"]
    print(f"\nsynthetic graph {r['graph']['domain']}: {r['graph']['metrics']:,} metrics, {r['graph']['rules']:,} rules, "
          f"{r['graph']['tables']:,} tables; {b['nodes']:,} nodes + {b['relationships']:,} relationships written; "
          f"{r['graph']['edges_in_graph']:,} edges in the domain\n")
    print(f"{'write path':<44}{'elements':>12}{'seconds':>10}{'elements/s':>13}{'batched/this':>14}")
    rows = [("batched UNWIND (batch %d, %d workers)" % (r["config"]["batch"], r["config"]["workers"]), b),
            ("per-row MERGE, one tx per statement", a),
            ("per-row MERGE, 1000 statements per tx", g)]
    for label, t in rows:
        ratio = b["elements_per_s"] / t["elements_per_s"] if t["elements_per_s"] else float("nan")
        print(f"{label:<44}{t['elements']:>12,}{t['seconds']:>10.2f}{t['elements_per_s']:>13,.0f}{ratio:>14.1f}")
    rates = b.get("rates_of_all_runs", [])
    if len(rates) > 1:
        print(f"batched runs: {', '.join(f'{x:,.0f}' for x in rates)} elements/s; the median run is shown")
    print(f"\nbatched vs per-row (one tx each): {r['ratio_vs_per_row_autocommit']}x; "
          f"vs per-row grouped: {r['ratio_vs_per_row_grouped']}x")
    if "neo4j_cpu_s" in b:
        print(f"batched write: Neo4j used {b['neo4j_cpu_s']} CPU s in {b['seconds']} s of writes "
              f"({b['neo4j_cpu_share_of_wall']:.0%} of one CPU) = {b['elements_per_neo4j_cpu_s']:,.0f} elements "
              f"per Neo4j CPU second")
    m = r["machine"]
    print(f"load average (1/5/15 min) on {m['before']['cpus']} CPUs: before {m['before']['load_average_1_5_15']}, "
          f"after the batched write {m['after_batched_write']['load_average_1_5_15']}")
    print(f"second write of the same rows: counters {r['rewrite_same_rows']['counters'] or '{}'} "
          f"in {r['rewrite_same_rows']['seconds']} s")
    lat = r["latency"]
    print(f"\n{'rules-for latency (' + str(lat['samples']) + ' random metrics)':<44}{'p50 ms':>9}{'p95 ms':>9}"
          f"{'p99 ms':>9}{'max ms':>9}")
    for label, key in (("service.queries.rules_for", "rules_for"), ("rules_for_metric statement", "rules_for_metric_statement")):
        s = lat[key]
        print(f"{label:<44}{s['p50_ms']:>9.2f}{s['p95_ms']:>9.2f}{s['p99_ms']:>9.2f}{s['max_ms']:>9.2f}")
    print(f"rules per answer: mean {lat['rows_per_answer']['mean']}, max {lat['rows_per_answer']['max']}")
    print("\ntargets: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in r["targets"].items()))


if __name__ == "__main__":
    main()
