"""Evaluation results as plain data (JSON) and as a self-contained HTML section.

`result_to_dict` is the stored form of one router's evaluation; `render_section` turns a list of
them (plus the retrieval audit) into an HTML fragment with inline styles that the main HTML
report can embed as is. Every `routing eval` also keeps its result under the state directory
(one file per catalog and router, the latest wins), and `html_section` renders those for
`dibench report`.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any

from dibench.core.config import get_settings
from dibench.routing.evaluate import AuditRow, EvalResult
from dibench.routing.scoring import Summary


def results_dir() -> Path:
    return get_settings().state_dir / "routing" / "results"


def save_result(data: dict[str, Any]) -> Path:
    """Keep one evaluation's result for `dibench report` (replaces the catalog's earlier run of that router)."""
    path = results_dir() / f"{data['catalog']}__{data['router']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return path


def html_section() -> str | None:
    """The routing section of `dibench report`: one block per catalog evaluated, None when none was."""
    by_catalog: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(results_dir().glob("*.json")) if results_dir().is_dir() else []:
        data = json.loads(path.read_text())
        by_catalog[data["catalog"]].append(data)
    return "\n".join(render_section(rs) for _, rs in sorted(by_catalog.items())) or None

METRICS = (("ra_set", "RA-Set"), ("ra_graph", "RA-Graph"), ("ea_micro", "EA-Micro"),
           ("route_exec_graph", "Route+Exec-Graph"))
DIAGNOSTICS = (("precision", "precision"), ("recall", "recall"), ("over_selection", "over-selection"),
               ("under_selection", "under-selection"))


def _summary_dict(s: Summary) -> dict[str, Any]:
    d = asdict(s)
    d["by_behaviour"] = {b: {k: v for k, v in asdict(x).items() if k != "by_behaviour"}
                         for b, x in s.by_behaviour.items()}
    return d


def result_to_dict(result: EvalResult, audit: list[AuditRow], *, contracts: int, catalog: str) -> dict[str, Any]:
    return {
        "catalog": catalog, "router": result.router, "executor": result.executor, "contracts": contracts, "invalid_routes": result.invalid_routes,
        "clarifications_asked": result.asked, "summary": _summary_dict(result.summary),
        "intervals": {k: list(result.summary.interval(k)) for k, _ in METRICS},
        "retrieval_audit": [asdict(a) for a in audit],
        "tasks": [{"task_id": s.task_id, "behaviour": s.behaviour, "ra_set": s.ra_set, "ra_graph": s.ra_graph,
                   "ea_correct": s.ea[0], "ea_required": s.ea[1], "route_exec_graph": s.route_exec,
                   "precision": s.precision, "recall": s.recall} for s in result.scores],
    }


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def with_interval(s: Summary, metric: str) -> str:
    """`41.2% [37.9-44.6]`: the metric and its 95% Wilson interval."""
    lo, hi = s.interval(metric)
    return f"{pct(getattr(s, metric))} [{100 * lo:.1f}-{100 * hi:.1f}]"


_STYLE = ("border-collapse:collapse;margin:0.5em 0;font-family:sans-serif;font-size:13px",
          "border:1px solid #ccc;padding:3px 8px;text-align:right", "border:1px solid #ccc;padding:3px 8px;"
          "text-align:left;background:#f3f3f3")


def _table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    table, td, th = _STYLE
    head = "".join(f'<th style="{th}">{escape(h)}</th>' for h in header)
    first = td.replace("text-align:right", "text-align:left")  # row labels read better flush left
    body = "".join("<tr>" + "".join(f'<td style="{first if i == 0 else td}">{escape(c)}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return (f'<table style="{table}"><caption style="text-align:left;font-weight:bold">{escape(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def metrics_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    return [[r["router"], r.get("executor", "?"), str(r["summary"]["tasks"]), *(pct(r["summary"][k]) for k, _ in METRICS)]
            for r in results]


def render_section(results: list[dict[str, Any]]) -> str:
    """One <section> with the metrics, per-behaviour, diagnostics and retrieval-audit tables."""
    if not results:
        return "<section><h2>Multi-database source routing</h2><p>No routing evaluation yet.</p></section>"
    parts = ["<section>", "<h2>Multi-database source routing</h2>",
             f"<p>Catalog <code>{escape(results[0]['catalog'])}</code>, {results[0]['contracts']} contracts. "
             "Interactive tasks score two half-weight branches.</p>",
             _table("Routing metrics (EA by the named executor)", ["router", "EA executor", "tasks", *(n for _, n in METRICS)],
                    metrics_rows(results))]
    behaviours = sorted({b for r in results for b in r["summary"]["by_behaviour"]})
    for key, name in METRICS:
        rows = [[r["router"], *(pct(r["summary"]["by_behaviour"][b][key]) if b in r["summary"]["by_behaviour"]
                                else "-" for b in behaviours)] for r in results]
        parts.append(_table(f"{name} by behaviour", ["router", *behaviours], rows))
    parts.append(_table("Selection diagnostics", ["router", *(n for _, n in DIAGNOSTICS)],
                        [[r["router"], *(pct(r["summary"][k]) for k, _ in DIAGNOSTICS)] for r in results]))
    audit = results[0]["retrieval_audit"]
    parts.append(_table("Retrieval audit (BM25 over capability summaries, request as query)",
                        ["K", "Recall@K of required sources", "tasks with the complete set in top K"],
                        [[str(a["k"]), pct(a["recall"]), pct(a["complete"])] for a in audit]))
    parts.append("</section>")
    return "\n".join(parts)
