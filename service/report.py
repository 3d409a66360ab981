"""`dibench report`: one self-contained HTML file (inline CSS and SVG, no external assets).

Sections, as in the published study: the benchmark of each domain (tasks by tier and variant,
task mix by analysis type, metric x rule coverage heat map); accuracy of each evaluated agent by
domain, by analysis type and by knowledge tier (with a plot and 95% intervals), the chance levels
of the reference agents on the same tasks, matched variants and failure classes, read from
`dibench eval` output folders; the pairing ablation from `dibench ablation pairing -o FILE`
outputs; and the routing results kept by `dibench routing eval` (the routing section).
Collecting (graph and files) is separate from rendering (pure).
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path, PurePosixPath
from typing import Any

from dibench.core.contracts import ANALYSIS_TYPES
from dibench.core.errors import DibenchError, NotFound
from dibench.evaluation.ablation import PairingReport, variant_rows
from dibench.evaluation.chance import ChanceLevels, chance_columns, chance_rows
from dibench.evaluation.harness import EvalSummary, read_summary
from dibench.evaluation.plots import bar_chart, grouped_bars, heatmap
from dibench.evaluation.reporting_tables import FAILURE_CLASSES, TIER_ORDER, Bucket
from dibench.evaluation.scoring import Report
from dibench.evaluation.tasks import TaskRecord, load_tasks
from dibench.generation.shortcuts.audit import (AUDIT_COLUMNS, HOLDOUT_COLUMNS, HOLDOUT_TITLE, ShortcutAudit,
                                                audit_rows, holdout_rows)
from dibench.routing.report import html_section
from dibench.service.drift import latest_check
from dibench.stores.graph import Graph

NO_RULE = "(no rule)"


class ReportInputError(DibenchError):
    """An input of the report (results folder, ablation file) is missing or unreadable."""


@dataclass(frozen=True)
class DomainData:
    name: str
    tasks: list[TaskRecord]
    metrics: list[str]
    rules: list[str]
    edges: set[tuple[str, str]]  # verified (metric, rule)
    drift: dict[str, Any] | None = None  # the latest `dibench drift` check, if any


@dataclass(frozen=True)
class RunData:
    summary: EvalSummary
    report: Report
    path: Path
    chance: ChanceLevels | None = None  # the reference agents on the same tasks (chance.json)
    shortcuts: ShortcutAudit | None = None  # the best shortcut per family on the same tasks (shortcuts.json)

    @property
    def label(self) -> str:
        who = self.summary.agent if self.summary.agent not in ("llm", "command") else self.summary.model
        return f"{short_command(who)} @ {self.summary.domain}"


def short_command(label: str) -> str:
    """`command:/work/x/.venv/bin/python /home/me/agent.py --k 3` -> `command:python agent.py --k 3`: a
    report names an agent by its program, not by the folders of the machine it ran on."""
    return " ".join(PurePosixPath(w).name if w.startswith("/") else
                    (w.split(":", 1)[0] + ":" + PurePosixPath(w.split(":", 1)[1]).name
                     if w.startswith("command:/") else w) for w in label.split(" "))


@dataclass
class ReportData:
    domains: list[DomainData] = field(default_factory=list)
    runs: list[RunData] = field(default_factory=list)
    ablations: list[PairingReport] = field(default_factory=list)
    routing_html: str | None = None
    generated_at: str = ""


# ------------------------------------------------------------------------------ collecting
def find_runs(paths: Sequence[Path]) -> list[RunData]:
    """Every eval output folder (with summary.json and score.json) under the given paths."""
    runs = []
    for p in paths:
        if not p.exists():
            raise ReportInputError(f"{p}: no such results folder")
        found = sorted([p / "summary.json"] if (p / "summary.json").is_file() else p.rglob("summary.json"))
        if not found:
            raise ReportInputError(f"{p}: no summary.json (an output folder of `dibench eval`) in it")
        for s in found:
            score = s.parent / "score.json"
            if not score.is_file():
                raise ReportInputError(f"{s.parent}: summary.json without score.json")
            levels = s.parent / "chance.json"
            shortcuts = s.parent / "shortcuts.json"
            try:
                runs.append(RunData(read_summary(s), Report.model_validate_json(score.read_text(encoding="utf-8")),
                                    s.parent, ChanceLevels.model_validate_json(levels.read_text(encoding="utf-8"))
                                    if levels.is_file() else None,
                                    ShortcutAudit.model_validate_json(shortcuts.read_text(encoding="utf-8"))
                                    if shortcuts.is_file() else None))
            except ValueError as exc:
                raise ReportInputError(f"{s.parent}: unreadable result: {str(exc).splitlines()[0]}") from exc
    return runs


def read_ablation(path: Path) -> PairingReport:
    try:
        return PairingReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: not a pairing ablation result: {str(exc).splitlines()[0]}") from exc


def domain_data(graph: Graph, domain: str) -> DomainData:
    tasks = load_tasks(graph, domain)
    metrics = [r["metric"]["id"] for r in graph.read("eval_metrics", domain=domain)]
    rules = [r["rule"]["id"] for r in graph.read("eval_rules", domain=domain)]
    edges = {(e["metric_id"], e["rule_id"]) for e in graph.read("eval_rule_edges", domain=domain) if e["verified"]}
    try:
        drift: dict[str, Any] | None = latest_check(graph, domain)
    except NotFound:
        drift = None
    return DomainData(domain, tasks, metrics, rules, edges, drift)


def routing_section() -> str | None:
    """The routing results kept by `dibench routing eval`, one block per catalog (None when none)."""
    return html_section()


def collect(graph: Graph, *, domains: Sequence[str] = (), results: Sequence[Path] = (),
            ablations: Sequence[Path] = ()) -> ReportData:
    runs = find_runs(results)
    names = list(dict.fromkeys([*domains, *(r.summary.domain for r in runs)]))
    if not names:  # neither named: every domain that has tasks
        names = [str(r["name"]) for r in graph.read("report_domains")]
    if not names:
        raise NotFound("nothing to report: the graph holds no tasks",
                       hint="`dibench demo` generates some; or give --results of `dibench eval`")
    found: list[DomainData] = []
    for d in names:
        try:
            found.append(domain_data(graph, d))
        except NotFound:
            if d in domains:  # a domain asked for by name must be there
                raise
            # a run of a domain the graph no longer holds (removed since): its scores still show
    return ReportData(domains=found, runs=runs,
                      ablations=[read_ablation(p) for p in ablations], routing_html=routing_section(),
                      generated_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


# ------------------------------------------------------------------------------ rendering
CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;background:#fff}
h1{font-size:24px;border-bottom:3px solid #3b6fb6;padding-bottom:6px}
h2{font-size:19px;margin-top:34px;border-bottom:1px solid #ccc;padding-bottom:4px}
h3{font-size:15px;margin-top:22px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 9px;text-align:right}
th{background:#eef2f8}
td:first-child,th:first-child{text-align:left}
.note{color:#555;font-size:13px}
.plots{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.hi{background:#e6f2e6}.lo{background:#f8e6e6}
"""


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    th = "".join(f"<th>{escape(str(h))}</th>" for h in head)
    trs = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


