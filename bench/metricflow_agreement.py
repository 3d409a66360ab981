"""dibench's rule-free answers against MetricFlow's own (`mf query`), on the Jaffle Shop.

    .venv/bin/python bench/metricflow_agreement.py [--months 2018-09,2018-12,2019-03]

MetricFlow runs from its own virtual environment (<state>/metricflow-venv, made from
scripts/metricflow-requirements.txt: dbt-core 1.10 cannot share the dev environment) on a tmp copy
of the shared dbt project, reading a DuckDB file `jaffle.duckdb` that the pack's own loader builds
in schema `dbt_sl_test` (what the project's profile and manifest name): no `dbt build`. dibench's
answer is the imported metric's template (a derived one's expression over its inputs) on the warehouse, grouped by each dimension
of the metric, over each month. Prints the agreement table: metric x grouping, compared, equal,
differing with examples. Tolerance: 0.005 absolute (answers rounded to 2 decimals either side)
or 1e-6 relative; for a task's gold, half a unit of the metric's last rounded digit. Then every
no-rule task's values (point query, comparison, threshold, ranking, decomposition) against
MetricFlow's for its metric, window and group (`--tasks`: the domain's tasks in the graph).
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
from dibench.sqlops.dialect import parse, parse_expression, render
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
    undefined: int = 0  # a division by zero: MetricFlow's DuckDB says +-inf or NaN, dibench NULL


UNDEFINED = {"inf", "-inf", "nan"}


def mf_python() -> Path:
    return get_settings().state_dir / "metricflow-venv" / "bin" / "python"


def prepare_project(tmp: Path) -> Path:
    """A writable copy of the shared dbt project with the DuckDB file MetricFlow reads."""
    project = tmp / "jaffle-project"
    shutil.copytree(get_settings().data_dir / "jaffle", project, ignore=shutil.ignore_patterns("jaffle.duckdb"))
    for p in [project, *project.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    target = DuckDBFile(project / "jaffle.duckdb")
    load(target, "dbt_sl_test")
    # The project's time spine (models/marts/time_spine.sql: ten years of days back from today)
    # over the data's years only: cumulative, offset and time-spine metrics read it.
    with target.connect() as conn:
        conn.execute("CREATE TABLE dbt_sl_test.time_spine AS SELECT CAST(d AS DATE) AS date_day, "
                     "CAST(date_trunc('quarter', d) AS DATE) AS almost_fiscal_quarter "
                     "FROM range(DATE '2018-01-01', DATE '2020-01-01', INTERVAL 1 DAY) AS t(d)")
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


def no_rows(wh: Warehouse, pack: Pack, metric_id: str) -> float | None:
    """A metric's value over no rows (its template with WHERE FALSE); None for a derived one."""
    m = pack.metric_by_id[metric_id]
    if m.derived is not None:
        return None
    tree = parse(m.template)
    tree.where(exp.false(), copy=False)
    value = wh.execute_readonly(render(tree), {"start_date": dt.date(2000, 1, 1), "end_date": dt.date(2000, 1, 2),
                                               **m.params}).rows[0][0]
    return None if value is None else float(value)


def anchor_day(month: str, period_agg: str) -> str:
    """The day of a month a cumulative metric's value is read at: its first or its last."""
    start = dt.date.fromisoformat(month + "-01")
    return str(start if period_agg == "first" else (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1))


def dibench_answers(wh: Warehouse, pack: Pack, metric_id: str, dimension: str | None,
                    month: str) -> dict[str, float | None]:
    """{group value ('' without a group): value} of the metric's template alone over `month`; a
    derived metric's expression over its inputs' answers, evaluated by the warehouse."""
    derived = pack.metric_by_id[metric_id].derived
    if derived is not None:
        inputs = {name: dibench_answers(wh, pack, mid, dimension, month) for name, mid in derived.inputs.items()}
        # A group one input has no rows for takes that input's value over no rows (a task's gold
        # for the group evaluates the input's template with the group's filter: 0 under COALESCE).
        empty = {name: no_rows(wh, pack, mid) for name, mid in derived.inputs.items()}
        keys = set.union(*(set(v) for v in inputs.values()))
        expression = parse_expression(derived.expression).transform(
            lambda n: exp.Placeholder(this=n.name) if isinstance(n, exp.Column) and n.name in inputs else n)
        statement = render(exp.select(exp.alias_(expression, "value")))
        out: dict[str, float | None] = {}
        for key in sorted(keys):
            values = {name: inputs[name].get(key, empty[name]) for name in inputs}
            result = None if None in values.values() else wh.execute_readonly(statement, values).rows[0][0]
            out[key] = None if result is None else float(result)
        return out
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


def read_on_a_day(manifest: list[dict[str, Any]]) -> dict[str, str]:
    """{cumulative metric: its period_agg} of each one read on one day of the period (first or last)."""
    aggs = {m["name"]: ((m["type_params"].get("cumulative_type_params") or {}).get("period_agg") or "first")
            for m in manifest if m["type"] == "cumulative"}
    return {name: agg for name, agg in aggs.items() if agg in ("first", "last")}


