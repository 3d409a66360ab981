"""Generation benchmark: tasks per second with 1 and 2 workers side by side, the SQL they ran,
the graph transactions the driver had to retry, and P1 = wall time / SQL time, at paper scale
(>= 731 tasks, demo data with >= 1M tickets, no LLM), all in one run.

    .venv/bin/python bench/generation_bench.py                              # demo pack, 1M tickets
    .venv/bin/python bench/generation_bench.py --size 200000 --reuse-data   # 200k tickets, loaded once
    .venv/bin/python bench/generation_bench.py --size 20000 --target 40     # a quick smoke run
    .venv/bin/python bench/generation_bench.py --configs 1w                 # one configuration only
    .venv/bin/python bench/generation_bench.py --pack tests/fixtures/minipack --size 0 --target 30

The pack (default `domains/demo`) is copied under another name and Postgres schema (default
`bench_gen`), so the bench never replaces a schema or graph domain anyone else uses: the
schema qualifier of every metric template and rule fragment is rewritten on the sqlglot tree.
The copy's data are generated with `--size` (the demo loader's ticket count; `--size 0` keeps
the pack's own loader options) unless `--reuse-data` finds the schema already loaded. The
copy is ingested into its own graph domain once (deleted before the run, and after it unless
`--keep`).

Then each configuration of CONFIGS (one row each; `--configs` picks some) runs one
`generation.pipeline.generate` call on that domain, after the tasks of the configuration before
it were deleted (so each writes the same tasks from scratch; the artifact graph stays).
Reported per configuration:
- wall: the whole call (enumeration, selection, planning, the workers, augmentation, summary);
- SQL statements and seconds: the workers' own accounting (`Executor`: around each read-only
  execution, in whatever process the worker runs; cached results are not statements), summed
  over workers. P1 = wall / (SQL seconds / workers): the time beyond what the SQL itself needs
  (target <= 1.25). For the inline 1-worker configuration, the time inside cursor.execute()
  (SQLAlchemy cursor events; BEGIN/SET LOCAL/ROLLBACK counted apart) is reported as well;
- write retries: graph transactions the Neo4j driver ran again after a transient error, by
  error code, in the driver and all workers; deadlocks are the DeadlockDetected ones;
- tasks/s and the speed-up over the 1-worker run on the same path (2w over 1w, 2w-serial over
  1w-serial, 2w-legacy over 1w-legacy; target: 2 workers >= 1.6x), blank without that run.
Results: a table on stdout and `bench/results/generation.json`.
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
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlglot import exp

from dibench.core.config import REPO_ROOT, get_settings
from dibench.core.errors import WarehouseError
from dibench.core.pack import Pack, load_pack, resolve_pack_path, split_front_matter
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.sqlops.dialect import DIALECT, parse, parse_expression, render
from dibench.stores.graph import Graph, apply_schema, delete_domain
from dibench.stores.warehouse import Warehouse

RESULTS = REPO_ROOT / "bench" / "results" / "generation.json"
TARGET_RATIO = 1.25
TARGET_SPEEDUP = 1.6
PAPER_TASKS = 731
EFFECT_SQL_FIELDS = ("predicate", "weight", "expression", "count")
BOOKKEEPING = ("BEGIN", "SET LOCAL", "ROLLBACK")


# ------------------------------------------------------------------------------ the pack copy
def requalify(tree: exp.Expression, old: str, new: str) -> exp.Expression:
    """Every table of schema `old` read from schema `new` (on the tree; nothing else changes)."""
    for t in tree.find_all(exp.Table):
        if t.db == old:
            t.set("db", exp.to_identifier(new))
    return tree


def copy_pack(src: Path, dst: Path, name: str) -> Path:
    """The pack at `src` as pack `name` with Postgres schema `name`, in `dst`."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((dst / "pack.yaml").read_text())
    old = spec["schema"]
    spec["name"] = spec["schema"] = name
    (dst / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    metrics_file = dst / spec.get("metrics", "metrics.yaml")
    catalog = yaml.safe_load(metrics_file.read_text())
    for m in catalog["metrics"]:
        m["sql"] = render(requalify(parse(m["sql"], where=f"metric {m['id']}"), old, name))
    metrics_file.write_text(yaml.safe_dump(catalog, sort_keys=False))
    for doc in sorted((dst / spec.get("rules", "rules")).glob("*.md")):
        head, body = split_front_matter(doc.read_text())
        if head is None:
            continue
        front = yaml.safe_load(head)
        for eff in front.get("effects") or []:
            for f in EFFECT_SQL_FIELDS:
                if isinstance(eff.get(f), str):
                    tree = requalify(parse_expression(eff[f], where=f"{doc.name}: {f}"), old, name)
                    eff[f] = tree.sql(dialect=DIALECT)
        doc.write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body)
    return dst