@dataclass(frozen=True)
class Scored:
    """A score with the best shortcut's share of the same tasks beside it (None: no audit)."""

    bucket: Bucket
    shortcut_pct: float | None


def _cell(c: object) -> str:
    if isinstance(c, Scored):
        beside = ("" if c.shortcut_pct is None else
                  f'<br><span class="note chance">best shortcut {c.shortcut_pct:.1f}%</span>')
        return _cell(c.bucket).removesuffix("</td>") + beside + "</td>"
    if isinstance(c, Bucket):
        cls = ' class="hi"' if c.total and c.accuracy_pct >= 80 else (' class="lo"' if c.total and c.accuracy_pct < 20 else "")
        low, high = c.interval()
        return (f"<td{cls}>{c.accuracy_pct:.1f}% <span class=\"note\">[{low:.1f}, {high:.1f}] "
                f"({c.passed}/{c.total})</span></td>")
    return f"<td>{escape(str(c))}</td>"


def render_chance(runs: Sequence[RunData]) -> str:
    """Per run: accuracy by tier and analysis type with its interval and task count, beside the
    reference agents' accuracy on the same tasks."""
    parts = []
    for r in runs:
        if r.chance is None:
            continue
        head = ["group", *chance_columns(r.chance)]
        rows = chance_rows(r.report, r.chance, "tier") + chance_rows(r.report, r.chance, "analysis_type")
        parts += [f"<h3>{escape(r.label)}: against chance</h3>", _table(head, rows)]
    if not parts:
        return ""
    return "".join(["<h3>Chance levels</h3>",
                    '<p class="note">Each score with its 95% Wilson interval and task count, beside what trivial '
                    "strategies score on the same tasks: no-rule computes the plain metric, featured-rule-only "
                    "applies one rule at a time, keyword-dump lists every number and date of every document "
                    "(computed in the same run, without an LLM).</p>", *parts])