@dataclass(frozen=True)
class Plan:
    """The MetricFlow requests of an agreement check, one per (grouping, cumulative or not)."""

    groupings: list[str | None]
    chosen: dict[str | None, list[Any]]
    keys: list[tuple[str | None, bool]]
    requests: list[dict[str, list[str]]]
    as_of: dict[str, str]
    days: dict[tuple[str, str], str]
    names: dict[str, str]


def agreement_plan(project: Path, pack: Pack, months: tuple[str, ...] = MONTHS) -> Plan:
    """Every imported metric (not an input made for one) by each grouping MetricFlow names."""
    names = group_names(project)
    manifest = json.loads((project / "target" / "semantic_manifest.json").read_text())["metrics"]
    known = {m["name"] for m in manifest}
    # A cumulative metric's template reads the running value as of one day of the period (its
    # period_agg's): MetricFlow's value at that day is the one to compare (a mean over the period's
    # days is MetricFlow's month value).
    as_of = read_on_a_day(manifest)
    metrics = [m for m in pack.metrics if m.id.removeprefix("mf.") in known]  # not an input made for one
    groupings: list[str | None] = [None, *sorted({d for m in metrics for d in m.dimensions if d in names})]
    chosen = {d: [m for m in metrics if d is None or d in m.dimensions] for d in groupings}
    days = {(month, agg): anchor_day(month, agg) for month in months for agg in ("first", "last")}
    where = ["{{ TimeDimension('metric_time', 'day') }} IN (" +
             ", ".join(f"'{day}'" for day in sorted(set(days.values()))) + ")"]
    keys, requests = [], []
    for d in groupings:
        for cumulative in (False, True):
            wanted = [m.id.removeprefix("mf.") for m in chosen[d] if (m.id.removeprefix("mf.") in as_of) == cumulative]
            if wanted:
                keys.append((d, cumulative))
                requests.append({"metrics": wanted, "group_by": ["metric_time__day" if cumulative else
                                                                 "metric_time__month", *([names[d]] if d else [])],
                                 **({"where": where} if cumulative else {})})
    return Plan(groupings, chosen, keys, requests, as_of, days, names)


def agreement(project: Path, pack: Pack, wh: Warehouse, months: tuple[str, ...] = MONTHS,
              answered: list[list[dict[str, str | None]]] | None = None) -> list[Row]:
    """One Row per (metric, grouping) of every imported metric (all MetricFlow answers); with
    `answered`, MetricFlow's rows of `agreement_plan(...).requests`, asked by the caller."""
    plan = agreement_plan(project, pack, months)
    names, as_of, days = plan.names, plan.as_of, plan.days
    answers = dict(zip(plan.keys, answered if answered is not None else mf_queries(project, plan.requests)))
    rows: list[Row] = []
    for dimension in plan.groupings:
        for m in plan.chosen[dimension]:
            name = m.id.removeprefix("mf.")
            row = Row(m.id, dimension or "(none)")
            mf_rows = answers[(dimension, name in as_of)]
            time_key = "metric_time__day" if name in as_of else "metric_time__month"
            for month in months:
                ours = dibench_answers(wh, pack, m.id, dimension, month)
                prefix = days[(month, as_of[name])] if name in as_of else month
                theirs = {(r[names[dimension]] or "" if dimension else ""): r[name]
                          for r in mf_rows if str(r[time_key]).startswith(prefix)}
                for key in sorted(set(ours) | set(theirs)):
                    mine = ours.get(key)
                    raw = theirs.get(key)
                    other = float(raw) if raw not in (None, "") else None
                    if mine is None and other in (None, 0.0) and key not in ours:
                        continue  # a group with no rows in our window: MetricFlow may list it empty
                    if mine is None and str(raw).lower() in UNDEFINED:
                        row.undefined += 1  # not compared: neither side has a number
                        continue
                    row.compared += 1
                    if _close(mine, other) or (mine == 0.0 and raw in (None, "")):
                        # MetricFlow leaves an aggregate over no rows NULL (or has no row for it),
                        # without fill_nulls_with; the imported template COALESCEs it to 0
                        row.equal += 1
                    elif len(row.examples) < 2:
                        row.examples.append(f"{month} {key or 'all'}: dibench {mine} vs MetricFlow {other}")
            rows.append(row)
    return rows


# Analysis types whose no-rule answer holds metric values MetricFlow computes (trend and
# significance answers are a method over a series or over rows: not one of MetricFlow's values).
VALUE_TYPES = ("point_query", "comparison", "threshold_crossing", "ranking", "decomposition")


def task_values(rec: Any) -> list[tuple[str | None, float | None]]:
    """(group or None, value) pairs of a no-rule task's gold answer."""
    gold, facts = rec.gold_answer, rec.facts
    kind = rec.analysis_type
    if kind in ("point_query", "threshold_crossing"):
        return [(facts.get("group"), gold.get("value"))]
    if kind == "comparison":
        return [(gold["group_a"], gold["value_a"]), (gold["group_b"], gold["value_b"])]
    return [(r["group"], r["value"]) for r in gold.get("rows", [])]