# ------------------------------------------------------------------------------ SQL timing
@dataclass
class SqlClock:
    """Time inside cursor.execute() of every statement sent through SQLAlchemy in this process."""

    seconds: float = 0.0
    statements: int = 0
    bookkeeping_seconds: float = 0.0
    bookkeeping_statements: int = 0
    _started: dict[int, float] = field(default_factory=dict)

    def before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self._started[id(cursor)] = time.perf_counter()

    def after(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        elapsed = time.perf_counter() - self._started.pop(id(cursor), time.perf_counter())
        if statement.lstrip().upper().startswith(BOOKKEEPING):
            self.bookkeeping_seconds += elapsed
            self.bookkeeping_statements += 1
        else:
            self.seconds += elapsed
            self.statements += 1


@contextmanager
def sql_clock() -> Iterator[SqlClock]:
    clock = SqlClock()
    event.listen(Engine, "before_cursor_execute", clock.before)
    event.listen(Engine, "after_cursor_execute", clock.after)
    try:
        yield clock
    finally:
        event.remove(Engine, "before_cursor_execute", clock.before)
        event.remove(Engine, "after_cursor_execute", clock.after)


# ------------------------------------------------------------------------------ the run
def loaded_rows(wh: Warehouse, pack: Pack, table: str) -> int | None:
    query = exp.select(exp.func("COUNT", exp.Star())).from_(exp.table_(table, db=pack.schema))
    try:
        res = wh.execute_readonly(render(query), {}, schema=pack.schema)
    except WarehouseError:  # no such schema or table yet: the loader builds it
        return None
    return int(res.rows[0][0])


@dataclass(frozen=True)
class Config:
    """One row of the table: how `generate` runs. `env` holds environment variables (DIBENCH_*
    settings, PGOPTIONS) set for the duration of the run only; worker processes inherit them."""

    name: str
    label: str
    workers: int
    env: dict[str, str] = field(default_factory=dict)


# Every worker statement planned without parallel workers. By default a worker allows CPUs //
# workers - 1 of them (generation.workers.statement_parallelism: 1 for one worker and 0 for two
# on 2 CPUs), SET LOCAL in its transaction, which PGOPTIONS would not override.
SERIAL_SQL = {"DIBENCH_SQL_PARALLEL_WORKERS": "0"}
LEGACY_PLAN = {"DIBENCH_GROUPED_PLAN": "0"}
CONFIGS = (
    Config("1w", "1 worker", 1),
    Config("2w", "2 workers", 2),
    # Not run by default: one worker without PostgreSQL's parallel query (2w-serial is 2w on 2 CPUs).
    Config("1w-serial", "1 worker, serial SQL", 1, SERIAL_SQL),
    Config("2w-serial", "2 workers, serial SQL", 2, SERIAL_SQL),
    # The path before grouped planning (one SQL statement per answer), for the ratio; --compare-legacy.
    Config("1w-legacy", "1 worker, one statement per answer", 1, LEGACY_PLAN),
    Config("2w-legacy", "2 workers, one statement per answer", 2, LEGACY_PLAN),
)
DEFAULT_CONFIGS = "1w,2w"


@contextmanager
def settings_env(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    get_settings.cache_clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()


def legacy_plan() -> AbstractContextManager[None]:
    """One SQL statement per answer (and per slice) inside the block (ingest_demo_bench.py)."""
    return settings_env(LEGACY_PLAN)


def reset_tasks(graph: Graph, domain: str, batch: int = 5_000) -> None:
    while graph.write("bench_delete_tasks", domain=domain, limit=batch).get("nodes_deleted", 0):
        pass


def run_config(cfg: Config, pack: Pack, graph: Graph, args: argparse.Namespace) -> dict[str, Any]:
    reset_tasks(graph, pack.name)
    print(f"[bench] {cfg.label}: generating ...", flush=True)
    with settings_env(cfg.env), sql_clock() as clock:
        started = time.perf_counter()
        summary = generate(pack, graph, target=args.target, seed=args.seed, workers=cfg.workers,
                           min_per_type=args.min_per_type, new=True,
                           progress=lambda m: print(f"[bench] {cfg.name} {time.perf_counter() - started:8.1f}s {m}",
                                                    flush=True))
        wall = time.perf_counter() - started
    variants = len(graph.read("tasks_for_run", run=summary.run_key))
    per_worker_sql = summary.sql_seconds / max(1, cfg.workers)
    return {
        "config": cfg.name, "label": cfg.label, "workers": cfg.workers, "env": cfg.env,
        "generation": summary.as_dict(), "tasks": summary.admitted, "tasks_with_variants": variants,
        "skeletons": summary.skeletons, "wall_seconds": round(wall, 2),
        "sql_statements": summary.sql_statements, "sql_seconds": summary.sql_seconds,
        "tasks_per_second": round(summary.admitted / wall, 3),
        "write_retries": summary.write_retries, "deadlocks": summary.deadlocks,
        "p1": round(wall / per_worker_sql, 3) if per_worker_sql else None,
        # Only SQL sent from this process: all of it with the inline worker, little otherwise.
        "driver_process_sql": {"seconds": round(clock.seconds, 2), "statements": clock.statements,
                               "bookkeeping_seconds": round(clock.bookkeeping_seconds, 2),
                               "bookkeeping_statements": clock.bookkeeping_statements},
    }


COLUMNS = (("config", "label", "{}"), ("tasks", "tasks", "{}"), ("wall s", "wall_seconds", "{:.1f}"),
           ("SQL stmts", "sql_statements", "{}"), ("SQL s", "sql_seconds", "{:.1f}"),
           ("tasks/s", "tasks_per_second", "{:.3f}"), ("speed-up", "speedup", "{:.2f}x"),
           ("retries", "retry_total", "{}"), ("deadlocks", "deadlocks", "{}"), ("P1", "p1", "{:.3f}"))


def table(rows: list[dict[str, Any]]) -> str:
    """The rows side by side, one line per configuration."""
    cells = [[h for h, _, _ in COLUMNS]] + [
        ["-" if r.get(k) is None else f.format(r[k]) for _, k, f in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in cells)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", default="demo", help="pack name or path (default: demo)")
    ap.add_argument("--name", default="bench_gen", help="domain name and Postgres schema of the copy")
    ap.add_argument("--size", type=int, default=1_000_000, help="loader size (demo: tickets); 0 = pack default")
    ap.add_argument("--size-table", default="tickets", help="table whose row count --size sets (checked)")
    ap.add_argument("--reuse-data", action="store_true", help="keep the copy's schema if it holds --size rows")
    ap.add_argument("--target", type=int, default=200, help="skeletons picked by MMR selection")
    ap.add_argument("--min-per-type", type=int, default=3, help="augmentation minimum per analysis type")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="comma-separated configurations to run, in order: " + ", ".join(
                        f"{c.name} ({c.label})" for c in CONFIGS))
    ap.add_argument("--keep", action="store_true", help="keep the bench domain in the graph afterwards")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--compare-legacy", action="store_true",
                    help="also run each chosen 1w/2w configuration with one SQL statement per answer "
                         "(DIBENCH_GROUPED_PLAN=0, the path before grouped planning), side by side")
    args = ap.parse_args(argv)
    if get_settings().llm_provider or get_settings().llm:
        sys.exit("unset DIBENCH_LLM / DIBENCH_LLM_PROVIDER: the benchmark measures generation without an LLM")
    by_name = {c.name: c for c in CONFIGS}
    unknown = [n for n in args.configs.split(",") if n not in by_name]
    if unknown:
        sys.exit(f"--configs: unknown configuration(s) {unknown}; known: {sorted(by_name)}")
    names = args.configs.split(",")
    if args.compare_legacy:
        names += [f"{n}-legacy" for n in names if f"{n}-legacy" in by_name and f"{n}-legacy" not in names]
    configs = [by_name[n] for n in names]
    os.environ.pop("DIBENCH_LEASE_S", None)

    src = resolve_pack_path(args.pack)
    graph, wh = Graph(), Warehouse()
    result: dict[str, Any] = {"pack": str(src.relative_to(REPO_ROOT) if src.is_relative_to(REPO_ROOT) else src),
                              "domain": args.name, "seed": args.seed, "target": args.target,
                              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                          "load_average_before": list(os.getloadavg())}}
    with tempfile.TemporaryDirectory() as tmp:
        pack = load_pack(copy_pack(src, Path(tmp) / args.name, args.name))
        size = args.size or None
        rows = loaded_rows(wh, pack, args.size_table)
        if args.reuse_data and rows is not None and (size is None or rows == size):
            print(f"[bench] reusing schema {pack.schema}: {rows} {args.size_table}", flush=True)
            result["load"] = {"reused": True}
        else:
            print(f"[bench] loading {pack.schema} (size {size or 'pack default'}) ...", flush=True)
            result["load"] = load_database(pack, wh, size=size, seed=args.seed)
            print(f"[bench] loaded in {result['load']['seconds']}s: {result['load'].get('tables')}", flush=True)
        result["data_rows"] = loaded_rows(wh, pack, args.size_table)
        apply_schema(graph)
        delete_domain(graph, pack.name)
        started = time.perf_counter()
        report = ingest_pack(pack, graph, wh)
        result["ingest"] = {"seconds": round(time.perf_counter() - started, 2), "verified": report.verified,
                            "unverified": report.unverified}
        print(f"[bench] ingested in {result['ingest']['seconds']}s ({report.verified} verified edges)", flush=True)
        runs = [run_config(cfg, pack, graph, args) for cfg in configs]
        if not args.keep:
            delete_domain(graph, pack.name)
    graph.close()
    wh.dispose()

    by_config = {r["config"]: r for r in runs}
    for r in runs:
        # Against the 1-worker run on the same path (2w-serial against 1w-serial), whatever the order.
        one = by_config.get("1w" + r["config"][2:]) if r["config"].startswith(("1w", "2w")) else None
        r["speedup"] = round(r["tasks_per_second"] / one["tasks_per_second"], 3) \
            if one is not None and one["tasks_per_second"] else None
        r["retry_total"] = sum(r["write_retries"].values())
    result["runs"] = runs
    paired = [r for r in runs if r["workers"] == 2 and r["speedup"] is not None]  # a 1-worker run to compare with
    result["targets"] = {"tasks": PAPER_TASKS, "p1": TARGET_RATIO, "speedup_2_workers": TARGET_SPEEDUP,
                         "tasks_ok": all(r["tasks"] >= PAPER_TASKS for r in runs),
                         "p1_ok": all(r["p1"] is not None and r["p1"] <= TARGET_RATIO for r in runs),
                         "speedup_ok": all(r["speedup"] >= TARGET_SPEEDUP for r in paired) if paired else None,
                         "no_deadlocks": all(r["deadlocks"] == 0 for r in runs)}
    result["machine"]["load_average_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"[bench] {result['data_rows']} {args.size_table}; ingest {result['ingest']['seconds']}s; "
          f"load average {result['machine']['load_average_before'][0]:.1f} before, "
          f"{result['machine']['load_average_after'][0]:.1f} after")
    print(table(runs))
    t = result["targets"]
    print(f"[bench] tasks >= {PAPER_TASKS}: {'PASS' if t['tasks_ok'] else 'FAIL'}; P1 <= {TARGET_RATIO}: "
          f"{'PASS' if t['p1_ok'] else 'FAIL'}; 2 workers >= {TARGET_SPEEDUP}x the 1-worker run: "
          f"{'n/a (no pair of runs)' if t['speedup_ok'] is None else 'PASS' if t['speedup_ok'] else 'FAIL'}; "
          f"no deadlock retries: {'PASS' if t['no_deadlocks'] else 'FAIL'}; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