def render_shortcuts(runs: Sequence[RunData]) -> str:
    """Per run: the best no-understanding strategy per analysis type x tier x variant on the same
    tasks, beside the oracle: what the run's scores must beat."""
    parts = [f"<h3>{escape(r.label)}: best shortcut</h3>" + _table(AUDIT_COLUMNS, audit_rows(r.shortcuts))
             + render_holdout(r.shortcuts) for r in runs if r.shortcuts is not None]
    if not parts:
        return ""
    return "".join(["<h3>Best shortcut</h3>",
                    '<p class="note">What strategies that read no data (constants, the most common answer, the '
                    "question echoed, document dumps, the rule left out ...) score on the same tasks, with the 95% "
                    "Wilson interval, beside the oracle.</p>", *parts])


def render_holdout(audit: ShortcutAudit) -> str:
    """The hold-out strategies' table beside a run's audit (or the line saying why there is none)."""
    held = holdout_rows(audit)
    if isinstance(held, str):
        return f'<p class="note holdout">{escape(HOLDOUT_TITLE)}: {escape(held)}.</p>'
    return (f'<p class="note holdout">{escape(HOLDOUT_TITLE)} (best of '
            f"{audit.holdout.strategies if audit.holdout else 0}, on the knowledge tasks):</p>"
            + _table(HOLDOUT_COLUMNS, held))


def tier_chance(runs: Sequence[RunData]) -> list[float | None] | None:
    """Per tier, the share of tasks the best shortcut of each family passes, pooled over the
    families of the first run with an audit (an upper bound of any one strategy): the line a
    score on the chart must clear."""
    audit = next((r.shortcuts for r in runs if r.shortcuts is not None), None)
    return None if audit is None else [shortcut_share(audit, tier=tier) for tier in TIER_ORDER]


def shortcut_share(audit: ShortcutAudit | None, **match: str) -> float | None:
    """The share (%) of a group's tasks that the best shortcut of each family passes, pooled over
    the families of the group (those whose tier, analysis_type or variant equal `match`'s)."""
    if audit is None:
        return None
    cells = [c for c in audit.cells if all(getattr(c, k) == v for k, v in match.items())]
    tasks = sum(c.tasks for c in cells)
    return 100.0 * sum(c.best_passed for c in cells) / tasks if tasks else None


def _dash(b: Bucket | None, run: RunData | None = None, **match: str) -> object:
    if b is None:
        return "-"
    return b if run is None else Scored(b, shortcut_share(run.shortcuts, **match))


def render_domain(d: DomainData) -> str:
    standard = [t for t in d.tasks if t.variant == "standard"]
    tiers: Counter[str] = Counter(str(t.tier) for t in standard)
    variants: Counter[str] = Counter(str(t.variant) for t in d.tasks)
    mix: Counter[str] = Counter(str(t.analysis_type) for t in standard)
    cols = [*d.rules, NO_RULE]
    counts = [[0] * len(cols) for _ in d.metrics]
    for t in standard:
        if t.analysis_type == "knowledge_retrieval" or not t.metric_ids or t.metric_ids[0] not in d.metrics:
            continue
        r = d.metrics.index(t.metric_ids[0])
        for rule in (t.rule_ids or [NO_RULE]):
            if rule in cols:
                counts[r][cols.index(rule)] += 1
    marks = {(d.metrics.index(m), cols.index(r)) for m, r in d.edges if m in d.metrics and r in cols}
    parts = [f"<h2>Benchmark: {escape(d.name)}</h2>",
             _table(["", *TIER_ORDER, "all"], [["standard tasks", *(tiers.get(t, 0) for t in TIER_ORDER), len(standard)]]),
             _table(["variant", "tasks"], [[v, variants[v]] for v in ("standard", "oracle", "no_rule") if variants[v]]),
             '<div class="plots">',
             bar_chart([(a, float(mix[a])) for a in ANALYSIS_TYPES if mix[a]], title=f"Task mix ({d.name}, standard)"),
             heatmap(d.metrics, cols, counts, title=f"Metric x rule coverage ({d.name}): computed tasks",
                     marks=marks, mark_label="verified rule -> metric edge"),
             "</div>"]
    return "".join(parts)


