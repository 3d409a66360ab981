"""dibench's rule-free answers against MetricFlow's own (`mf query`), on the Jaffle Shop.

    .venv/bin/python bench/metricflow_agreement.py [--months 2018-09,2018-12,2019-03]

MetricFlow runs from its own virtual environment (<state>/metricflow-venv, made from
scripts/metricflow-requirements.txt: dbt-core 1.10 cannot share the dev environment) on a tmp copy
of the shared dbt project, reading a DuckDB file `jaffle.duckdb` that the pack's own loader builds
in schema `dbt_sl_test` (what the project's profile and manifest name): no `dbt build`. dibench's
answer is the imported metric's template on the configured warehouse, grouped by each dimension
of the metric, over each month. Prints the agreement table: metric x grouping, compared, equal,
differing with examples. Tolerance: 0.005 absolute (answers rounded to 2 decimals either side)
or 1e-6 relative.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlglot import exp

from dibench.core.config import get_settings
from dibench.core.pack import Pack, load_pack
from dibench.domains.jaffle.load import load
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.shape import group_by
from dibench.stores.duckdb_warehouse import DuckDBFile
from dibench.stores.warehouse import Warehouse, get_warehouse

MONTHS = ("2018-09", "2018-12", "2019-03")
ABS_TOL, REL_TOL = 0.005, 1e-6


@dataclass
class Row:
    metric: str
    grouping: str
    compared: int = 0
    equal: int = 0
    examples: list[str] = field(default_factory=list)


def mf_python() -> Path:
    return get_settings().state_dir / "metricflow-venv" / "bin" / "python"


def prepare_project(tmp: Path) -> Path:
    """A writable copy of the shared dbt project with the DuckDB file MetricFlow reads."""
    project = tmp / "jaffle-project"
    shutil.copytree(get_settings().data_dir / "jaffle", project, ignore=shutil.ignore_patterns("jaffle.duckdb"))
    for p in [project, *project.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    load(DuckDBFile(project / "jaffle.duckdb"), "dbt_sl_test")
    return project


def group_names(project: Path) -> dict[str, str]:
    """pack dimension (table.column) -> MetricFlow group-by name (primary entity__dimension)."""
    manifest = json.loads((project / "target" / "semantic_manifest.json").read_text())
    out: dict[str, str] = {}
    for model in manifest["semantic_models"]:
        table = model["node_relation"]["alias"]
        primary = next((e["name"] for e in model["entities"] if e["type"] == "primary"), None)
        if primary is None:
            continue
        for dim in model["dimensions"]:
            if dim["type"] != "categorical":
                continue
            column = dim.get("expr") or dim["name"]
            out[f"{table}.{column}"] = f"{primary}__{dim['name']}"
    return out


def mf_queries(project: Path, requests: list[dict[str, list[str]]]) -> list[list[dict[str, str | None]]]:
    """MetricFlow's rows of each request, from one MetricFlow process (scripts/mf_answers.py)."""
    if not mf_python().is_file():
        raise RuntimeError(f"{mf_python()} is missing: run scripts/install.sh (it builds MetricFlow's environment)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(project), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    done = subprocess.run([str(mf_python()), str(Path(__file__).resolve().parents[1] / "scripts" / "mf_answers.py"),
                           str(project)], input=json.dumps(requests), cwd=project, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"MetricFlow failed: {done.stderr[-800:]}")
    return [[dict(zip(t["columns"], row)) for row in t["rows"]] for t in json.loads(done.stdout)]


def dibench_answers(wh: Warehouse, pack: Pack, metric_id: str, dimension: str | None,
                    month: str) -> dict[str, float | None]:
    """{group value ('' without a group): value} of the metric's template alone over `month`."""
    start = dt.date.fromisoformat(month + "-01")
    end = (start + dt.timedelta(days=32)).replace(day=1)
    tree = parse(pack.metric_by_id[metric_id].template)
    params = {"start_date": start, "end_date": end, **pack.metric_by_id[metric_id].params}
    if dimension is None:
        res = wh.execute_readonly(render(tree), params)
        return {"": None if res.rows[0][0] is None else float(res.rows[0][0])}
    table, column = dimension.split(".")
    res = wh.execute_readonly(render(group_by(tree, exp.column(column, table=table), with_count=False)), params)
    return {_label(r[0]): (None if r[1] is None else float(r[1])) for r in res.rows}


def _label(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a == b
    return abs(a - b) <= max(ABS_TOL, REL_TOL * max(abs(a), abs(b)))


def agreement(project: Path, pack: Pack, wh: Warehouse, months: tuple[str, ...] = MONTHS) -> list[Row]:
    """One Row per (metric, grouping) of every simple and ratio metric MetricFlow answers."""
    names = group_names(project)
    metrics = [m for m in pack.metrics if m.derived is None]
    groupings: list[str | None] = [None, *sorted({d for m in metrics for d in m.dimensions if d in names})]
    chosen = {d: [m for m in metrics if d is None or d in m.dimensions] for d in groupings}
    answers = mf_queries(project, [{"metrics": [m.id.removeprefix("mf.") for m in chosen[d]],
                                    "group_by": ["metric_time__month", *([names[d]] if d else [])]} for d in groupings])
    rows: list[Row] = []
    for dimension, mf_rows in zip(groupings, answers):
        for m in chosen[dimension]:
            row = Row(m.id, dimension or "(none)")
            for month in months:
                ours = dibench_answers(wh, pack, m.id, dimension, month)
                theirs = {(r[names[dimension]] or "" if dimension else ""): r[m.id.removeprefix("mf.")]
                          for r in mf_rows if str(r["metric_time__month"]).startswith(month)}
                for key in sorted(set(ours) | set(theirs)):
                    mine = ours.get(key)
                    raw = theirs.get(key)
                    other = float(raw) if raw not in (None, "") else None
                    if mine is None and other in (None, 0.0) and key not in ours:
                        continue  # a group with no rows in our window: MetricFlow may list it empty
                    row.compared += 1
                    if _close(mine, other):
                        row.equal += 1
                    elif len(row.examples) < 2:
                        row.examples.append(f"{month} {key or 'all'}: dibench {mine} vs MetricFlow {other}")
            rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| metric | grouping | compared | equal | differing (examples) |", "|---|---|---|---|---|"]
    lines += [f"| {r.metric} | {r.grouping} | {r.compared} | {r.equal} | {r.compared - r.equal}"
              f"{' (' + '; '.join(r.examples) + ')' if r.examples else ''} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", default=",".join(MONTHS), help="comma-separated YYYY-MM months")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = prepare_project(Path(tmp))
        rows = agreement(project, load_pack("jaffle"), get_warehouse(), tuple(args.months.split(",")))
    print(table(rows))
    return 0 if all(r.compared == r.equal for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
