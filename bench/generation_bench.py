"""Generation benchmark: tasks per second, and the overhead ratio = pipeline wall time / total
time the SQL it ran spent in PostgreSQL, measured in the same run (target: ratio <= 1.25), at
paper scale (>= 731 tasks, demo data with >= 1M tickets, no LLM).

    .venv/bin/python bench/generation_bench.py                              # demo pack, 1M tickets
    .venv/bin/python bench/generation_bench.py --size 20000 --target 40     # a quick smoke run
    .venv/bin/python bench/generation_bench.py --pack tests/fixtures/minipack --size 0 --target 30

The pack (default `domains/demo`) is copied under another name and Postgres schema (default
`bench_gen`), so the bench never replaces a schema or graph domain anyone else uses: the
schema qualifier of every metric template and rule fragment is rewritten on the sqlglot tree.
The copy's data are generated with `--size` (the demo loader's ticket count; `--size 0` keeps
the pack's own loader options) unless `--reuse-data` finds the schema already loaded. The
copy is ingested into its own graph domain (deleted before the run, and after it unless
`--keep`), then `generation.pipeline.generate` runs in this process (one worker, as
`dibench generate` does by default).

What is timed, during `generate()` only:
- wall: the whole call (enumeration, selection, planning, the worker, augmentation, summary);
- SQL: every statement the warehouse engine sends, from cursor.execute() to its return (the
  server's execution plus the round trip: the result is transferred before execute() returns
  with psycopg's client-side cursors), through SQLAlchemy's cursor-execute events; the
  transaction bookkeeping of the read-only path (BEGIN READ ONLY, SET LOCAL, ROLLBACK) is
  counted separately. Also reported: the pipeline's own accounting (`sql_seconds`, around each
  execute_readonly call, which includes the read-only check's parse).
Results: a summary on stdout and `bench/results/generation.json`.
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
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlglot import exp

from generation.pipeline import generate
from ingest.database import load_database
from ingest.pack import Pack, load_pack, resolve_pack_path, split_front_matter
from ingest.pipeline import ingest_pack
from service.config import REPO_ROOT, get_settings
from service.graph import Graph, apply_schema, delete_domain
from service.errors import WarehouseError
from service.warehouse import Warehouse
from sqlops.dialect import DIALECT, parse, parse_expression, render

RESULTS = REPO_ROOT / "bench" / "results" / "generation.json"
TARGET_RATIO = 1.25
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


@contextmanager
def legacy_plan() -> Iterator[None]:
    """DIBENCH_GROUPED_PLAN=0 inside the block: one SQL statement per answer (and per slice)."""
    saved = os.environ.get("DIBENCH_GROUPED_PLAN")
    os.environ["DIBENCH_GROUPED_PLAN"] = "0"
    get_settings.cache_clear()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("DIBENCH_GROUPED_PLAN")
        else:
            os.environ["DIBENCH_GROUPED_PLAN"] = saved
        get_settings.cache_clear()


def legacy_run(pack: Pack, graph: Graph, args: argparse.Namespace) -> dict[str, Any]:
    """The same generation with one SQL statement per answer (a new run; same task keys)."""
    with legacy_plan(), sql_clock() as clock:
        started = time.perf_counter()
        summary = generate(pack, graph, target=args.target, seed=args.seed, workers=1,
                           min_per_type=args.min_per_type, new=True)
        wall = time.perf_counter() - started
    return {"tasks": summary.admitted, "wall_seconds": round(wall, 2), "sql_seconds": round(clock.seconds, 2),
            "sql_statements": clock.statements, "sql_plan": summary.sql_plan}


def print_comparison(grouped: dict[str, Any], legacy: dict[str, Any]) -> None:
    print(f"[bench] {'plan':8s} {'tasks':>6s} {'wall s':>8s} {'SQL st.':>8s} {'SQL s':>8s} {'tasks/s':>8s} {'wall/SQL':>9s}")
    for name, r in (("grouped", grouped), ("legacy", legacy)):
        print(f"[bench] {name:8s} {r['tasks']:6d} {r['wall_seconds']:8.1f} {r['sql_statements']:8d} "
              f"{r['sql_seconds']:8.1f} {r['tasks'] / r['wall_seconds']:8.3f} {r['wall_seconds'] / r['sql_seconds']:9.3f}")
    print(f"[bench] legacy / grouped: wall {legacy['wall_seconds'] / grouped['wall_seconds']:.2f}x, SQL statements "
          f"{legacy['sql_statements'] / grouped['sql_statements']:.2f}x, SQL time "
          f"{legacy['sql_seconds'] / grouped['sql_seconds']:.2f}x; same tasks: {legacy['tasks'] == grouped['tasks']}")


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
    ap.add_argument("--keep", action="store_true", help="keep the bench domain in the graph afterwards")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--compare-legacy", action="store_true",
                    help="after the timed run, time a second run with one SQL statement per answer "
                         "(DIBENCH_GROUPED_PLAN=0, the path before grouped planning) and print both side by side")
    args = ap.parse_args(argv)
    if get_settings().llm_provider:
        sys.exit("unset DIBENCH_LLM_PROVIDER: the benchmark measures generation without an LLM")
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

        with sql_clock() as clock:
            started = time.perf_counter()
            summary = generate(pack, graph, target=args.target, seed=args.seed, workers=1,
                               min_per_type=args.min_per_type,
                               progress=lambda m: print(f"[bench] {time.perf_counter() - started:8.1f}s {m}", flush=True))
            wall = time.perf_counter() - started
        variants = sum(1 for r in graph.read("tasks_for_run", run=summary.run_key))
        if args.compare_legacy:
            grouped = {"tasks": summary.admitted, "wall_seconds": round(wall, 2), "sql_seconds": round(clock.seconds, 2),
                       "sql_statements": clock.statements}
            result["legacy_plan"] = legacy_run(pack, graph, args)
            print_comparison(grouped, result["legacy_plan"])
        if not args.keep:
            delete_domain(graph, pack.name)
    graph.close()
    wh.dispose()

    ratio = wall / clock.seconds if clock.seconds else float("inf")
    result.update({
        "generation": {**summary.as_dict(), "admitted_with_variants": variants},
        "wall_seconds": round(wall, 2),
        "sql_seconds": round(clock.seconds, 2), "sql_statements": clock.statements,
        "bookkeeping_seconds": round(clock.bookkeeping_seconds, 2),
        "bookkeeping_statements": clock.bookkeeping_statements,
        "pipeline_sql_seconds": summary.sql_seconds,
        "tasks_per_second": round(summary.admitted / wall, 3),
        "tasks_with_variants_per_second": round(variants / wall, 3),
        "overhead_ratio": round(ratio, 3),
        "overhead_ratio_incl_bookkeeping": round(wall / (clock.seconds + clock.bookkeeping_seconds), 3),
        "targets": {"tasks": PAPER_TASKS, "overhead_ratio": TARGET_RATIO,
                    "tasks_ok": summary.admitted >= PAPER_TASKS, "overhead_ok": ratio <= TARGET_RATIO},
    })
    result["machine"]["load_average_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    g = result["generation"]
    print(f"[bench] {summary.admitted} tasks admitted ({variants} with oracle/no-rule variants) from "
          f"{g['skeletons']} skeletons, {result['data_rows']} {args.size_table}")
    print(f"[bench] wall {wall:.1f}s; SQL {clock.seconds:.1f}s in {clock.statements} statements "
          f"(+{clock.bookkeeping_seconds:.1f}s bookkeeping in {clock.bookkeeping_statements}); "
          f"pipeline's own SQL accounting {summary.sql_seconds}s")
    print(f"[bench] tasks/s {result['tasks_per_second']}; overhead ratio {result['overhead_ratio']} "
          f"(with bookkeeping {result['overhead_ratio_incl_bookkeeping']})")
    print(f"[bench] tasks >= {PAPER_TASKS}: {'PASS' if result['targets']['tasks_ok'] else 'FAIL'}; "
          f"overhead <= {TARGET_RATIO}: {'PASS' if result['targets']['overhead_ok'] else 'FAIL'}; "
          f"results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