def render_drift(d: DomainData) -> str:
    """The latest drift check: outcomes, and the tasks that moved by table and metric."""
    if d.drift is None:
        return ""
    moved: Counter[tuple[str, str, str]] = Counter()
    for t in d.drift["tasks"]:
        if t["outcome"] in ("drifted", "failed"):
            for table in t.get("changed_tables") or t.get("tables") or ["-"]:
                moved[(table, t["metric_id"], t["outcome"])] += 1
    c = d.drift["counts"]
    rows = [[tb, m, moved[(tb, m, "drifted")], moved[(tb, m, "failed")]]
            for tb, m in sorted({(tb, m) for tb, m, _o in moved})]
    return "".join([f"<h3>Data drift ({escape(d.name)}): check of {escape(str(d.drift['at']))}"
                    f"{', applied' if d.drift.get('applied') else ''}</h3>",
                    _table(["skipped (tables unchanged)", "unchanged", "drifted", "failed"],
                           [[c["skipped"], c["unchanged"], c["drifted"], c["failed"]]]),
                    _table(["table", "metric", "tasks drifted", "tasks failed"], rows) if rows else
                    '<p class="note">No task moved.</p>'])


def render_accuracy(runs: Sequence[RunData]) -> str:
    if not runs:
        return ("<h2>Accuracy</h2><p class=\"note\">No evaluation results given (run `dibench eval ... -o DIR` "
                "and pass `--results DIR`).</p>")
    labels = [r.label for r in runs]
    agents = list(dict.fromkeys(r.label.rsplit(" @ ", 1)[0] for r in runs))
    doms = list(dict.fromkeys(r.summary.domain for r in runs))

    def run_of(agent: str, domain: str) -> RunData | None:
        return next((r for r in runs if r.summary.domain == domain and r.label.rsplit(" @ ", 1)[0] == agent), None)

    by_domain = [[a, *(_dash(run.report.overall, run) if (run := run_of(a, d)) else "-" for d in doms)]
                 for a in agents]
    types = [t for t in ANALYSIS_TYPES if any(t in r.report.by_analysis_type for r in runs)]
    by_type = [[t, *(_dash(r.report.by_analysis_type.get(t), r, analysis_type=t) for r in runs)] for t in types]
    by_tier = [[t, *(_dash(r.report.by_tier.get(t), r, tier=t) for r in runs)] for t in TIER_ORDER]
    # One row per run: people (the review app's blind mode) beside the agents, tier by tier.
    tier_rows = [[r.label, *(_dash(r.report.by_tier.get(t), r, tier=t) for t in TIER_ORDER), r.summary.answered,
                  r.summary.tasks] for r in runs]
    var = [variant_rows(r.report) for r in runs]
    by_variant = [[v, *(_dash(vr.get(v), r, tier="K+A+R", variant=v) for vr, r in zip(var, runs))]
                  for v in ("standard", "oracle", "no_rule")]
    seen = {c for r in runs for c in r.report.failure_classes}
    classes = [c for c in FAILURE_CLASSES if c in seen] + sorted(seen - set(FAILURE_CLASSES))
    failures = [[c, *(r.report.failure_classes.get(c, 0) for r in runs)] for c in classes]
    settings = [[r.label, r.summary.model, r.summary.tasks, r.summary.answered, r.summary.max_turns,
                 "-" if r.summary.temperature is None else r.summary.temperature,
                 "-" if not r.summary.tokens else r.summary.tokens.get("total_tokens", 0), r.summary.started_at]
                for r in runs]
    plot = grouped_bars(list(TIER_ORDER), [(lab, [r.report.by_tier[t].accuracy_pct if t in r.report.by_tier else None
                                                  for t in TIER_ORDER]) for lab, r in zip(labels, runs)],
                        title="Accuracy by knowledge tier", markers=tier_chance(runs),
                        marker_label="best shortcut (each family's best, pooled per tier)")
    return "".join([
        "<h2>Accuracy</h2>",
        '<p class="note">Each score: accuracy, its 95% Wilson interval and passed/tasks; under it, the share of the '
        "same tasks that the best shortcut of each family passes (strategies that read no data), the level a score "
        "must clear.</p>",
        "<h3>By agent and domain</h3>", _table(["agent", *doms], by_domain),
        "<h3>By knowledge tier</h3>", _table(["tier", *labels], by_tier), plot,
        "<h3>People beside agents, by knowledge tier</h3>",
        '<p class="note">One row per run; the rows named people are answers given in the review app\'s blind mode '
        "(`dibench review serve`), scored by the same contracts.</p>",
        _table(["run", *TIER_ORDER, "answered", "tasks"], tier_rows),
        "<h3>By analysis type</h3>", _table(["analysis type", *labels], by_type),
        "<h3>Matched variants (rule tasks, K+A+R)</h3>",
        '<p class="note">standard: the agent must retrieve and apply the rule; oracle: the rule text is in the '
        "question; no_rule: the plain metric is the gold answer.</p>",
        _table(["variant", *labels], by_variant),
        render_chance(runs), render_shortcuts(runs),
        "<h3>Failure classes</h3>", _table(["class", *labels], failures), render_reliability(runs),
        "<h3>Runs</h3>", _table(["run", "model", "tasks", "answered", "max turns", "temperature", "tokens", "started"],
                                settings),
    ])


