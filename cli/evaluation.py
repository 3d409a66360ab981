"""`dibench score`, `eval`, `ablation` and `report`: thin click layers over evaluation.scoring,
evaluation.harness, evaluation.ablation and service.report.

Registered on `cli.main.main` by cli/main.py; imports only cli.common and the evaluation stages
(never another command module).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from dibench.cli.common import (console, err_console, get_settings, handle_errors, print_json,
                                 print_shortcut_audit, print_table, working)
from dibench.core.errors import DibenchError
from dibench.evaluation.reporting_tables import bucket_rows

if TYPE_CHECKING:
    from dibench.evaluation.agents.llm import Budget
    from dibench.evaluation.chance import ChanceLevels
    from dibench.evaluation.mcp_session import Session
    from dibench.evaluation.scoring import Report


@click.command("score")
@click.argument("tasks", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("answers", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of tables.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the JSON report to FILE.")
@click.option("--chance/--no-chance", default=True, show_default=True,
              help="Also run the reference agents no-rule, featured-rule-only and keyword-dump on the same tasks "
                   "(needs the tasks' warehouse and graph) and show their accuracy beside the answers'.")
def score(tasks: Path, answers: Path, as_json: bool, output: Path | None, chance: bool) -> None:
    """Score ANSWERS (JSONL of {task_id, answer}) against TASKS (JSONL task records).

    Prints one verdict per task with its reason and failure class, then accuracy overall and by
    domain, analysis type, knowledge tier and variant, each with its 95% (Wilson) interval; by
    tier and analysis type, beside the chance levels of the reference agents. A task with no
    answer line fails as no_answer.
    """

    handle_errors(_score)(tasks, answers, as_json, output, chance)


def _score(tasks: Path, answers: Path, as_json: bool, output: Path | None, chance: bool = True) -> None:
    from dibench.service import library

    report = library.score(tasks, answers)
    data = report.model_dump(mode="json")
    levels = None
    if chance:
        try:
            with working("chance levels: running the reference agents on the same tasks", quiet=as_json):
                levels = library.chance_levels(tasks)
        except DibenchError as exc:
            err_console.print(f"chance levels not computed: {str(exc).splitlines()[0]} (--no-chance skips them)",
                              highlight=False, soft_wrap=True)
        else:
            data["chance_levels"] = levels.model_dump(mode="json")
    shortcuts = None
    try:
        shortcuts = library.shortcut_audit(tasks)
    except DibenchError as exc:
        err_console.print(f"shortcut audit not computed: {str(exc).splitlines()[0]}", highlight=False, soft_wrap=True)
    else:
        data["shortcut_audit"] = shortcuts.model_dump(mode="json")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if as_json:
        print_json(data)
    else:
        print_report(report, levels)
        print_shortcut_audit(shortcuts)


COLUMNS = ["tasks", "passed", "accuracy %", "95% CI"]


def print_chance_tables(report: Report, chance: ChanceLevels | None) -> None:
    """Accuracy by knowledge tier and by analysis type, each with its interval and task count,
    beside what the reference agents score on the same tasks."""
    from dibench.evaluation.chance import chance_columns, chance_rows

    columns = chance_columns(chance)
    print_table("by knowledge tier (all variants)", ["tier", *columns], chance_rows(report, chance, "tier"))
    print_table("by analysis type", ["analysis type", *columns], chance_rows(report, chance, "analysis_type"))
    if chance is not None:
        click.echo("chance levels: no-rule computes the plain metric, featured-rule-only one rule at a time, "
                   "keyword-dump lists every number and date of every document; computed on the same tasks, no LLM")


def print_report(report: Report, chance: ChanceLevels | None = None) -> None:
    """The verdict table, then the aggregate tables."""

    print_table("verdicts", ["task", "domain", "type", "tier", "verdict", "failure", "reason"],
                [[r.verdict.task_id, r.domain, r.analysis_type, r.tier, "pass" if r.verdict.passed else "FAIL",
                  r.verdict.failure_class or "", r.verdict.reason] for r in report.tasks])
    print_table("overall", ["", *COLUMNS], bucket_rows({"all": report.overall}))
    print_table("by domain", ["domain", *COLUMNS], bucket_rows(report.by_domain))
    print_chance_tables(report, chance)
    print_table("by variant", ["variant", *COLUMNS], bucket_rows(report.by_variant))
    print_table("failure classes", ["class", "tasks"], [[c, n] for c, n in report.failure_classes.items()])
    print_reliability(report)
    if report.unmatched_answers:
        print_table("answers naming no task", ["task_id"], [[a] for a in report.unmatched_answers])


def print_reliability(report: Report) -> None:
    """pass@1, pass^k and pass@k with 95% intervals, overall, per tier and per analysis type."""
    rel = report.reliability
    if rel is None:
        return
    rows = []
    for label, groups in (("all", {"": rel.overall}), ("tier", rel.by_tier), ("type", rel.by_analysis_type)):
        for name, g in groups.items():
            last = g.by_k[-1]
            rows.append([f"{label} {name}".strip(), str(g.tasks), f"{g.pass_at_1:.1f}",
                         f"{last.pass_hat_k:.1f} [{last.pass_hat_ci[0]:.1f}, {last.pass_hat_ci[1]:.1f}]",
                         f"{last.pass_at_k:.1f} [{last.pass_at_ci[0]:.1f}, {last.pass_at_ci[1]:.1f}]"])
    k = rel.trials
    print_table(f"reliability over {k} trials (95% Wilson intervals)",
                ["group", "tasks", "pass@1 %", f"pass^{k} %", f"pass@{k} %"], rows)
    print_table(f"pass^k by k (all tasks){'; ' + str(rel.incomplete_tasks) + ' tasks with fewer trials left out' if rel.incomplete_tasks else ''}",
                ["k", "pass^k %", "95% CI", "pass@k %"],
                [[str(e.k), f"{e.pass_hat_k:.1f}", f"[{e.pass_hat_ci[0]:.1f}, {e.pass_hat_ci[1]:.1f}]",
                  f"{e.pass_at_k:.1f}"] for e in rel.overall.by_k])


# ------------------------------------------------------------------------------ eval
AGENT_CHOICES = ("oracle", "no-rule", "featured-rule-only", "retrieval-only", "keyword-dump", "llm", "hostile")
VARIANT_CHOICES = ("standard", "oracle", "no_rule")


def task_selection(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options choosing a domain's tasks, shared by `eval` and `mcp`."""
    for option in reversed([
        click.option("--run", "run_key", default=None, help="Only the tasks of this generation Run (its key)."),
        click.option("--variant", "variants", multiple=True, type=click.Choice(VARIANT_CHOICES),
                     help="Only these task variants (repeatable; default all)."),
        click.option("--limit", type=int, default=None, help="At most this many tasks (in key order)."),
        click.option("--task-ids", "task_ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     default=None, help="Only the tasks listed in FILE (one id a line, or JSONL with task_id, "
                                        "e.g. a tasks.jsonl), in order."),
    ]):
        f = option(f)
    return f


@click.command("eval")
@click.option("--agent", "agent_name", type=click.Choice(AGENT_CHOICES), default=None,
              help="oracle (gold SQL), no-rule (base SQL), featured-rule-only (one rule), retrieval-only (top "
                   "policy document), keyword-dump (every number and date of every document), llm (the chat "
                   "model of DIBENCH_LLM / DIBENCH_LLM_PROVIDER), or hostile (tries every way round its tools, "
                   "in the sandbox a command agent gets; must score 0).")
@click.option("--agent-cmd", default=None, metavar="COMMAND",
              help="Run COMMAND once per task instead: the task as JSON on stdin, the MCP server in "
                   "DIBENCH_MCP_URL / DIBENCH_MCP_TOKEN, the answer as JSON on stdout (or submit_answer).")
@click.option("--domain", required=True, help="Domain whose admitted tasks are evaluated.")
@click.option("--name", "label", default=None, metavar="NAME", callback=lambda _c, _p, v: agent_label(v),
              help="The agent's name in the run's files and the report, and its run folder "
                   "(default: the --agent name; `command` for --agent-cmd).")
@task_selection
@click.option("--max-turns", type=int, default=20, show_default=True,
              help="Turn limit per task: model calls of the llm agent, MCP tool calls of a command.")
@click.option("--max-tokens", type=int, default=None,
              help="Token budget per task (the llm agent's; a command's where it reports usage).")
@click.option("--max-seconds", type=float, default=None, help="Wall-clock budget per task (a command is killed).")
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True,
              help="Attempts per task; with more than one the score adds pass@1, pass^k and pass@k.")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tasks run at once (a task's trials run one after another).")
@click.option("--resume", is_flag=True,
              help="Continue an interrupted run in the same -o folder: attempts already written are kept "
                   "(a folder that does not exist yet or is empty: the run starts there).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default out/eval/<domain>/<agent>).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@click.option("--chance/--no-chance", default=True, show_default=True,
              help="Then run the reference agents no-rule, featured-rule-only and keyword-dump on the same tasks "
                   "(no LLM; chance.json) and show their accuracy beside the agent's.")
@click.option("--isolation", type=click.Choice(["auto", "required", "none"]), default="auto", show_default=True,
              help="A command agent's sandbox (bubblewrap): auto = sandboxed where bwrap works, else one line "
                   "says what is lost; required = refuse to run unsandboxed; none = run it unsandboxed.")
@click.option("--agent-bind", "agent_binds", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A path the command agent sees read-only in its sandbox, e.g. its virtualenv (repeatable).")
@click.option("--agent-env", "agent_env", multiple=True, metavar="NAME",
              help="An environment variable passed on to the command agent (repeatable); it gets no other.")
def eval_cmd(agent_name: str | None, agent_cmd: str | None, domain: str, label: str | None, run_key: str | None,
             variants: tuple[str, ...],
             limit: int | None, task_ids_file: Path | None, max_turns: int, max_tokens: int | None,
             max_seconds: float | None, trials: int, concurrency: int, resume: bool, out_dir: Path | None,
             as_json: bool, chance: bool, isolation: str, agent_binds: tuple[Path, ...],
             agent_env: tuple[str, ...]) -> None:
    """Give each task of DOMAIN to an agent with SQL, knowledge-base search and final-answer tools.

    Writes tasks.jsonl, answers.jsonl ({task_id, answer} per line), trace.jsonl (turns, tool calls,
    tokens, messages), score.json, summary.json and chance.json, then prints accuracy tables with
    95% (Wilson) intervals beside the reference agents' chance levels.
    """
    from dibench.evaluation.agents.llm import Budget

    if (agent_name is None) == (agent_cmd is None):
        raise click.UsageError("give exactly one of --agent NAME or --agent-cmd COMMAND")
    handle_errors(_eval)(agent_name or "command", domain, run_key, variants, limit, max_turns, out_dir, as_json,
                         Budget(max_turns, max_tokens, max_seconds), task_ids_file,
                         RunOptions(trials, concurrency, resume, agent_cmd, chance, isolation, agent_binds,
                                    agent_env, label))


@dataclass(frozen=True)
class RunOptions:
    trials: int = 1
    concurrency: int = 1
    resume: bool = False
    agent_cmd: str | None = None
    chance: bool = True
    isolation: str = "auto"
    agent_binds: tuple[Path, ...] = ()
    agent_env: tuple[str, ...] = ()
    label: str | None = None


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def agent_label(name: str | None) -> str | None:
    """A name the user gives an agent: it names a run folder, so one safe path component."""
    if name is not None and not _LABEL.fullmatch(name):
        raise click.BadParameter("an agent name is 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                                 "or digit", param_hint="'--name'")
    return name


def read_task_ids(path: Path) -> list[str]:
    """Task ids of FILE: one a line, or JSON objects with a task_id (blank lines skipped)."""
    ids = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                text = str(json.loads(text)["task_id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise click.ClickException(f"{path}:{number}: a JSON line needs a task_id ({exc})") from exc
        ids.append(text)
    if not ids:
        raise click.ClickException(f"{path}: no task ids")
    return ids


def _eval(agent_name: str, domain: str, run_key: str | None, variants: tuple[str, ...], limit: int | None,
          max_turns: int, out_dir: Path | None, as_json: bool, budget: Budget | None = None,
          task_ids_file: Path | None = None, options: RunOptions | None = None) -> None:
    from dibench.evaluation.harness import evaluate
    from dibench.evaluation.sandbox import SandboxSpec
    from dibench.stores.graph import get_graph
    from dibench.stores.warehouse import get_warehouse

    opts = options or RunOptions()
    out = out_dir or Path("out") / "eval" / domain / (opts.label or agent_name)
    spec = SandboxSpec(binds=opts.agent_binds, env_names=opts.agent_env)
    with working(f"{agent_name} on {domain}", quiet=as_json) as status:
        result = evaluate(get_graph(), get_warehouse(), domain=domain, agent_name=agent_name, out_dir=out,
                          run=run_key, variants=list(variants) or None, limit=limit, max_turns=max_turns, budget=budget,
                          task_ids=read_task_ids(task_ids_file) if task_ids_file else None,
                          trials=opts.trials, concurrency=opts.concurrency, resume=opts.resume,
                          agent_cmd=opts.agent_cmd, chance=opts.chance, isolation=opts.isolation,  # type: ignore[arg-type]
                          sandbox_spec=spec, warn=lambda line: err_console.print(line, markup=False), name=opts.label,
                          progress=lambda i, n, key: status(f"{agent_name} on {domain}: task {i}/{n} {key}"))
    from dibench.service.run_index import record

    record(get_settings().state_dir, out)
    shortcuts = eval_shortcuts(out)
    if as_json:
        print_json(result.summary.model_dump(mode="json"))
        return
    print_eval_tables(result.report, result.chance)
    print_shortcut_audit(shortcuts)
    s = result.summary
    tokens = f", tokens {s.tokens['total_tokens']}" if s.tokens else ""
    failed = (s.stop_reasons or {}).get("error", 0)
    errors = f", {failed} failed (see trace.jsonl)" if failed else ""
    standard = result.report.by_variant["standard"].total if "standard" in result.report.by_variant else 0
    click.echo(f"{s.agent} ({s.model}) on {s.domain}: {s.passed}/{s.tasks} passed = {s.accuracy_pct:.2f}%, "
               f"{s.answered} answered{errors}{tokens}, {s.wall_seconds}s; files in {out}")
    click.echo(f"tasks: {standard} admitted standard tasks ({s.tasks} with variants) were evaluated")


def eval_shortcuts(out: Path) -> Any:
    """The shortcut audit of the tasks an evaluation ran (its tasks.jsonl), written beside its
    scores as shortcuts.json; None (with one line) when it cannot be computed."""
    from dibench.service import library

    try:
        table = library.shortcut_audit(out / "tasks.jsonl")
    except DibenchError as exc:
        err_console.print(f"shortcut audit not computed: {str(exc).splitlines()[0]}", highlight=False, soft_wrap=True)
        return None
    from dibench.evaluation.run_files import write_private

    write_private(out / "shortcuts.json", table.model_dump_json(indent=2) + "\n")
    return table


def print_eval_tables(report: Report, chance: ChanceLevels | None = None) -> None:
    """Aggregates only (the per-task verdicts are in score.json): overall, tiers and types (with
    chance levels), variants, failures."""
    from dibench.evaluation.ablation import variant_rows

    print_table("overall", ["", *COLUMNS], bucket_rows({"all": report.overall}))
    print_chance_tables(report, chance)
    print_table("rule tasks (K+A+R) by variant", ["variant", *COLUMNS], bucket_rows(variant_rows(report)))
    print_table("failure classes", ["class", "tasks"], [[c, n] for c, n in report.failure_classes.items()])
    print_reliability(report)


# ------------------------------------------------------------------------------ mcp
@click.command("mcp")
@click.option("--domain", required=True, help="Domain whose admitted tasks the session serves.")
@task_selection
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (the client starts this command) or streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP address; any but loopback needs a bearer token.")
@click.option("--port", type=int, default=8766, show_default=True, help="HTTP port.")
@click.option("--token", envvar="DIBENCH_MCP_TOKEN", default=None,
              help="Bearer token HTTP clients must send (env DIBENCH_MCP_TOKEN).")
@click.option("--max-turns", type=int, default=20, show_default=True, help="Tool calls allowed per task.")
@click.option("--name", "--agent-name", "agent_name", default="mcp", show_default=True,
              callback=lambda _c, _p, v: agent_label(v),
              help="The agent's name in the run's summary and report, and its run folder.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default out/eval/<domain>/<agent-name>).")
def mcp_cmd(domain: str, run_key: str | None, variants: tuple[str, ...], limit: int | None,
            task_ids_file: Path | None, transport: str, host: str, port: int, token: str | None, max_turns: int,
            agent_name: str, out_dir: Path | None) -> None:
    """Serve DOMAIN's tasks to any agent as an MCP server; one session is one evaluation run.

    Tools: list_tasks (paged, filterable), progress, get_task, describe_schema, sql_query,
    search_knowledge, read_document, submit_answer (the built-in harness's tools, public views only). Each submission is written and
    scored into the run folder (answers.jsonl, trace.jsonl, score.json, summary.json), which
    `dibench report --results DIR` shows like any `dibench eval` run.
    """
    handle_errors(_mcp)(domain, run_key, variants, limit, task_ids_file, transport, host, port, token, max_turns,
                        agent_name, out_dir)


def _mcp(domain: str, run_key: str | None, variants: tuple[str, ...], limit: int | None, task_ids_file: Path | None,
         transport: str, host: str, port: int, token: str | None, max_turns: int, agent_name: str,
         out_dir: Path | None) -> None:
    from dibench.evaluation.mcp_start import serve_at_once
    from dibench.evaluation.tasks import domain_schema
    from dibench.stores.engines import display_name
    from dibench.stores.graph import get_graph

    graph = get_graph()
    domain_schema(graph, domain)  # a domain not in the graph is refused before the server starts
    out = out_dir or Path("out") / "eval" / domain / agent_name
    where = "stdio" if transport == "stdio" else f"http://{host}:{port}/mcp"
    task_ids = read_task_ids(task_ids_file) if task_ids_file else None

    def open_run() -> Session:  # in the server's loader thread, once it listens
        from dibench.evaluation.mcp_session import SessionOptions, open_session
        from dibench.stores.warehouse import get_warehouse

        opts = SessionOptions(domain=domain, out_dir=out, run=run_key, variants=list(variants) or None, limit=limit,
                              task_ids=task_ids, max_turns=max_turns, agent_name=agent_name)
        return open_session(graph, get_warehouse(), opts)

    # stdout is the protocol channel under stdio: every message of ours goes to stderr.
    err_console.print(f"dibench mcp: serving {domain} on {where}; opening the run")
    result = serve_at_once(open_run, "stdio" if transport == "stdio" else "http",
                           engine=display_name(get_settings().database_url), host=host, port=port,
                           token=token, opened=lambda session: err_console.print(
                               f"dibench mcp: {len(session.tasks)} tasks of {domain}; run folder {out}"))
    s = result.summary
    err_console.print(f"dibench mcp: {s.answered} answered, {s.passed}/{s.tasks} passed = {s.accuracy_pct:.2f}%; "
                      f"files in {out}")


# ------------------------------------------------------------------------------ ablation
@click.group("ablation")
def ablation_cmd() -> None:
    """Ablations: re-pairing metrics with other rules; matched task variants."""


@ablation_cmd.command("pairing")
@click.option("--domain", required=True, help="Domain whose rule tasks are re-paired.")
@click.option("--run", "run_key", default=None, help="Only the tasks of this generation Run.")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the random pairing.")
@click.option("--include-rejected", is_flag=True,
              help="Also re-pair candidates rejected by the counterfactual filter (pre-filter figures).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the full result (with per-pairing details) as JSON, for `dibench report --ablation`.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def ablation_pairing(domain: str, run_key: str | None, seed: int, include_rejected: bool, output: Path | None,
                     as_json: bool) -> None:
    """Share of pairings (graph-selected / most similar / random rule) that change each rule task's answer."""

    handle_errors(_ablation_pairing)(domain, run_key, seed, include_rejected, output, as_json)


def _ablation_pairing(domain: str, run_key: str | None, seed: int, include_rejected: bool, output: Path | None,
                      as_json: bool) -> None:
    from dibench.evaluation.ablation import pairing_ablation
    from dibench.stores.graph import get_graph
    from dibench.stores.warehouse import get_warehouse

    with working(f"pairing ablation on {domain}", quiet=as_json):
        rep = pairing_ablation(get_graph(), get_warehouse(), domain, seed=seed, run=run_key,
                               include_rejected=include_rejected)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(rep.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(rep.model_dump(mode="json"))
        return
    print_table(f"pairing ablation: {domain}, {rep.tasks} rule tasks"
                + (f" ({rep.tasks_rejected_by_filter} pre-filter)" if rep.tasks_rejected_by_filter else "")
                + f", seed {seed}",
                ["pairing", "pairs", "changed", "same", "n/a", "own", "changed %", "% of appl.", "published %"],
                [[r.pairing, r.pairings, r.changed, r.unchanged, r.not_applicable, r.own_effect, f"{r.changed_pct:.1f}",
                  f"{r.changed_pct_of_applicable:.1f}", f"{r.published_pct:.0f}"] for r in rep.rows])
    click.echo("same: answer unchanged; n/a: the operation does not fit the metric (counts as no change); own: the "
               "rule has its own effect on the metric (else its operations are re-targeted)")
    click.echo(f"graph pairings reproducing the gold answer: {rep.graph_reproduces_gold}/{rep.tasks}")


@ablation_cmd.command("variants")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def ablation_variants(results: tuple[Path, ...]) -> None:
    """Accuracy on rule tasks by matched variant (standard / oracle / no_rule) of `dibench eval` RESULTS folders."""

    handle_errors(_ablation_variants)(results)


def _ablation_variants(results: tuple[Path, ...]) -> None:
    from dibench.evaluation.ablation import variant_rows
    from dibench.service.report import find_runs

    for run in find_runs(list(results)):
        print_table(f"{run.label}: rule tasks by variant", ["variant", *COLUMNS], bucket_rows(variant_rows(run.report)))


# ------------------------------------------------------------------------------ report
@click.command("report")
@click.option("--domain", "domains", multiple=True,
              help="Domain to describe (repeatable; default: the results' domains, else every domain with tasks).")
@click.option("--results", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A `dibench eval` output folder, or a folder containing several (repeatable; default: out/eval "
                   "and the folders `dibench eval -o` wrote).")
@click.option("--ablation", "ablations", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A `dibench ablation pairing -o FILE` result (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("out/report.html"),
              show_default=True, help="The HTML file to write.")
def report_cmd(domains: tuple[str, ...], results: tuple[Path, ...], ablations: tuple[Path, ...],
               output: Path) -> None:
    """Write one self-contained HTML report: task mix, coverage heat map, accuracy tables and plots, ablations.

    Without --results, the runs are those under out/eval (the default of `dibench eval`) and in
    every folder `dibench eval -o` wrote; one line says where it looked.

    Example: dibench report --results out/eval -o out/report.html"""

    handle_errors(_report)(domains, results, ablations, output)


def _report(domains: tuple[str, ...], results: tuple[Path, ...], ablations: tuple[Path, ...], output: Path) -> None:
    from dibench.service.report import write_report
    from dibench.service.run_index import result_folders
    from dibench.stores.graph import get_graph

    if not results:
        state_dir = get_settings().state_dir
        found = result_folders(state_dir)
        results = tuple(found.folders)
        err_console.print(found.line(state_dir), highlight=False, soft_wrap=True)
    data = write_report(get_graph(), output, domains=domains, results=results, ablations=ablations)
    click.echo(f"wrote {output}: {len(data.domains)} domain(s), {len(data.runs)} evaluation run(s), "
               f"{len(data.ablations)} ablation(s){', routing section' if data.routing_html else ''}")