def _key(value: Any) -> str:
    """A group label both sides write alike (11.0 and 11.00 are one price)."""
    text = _label(value)
    try:
        return repr(float(text)) if text not in ("True", "False", "") else text
    except ValueError:
        return text


def task_agreement(project: Path, pack: Pack, records: list[Any]) -> tuple[int, int, list[str], dict[str, int]]:
    """(values compared, equal, examples of differences, skipped by reason) of every no-rule task:
    its gold against MetricFlow's answer for its metric, window and group."""
    names = group_names(project)
    chosen, skipped = [], {}
    for rec in records:
        reason = None
        if rec.variant != "no_rule":
            continue
        if rec.analysis_type not in VALUE_TYPES:
            reason = f"{rec.analysis_type}: not a value MetricFlow computes"
        elif len(rec.metric_ids) != 1:
            reason = "more than one metric"
        elif any(g is not None for g, _ in task_values(rec)) and rec.dimension not in names:
            reason = "grouped by a dimension MetricFlow does not name"
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            chosen.append(rec)
    manifest = json.loads((project / "target" / "semantic_manifest.json").read_text())["metrics"]
    as_of = read_on_a_day(manifest)
    offset = {m["name"] for m in manifest if any(i.get("offset_window") or i.get("offset_to_grain")
                                                 for i in m["type_params"].get("metrics") or [])}
    where = "{{{{ TimeDimension('metric_time', 'day') }}}} >= '{start}' AND {{{{ TimeDimension('metric_time', 'day') }}}} < '{end}'"
    requests = []
    for r in list(chosen):
        name = r.metric_ids[0].removeprefix("mf.")
        group = [names[r.dimension]] if any(g is not None for g, _ in task_values(r)) else []
        start, end = dt.date.fromisoformat(str(r.facts["start"])), dt.date.fromisoformat(str(r.facts["end"]))
        if name in as_of:  # MetricFlow's value at the day the template reads
            day = start if as_of[name] == "first" else max(start, end - dt.timedelta(days=1))
            requests.append({"metrics": [name], "group_by": ["metric_time__day", *group],
                             "where": [where.format(start=day, end=day + dt.timedelta(days=1))]})
        elif name in offset:  # MetricFlow offsets at a time grain: the window must be one calendar month
            if start.day != 1 or end != (start + dt.timedelta(days=32)).replace(day=1):
                chosen.remove(r)
                reason = "an offset metric over a window that is not one calendar month"
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            requests.append({"metrics": [name], "group_by": ["metric_time__month", *group],
                             "where": [where.format(start=start, end=end)]})
        else:
            requests.append({"metrics": [name], "group_by": group, "where": [where.format(start=start, end=end)]})
    answers = mf_queries(project, requests) if requests else []
    compared = equal = 0
    examples: list[str] = []
    for rec, req, mf_rows in zip(chosen, requests, answers):
        metric = req["metrics"][0]
        by = [g for g in req["group_by"] if not g.startswith("metric_time__")]
        theirs = {(_key(r[by[0]]) if by else None): r[metric] for r in mf_rows}
        for group, value in task_values(rec):
            raw = theirs.get(_key(group) if group is not None else None)
            other = float(raw) if raw not in (None, "") else (0.0 if value == 0 else None)
            compared += 1
            # The gold is rounded to the metric's digits; MetricFlow's value is not.
            tol = 0.5 * 10 ** -pack.metric_by_id[rec.metric_ids[0]].rounding + 1e-9
            if value is not None and other is not None and abs(float(value) - other) <= tol:
                equal += 1
            elif len(examples) < 5:
                examples.append(f"{rec.task_id} {metric} {group}: task {value} vs MetricFlow {other}")
    return compared, equal, examples, skipped


def table(rows: list[Row]) -> str:
    lines = ["| metric | grouping | compared | equal | differing (examples) | x/0 (not compared) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r.metric} | {r.grouping} | {r.compared} | {r.equal} | {r.compared - r.equal}"
              f"{' (' + '; '.join(r.examples) + ')' if r.examples else ''} | {r.undefined} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", default=",".join(MONTHS), help="comma-separated YYYY-MM months")
    ap.add_argument("--tasks", action="store_true", help="also compare the no-rule tasks of jaffle in the graph")
    args = ap.parse_args()
    pack = load_pack("jaffle")
    with tempfile.TemporaryDirectory() as tmp:
        project = prepare_project(Path(tmp))
        rows = agreement(project, pack, get_warehouse(), tuple(args.months.split(",")))
        print(table(rows))
        ok = all(r.compared == r.equal for r in rows)
        if args.tasks:
            from dibench.evaluation.tasks import load_tasks
            from dibench.stores.graph import get_graph

            compared, equal, examples, skipped = task_agreement(project, pack, load_tasks(get_graph(), pack.name))
            print(f"\nno-rule tasks: {equal} of {compared} values equal MetricFlow's")
            for line in examples:
                print(f"  differs: {line}")
            for reason, n in sorted(skipped.items()):
                print(f"  not compared: {n} tasks ({reason})")
            ok = ok and compared == equal
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