def render_reliability(runs: Sequence[RunData]) -> str:
    """pass@1, pass^k and pass@k (95% Wilson intervals) of the runs with several trials."""
    rows = []
    for r in runs:
        rel = r.report.reliability
        if rel is None:
            continue
        k = rel.trials
        for group, g in [("all", rel.overall), *rel.by_tier.items()]:
            last = g.by_k[-1]
            rows.append([r.label, k, group, g.tasks, f"{g.pass_at_1:.1f}",
                         f"{last.pass_hat_k:.1f} [{last.pass_hat_ci[0]:.1f}, {last.pass_hat_ci[1]:.1f}]",
                         f"{last.pass_at_k:.1f} [{last.pass_at_ci[0]:.1f}, {last.pass_at_ci[1]:.1f}]"])
    if not rows:
        return ""
    return ("<h3>Reliability over trials</h3><p class=\"note\">pass^k: all of k trials right (tau-bench); pass@k: "
            "at least one; k = the run's trials; 95% Wilson intervals over tasks.</p>"
            + _table(["run", "trials", "group", "tasks", "pass@1 %", "pass^k %", "pass@k %"], rows))


def render_ablations(ablations: Sequence[PairingReport]) -> str:
    if not ablations:
        return ""
    parts = ["<h2>Pairing ablation</h2>",
             '<p class="note">Share of re-pairings of a rule task\'s metric that change its answer: with the '
             "graph-selected rule, the most textually similar other rule (BM25), a random other rule. An operation "
             "that does not fit the metric counts as no change (column \"not applicable\"). A rule without an effect on "
             "the metric has its operations re-targeted to it; \"rule's own effect\" counts the pairings whose rule "
             "already modifies the metric. Published: 82% / 29% / 22%.</p>"]
    for a in ablations:
        scope = f"{a.tasks} rule tasks" + (f" ({a.tasks_rejected_by_filter} rejected by the counterfactual filter "
                                           "included)" if a.tasks_rejected_by_filter else "")
        parts.append(f"<h3>{escape(a.domain)}: {escape(scope)}, seed {a.seed}</h3>")
        parts.append(_table(["pairing", "pairings", "changed", "unchanged", "not applicable", "rule's own effect",
                             "changed %", "changed % of applicable", "published %"],
                            [[r.pairing, r.pairings, r.changed, r.unchanged, r.not_applicable, r.own_effect,
                              f"{r.changed_pct:.1f}", f"{r.changed_pct_of_applicable:.1f}", f"{r.published_pct:.0f}"]
                             for r in a.rows]))
    parts.append(grouped_bars([r.pairing for r in ablations[0].rows],
                              [(a.domain + (" (pre-filter)" if a.tasks_rejected_by_filter else ""),
                                [r.changed_pct for r in a.rows]) for a in ablations],
                              title="Pairings that change the answer", markers=[r.published_pct for r in ablations[0].rows],
                              marker_label="published"))
    return "".join(parts)


def render_html(data: ReportData) -> str:
    body = [f"<h1>dibench evaluation report</h1><p class=\"note\">Generated {escape(data.generated_at)}; domains: "
            f"{escape(', '.join(d.name for d in data.domains))}.</p>"]
    body += [render_domain(d) + render_drift(d) for d in data.domains]
    body.append(render_accuracy(data.runs))
    body.append(render_ablations(data.ablations))
    if data.routing_html:
        body.append(data.routing_html)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>dibench report</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(graph: Graph, output: Path, *, domains: Sequence[str] = (), results: Sequence[Path] = (),
                 ablations: Sequence[Path] = ()) -> ReportData:
    data = collect(graph, domains=domains, results=results, ablations=ablations)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_html(data), encoding="utf-8")
    return data
