"""The `dibench` command line: a thin click layer over the library.

Each command opens what it needs, calls one library function and prints the result. A
DibenchError becomes one line (with a hint) and a non-zero exit; `--debug` shows tracebacks.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from dibench import __version__
from dibench.cli.common import (console, err_console, get_settings, handle_errors, print_json,
                                 print_shortcut_audit, print_table, reset_settings,
                                 working)
from dibench.core.errors import PackErrors


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="dibench")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
def main(debug: bool) -> None:
    """dibench: verifiable benchmarks for enterprise data agents, built from an artifact linkage graph."""


# ------------------------------------------------------------------------------ services
@main.group()
def services() -> None:
    """Start, stop and inspect the local Neo4j and PostgreSQL servers."""


def _print_status(statuses: Any) -> None:
    print_table("services", ["service", "state", "pid", "uri", "version", "detail"],
                [[s.name, "up" if s.running and s.version else ("starting" if s.running else "down"),
                  s.pid or "-", s.uri, s.version or "-", s.detail] for s in statuses])


@services.command("up")
@handle_errors
def services_up() -> None:
    """Start both servers (idempotent) and wait until each answers a real query."""
    from dibench.stores import local

    _print_status(local.up(get_settings(), say=lambda line: err_console.print(line, highlight=False,
                                                                              soft_wrap=True)))


@services.command("down")
@handle_errors
def services_down() -> None:
    """Stop both servers cleanly."""
    from dibench.stores import local

    local.down(get_settings())
    click.echo("services stopped")


@services.command("status")
@handle_errors
def services_status() -> None:
    """Report whether each server is running and answering."""
    from dibench.stores import local

    _print_status(local.status(get_settings()))


@services.command("credentials")
@click.option("--shell", "shell", is_flag=True,
              help="Print `export` lines for cypher-shell (NEO4J_*) and psql (PG*), secrets included.")
@click.option("--compose-env", is_flag=True, help="Print the `.env` docker-compose.yml reads (secrets included).")
@handle_errors
def services_credentials(shell: bool, compose_env: bool) -> None:
    """Show where the install's own secrets live; with --shell, the exports a person needs to open
    the graph or the warehouse with their own tools. Only the install's owner gets them."""
    from dibench.core.secrets import SECRETS_DIR
    from dibench.stores import credentials

    settings = get_settings()
    credentials.require_owner(settings)
    if shell or compose_env:
        pairs = credentials.shell_exports(settings) if shell else credentials.compose_env(settings)
        click.echo(credentials.render(pairs, export=shell))
        return
    click.echo(f"secrets of this install: {settings.state_dir / SECRETS_DIR} (owner-only); "
               "`eval \"$(dibench services credentials --shell)\"` exports them for cypher-shell and psql")


# ------------------------------------------------------------------------------ domains
@main.group()
def domain() -> None:
    """Domain packs: list, load a pack's database, validate a pack; unlock or remove a domain."""


@domain.command("list")
@handle_errors
def domain_list() -> None:
    """List the built-in domain packs."""
    from dibench.core.pack import DOMAINS_DIR, load_pack

    rows = []
    for p in sorted(DOMAINS_DIR.glob("*/pack.yaml")):
        try:
            pk = load_pack(p.parent)
            rows.append([pk.name, len(pk.metrics), len(pk.rules), pk.spec.description])
        except PackErrors as exc:
            rows.append([p.parent.name, "-", "-", f"invalid: {len(exc.errors)} problem(s)"])
    print_table("domain packs", ["name", "metrics", "rules", "description"], rows)


@domain.command("load")
@click.argument("pack")
@click.option("--size", type=int, default=None, help="Size parameter of a generated domain (demo: tickets).")
@click.option("--seed", type=int, default=None, help="Seed of a generated domain (default from pack.yaml).")
@click.option("--path", "source_path", type=click.Path(), default=None,
              help="Folder with the original data files (real-data packs).")
@click.option("--replace", is_flag=True,
              help="Rebuild the pack's schema even though dibench did not create it (its data is lost).")
@handle_errors
def domain_load(pack: str, size: int | None, seed: int | None, source_path: str | None, replace: bool) -> None:
    """Build or load PACK's database into PostgreSQL, replacing the schema a previous load made.

    A schema of that name that dibench did not create (your own data) is refused unless
    --replace; the schema loaded is marked as dibench's, so `domain remove --data` may drop it.

    This RUNS CODE from the pack: its pack.yaml `loader.entry` (any module:function, or a .py
    file in the pack) is imported and called with the warehouse's admin engine. Load only packs
    you trust. No other command, and no HTTP route, runs a loader.

    Example: dibench domain load demo --size 20000"""
    from dibench.ingest.database import load_database
    from dibench.core.pack import load_pack
    from dibench.stores.pack_data import warehouse_for

    pk = load_pack(pack)
    if pk.spec.loader is not None:
        err_console.print(f"running the loader of pack {pk.name}: {pk.spec.loader.entry} (code from the pack, "
                          "with the warehouse's admin role)", highlight=False, soft_wrap=True)
    report = load_database(pk, warehouse_for(pk), replace=replace, size=size, seed=seed, path=source_path)
    print_json({"domain": pk.name, "schema": pk.schema, **report})


@domain.command("validate")
@click.argument("path")
@click.option("--offline", is_flag=True, help="Do not connect to PostgreSQL (skips table/column checks).")
@handle_errors
def domain_validate(path: str, offline: bool) -> None:
    """Check a pack: file schemas, SQL templates, references. One line per problem."""
    from dibench.ingest.validate import validate_pack
    from dibench.stores.warehouse import get_warehouse

    pack, problems = validate_pack(path, None if offline else get_warehouse())
    for p in problems:
        err_console.print(f"[red]error[/red] {p}", highlight=False, soft_wrap=True)
    if problems:
        sys.exit(1)
    assert pack is not None
    for w in pack.warnings:
        err_console.print(f"[yellow]warning[/yellow] {w}", highlight=False, soft_wrap=True)
    click.echo(f"{pack.name}: ok ({len(pack.metrics)} metrics, {len(pack.rules)} rule documents)")


@domain.command("import-dbt")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Pack folder to write.")
@click.option("--name", default=None, help="Pack name (default: the folder's name).")
@click.option("--schema", default=None, help="PostgreSQL schema of the tables (default: the manifest's).")
@click.option("--read-dialect", default="duckdb", show_default=True,
              help="SQL dialect of the manifest's expressions and filters.")
@handle_errors
def domain_import_dbt(manifest: str, out: str, name: str | None, schema: str | None, read_dialect: str) -> None:
    """Write a pack from a dbt semantic manifest: one line per metric imported, not imported (with
    the reason), and added, changed or removed against the pack already in --out.

    Example: dibench domain import-dbt target/semantic_manifest.json --out packs/shop"""
    from pathlib import Path

    from dibench.ingest.dbt.pack import import_manifest

    pack_name = name or Path(out).resolve().name.replace("-", "_")
    report = import_manifest(manifest, out, name=pack_name, schema=schema, read_dialect=read_dialect)
    for line in report.lines():
        click.echo(line)


@domain.command("check-rules")
@click.argument("pack")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def domain_check_rules(pack: str, as_json: bool) -> None:
    """Execute base vs rule-modified SQL for every effect of PACK and show which change an answer."""
    from dibench.core.pack import load_pack
    from dibench.ingest.verify import verify_effect
    from dibench.stores.warehouse import get_warehouse

    pk = load_pack(pack)
    wh = get_warehouse()
    results = []
    for doc in pk.rules:
        for eff in doc.front.effects or []:
            metric = pk.metric_by_id[eff.metric]
            results.append(verify_effect(wh, metric, doc.id, eff, schema=pk.schema))
    if as_json:
        print_json([r.__dict__ for r in results])
    else:
        print_table("rule -> metric edges", ["rule", "metric", "verified", "changed slices", "error"],
                    [[r.rule_id, r.metric_id, r.verified, ", ".join(r.changed_slices[:4]), r.error or ""]
                     for r in results])
    if any(not r.verified for r in results):
        sys.exit(1)


@domain.command("check")
@click.argument("pack")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def domain_check(pack: str, as_json: bool) -> None:
    """Report what PACK finds in its warehouse: row counts, the columns its metrics and dimensions
    need, and which are missing (exit 1 if any). For a pack over an existing schema (no loader).

    Also lists, one line each with the CREATE INDEX to run, the time and dimension columns the
    metrics filter on that no index leads with, on tables of 10,000 rows or more (advice only:
    the exit status does not depend on it, and dibench never creates them itself); a smaller
    table is named as not checked, with the columns no index serves on it."""
    from dibench.ingest.domain_check import check_domain
    from dibench.core.pack import load_pack
    from dibench.stores.pack_data import warehouse_for

    pk = load_pack(pack)
    report = check_domain(pk, warehouse_for(pk))
    if as_json:
        print_json(report)
    else:
        for w in report["warnings"]:
            err_console.print(f"[yellow]warning[/yellow] {w}", highlight=False, soft_wrap=True)
        print_table(f"{report['domain']}: schema {report['schema']} ({report['database']})",
                    ["table", "exists", "rows", "columns needed", "missing"],
                    [[t["table"], t["exists"], "-" if t["rows"] is None else f"{t['rows']:,}", ", ".join(t["needed"]),
                      ", ".join(t["missing"]) or "-"] for t in report["tables"]])
        click.echo(f"{report['missing']} needed column(s) missing" if report["missing"] else "every needed column exists")
        for r in report["rules_without_effects"]:
            err_console.print(f"[yellow]rule without effects[/yellow] {r['rule']}: blocks the tasks of "
                              f"{', '.join(r['metrics']) or 'no metric it names'} until its effects are given "
                              "(or `effects: []`)", highlight=False, soft_wrap=True)
        for advice in report["indexes"]:
            click.echo(advice["advice"])
        for skipped in report["indexes_skipped"]:
            click.echo(skipped["reason"])
        if report["schema_exists"] and not report["index_advice"]:
            click.echo(f"no index advice on {report['engine']}: a column store scans what an index would serve")
        elif report["schema_exists"] and not report["indexes"] and not report["indexes_skipped"]:
            click.echo("every time and dimension column the metrics filter on has an index")
    if report["missing"] or not report["schema_exists"]:
        sys.exit(1)
@domain.command("unlock")
@click.argument("name")
@click.option("--force", is_flag=True,
              help="Release the lease even if its holder looks alive (only when you know it is not writing).")
@handle_errors
def domain_unlock(name: str, force: bool) -> None:
    """Release the write lease a killed `ingest` or `update-rule` left on domain NAME.

    One ingest or rule update writes a domain at a time, under a lease in the graph. A lease is
    stale when its holder is a process of this host that has exited, or when it has expired;
    the next writer takes a stale lease over by itself, and this command releases it now. A
    live lease is refused: --force releases it anyway, which is safe only when its holder is
    not writing (e.g. it ran on a machine that is gone), since two writers of one domain can
    write the same edge twice."""
    from dibench.stores.lease import unlock
    from dibench.stores.graph import get_graph

    state = unlock(get_graph(), name, force=force)
    if state is None:
        click.echo(f"domain {name!r} has no write lease")
    else:
        click.echo(f"released the write lease of {name!r} held by {state.holder} "
                   f"({'stale: ' + state.why if state.stale else 'forced: ' + state.why})")


@domain.command("remove")
@click.argument("name")
@click.option("--data", is_flag=True, help="Also drop the domain's schema (its tables and data); on DuckDB the "
                                           "file itself when dibench created it and it holds nothing else.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@handle_errors
def domain_remove(name: str, data: bool, yes: bool) -> None:
    """Delete domain NAME from the graph: its tables, metrics, rules and their versions, tasks
    and task versions, runs, skeletons, update records and write lease. With --data, also drop
    its schema (refused when another domain reads the same schema, or when dibench did not
    create it). On DuckDB, a file dibench created that holds nothing else is deleted; another
    file is kept (the summary says which). Other domains are not touched."""
    from dibench.service.remove import plan_removal, remove_domain
    from dibench.stores.graph import get_graph
    from dibench.stores.warehouse import get_warehouse

    graph, wh = get_graph(), get_warehouse()
    plan = plan_removal(graph, wh, name, data)
    if not yes:
        click.confirm(f"delete {plan.summary()}?", abort=True)
    remove_domain(graph, wh, plan)
    click.echo(f"removed {plan.summary()}")


# ------------------------------------------------------------------------------ ingest and graph
@main.command("ingest")
@click.argument("pack")
@click.option("--no-verify", is_flag=True, help="Skip the counterfactual check of rule -> metric edges.")
@click.option("--dry-run", is_flag=True,
              help="Say which rule documents are left out and which tasks the ingest would retire or update, "
                   "and write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--max-llm-calls", type=int, default=None,
              help="At most this many LLM requests for effect extraction (cache hits are free).")
@handle_errors
def ingest_cmd(pack: str, no_verify: bool, dry_run: bool, as_json: bool, max_llm_calls: int | None) -> None:
    """Build the artifact linkage graph of PACK in Neo4j (idempotent).

    A plan of at most DIBENCH_INGEST_TX_ROWS rows (default 20000; real packs have a few hundred)
    is written in one transaction, all or nothing. A larger one goes in concurrent batch
    transactions (DIBENCH_WRITE_BATCH rows each, DIBENCH_WRITE_WORKERS at a time), each all or
    nothing; after a failure, running the ingest again completes it.

    A rule document that cannot be read (no front matter, a bad field) is left out with one line
    naming the file and the reason; the rest of the pack is ingested. When the ingest changes a
    rule's place in a metric's policy (a rule edited, re-verified, or back after `remove-rule`),
    the tasks on that metric are re-derived as `update-rule` would; how many would be retired, and
    on which metrics, is said before anything is written (--dry-run stops there).

    Example: dibench ingest demo"""
    from dibench.service import library
    from dibench.stores.llm import session

    llm_options(max_llm_calls)
    pk = library.load_pack(pack, leave_out_refused_rules=True)
    if not as_json:
        for line in pk.refused:
            err_console.print(f"[yellow]left out[/yellow] {line}", highlight=False, soft_wrap=True)
    with working(f"{pk.name}: planning what the ingest re-derives", quiet=as_json):
        preview = library.ingest_preview(pk)
    if not as_json:
        said = preview.line()
        for note in [*([said] if said else []), *(f"not previewed: {n}" for n in preview.not_previewed)]:
            err_console.print(note, highlight=False, soft_wrap=True)
    if dry_run:
        if as_json:
            print_json({"domain": pk.name, "dry_run": True, "left_out": list(pk.refused),
                        "would_rederive": preview.as_dict()})
        else:
            click.echo(f"{pk.name}: dry run, nothing written ({len(pk.rules)} rule documents would be ingested, "
                       f"{len(pk.refused)} left out)")
        return
    with working(f"ingesting {pk.name}: schema, catalog, rules, counterfactual verification", quiet=as_json):
        report = library.ingest_pack(pk, verify=not no_verify)
    if as_json:
        print_json({**report.as_dict(), "llm": session().as_dict(), "left_out": list(pk.refused)})
    else:
        for w in [*pk.warnings, *report.warnings]:
            err_console.print(f"[yellow]warning[/yellow] {w}", highlight=False, soft_wrap=True)
        for f in report.failures:
            err_console.print(f"[red]error[/red] {f}", highlight=False, soft_wrap=True)
        click.echo(f"{pk.name}: rule -> metric edges verified {report.verified}, unverified {report.unverified}")
        for e in report.unverified_edges:
            click.echo(f"  unverified: {e}")
        if report.extraction:
            x = report.extraction
            click.echo(f"LLM extraction: {x['documents']} documents' effects from {x['model']} "
                       f"(prompt {x['prompt_version']})")
        calls = session().as_dict()
        if calls["calls"] or calls["cache_hits"]:
            click.echo(f"LLM: calls {calls['calls']}, cache hits {calls['cache_hits']}, failures {calls['failures']}")
        changes = ", ".join(f"{k}={v}" for k, v in sorted(report.counters.items())) or "no changes"
        how = "one transaction" if report.transactions == 1 else f"{report.transactions} batch transactions"
        click.echo(f"graph writes: {changes} ({report.rows:,} planned rows in {how})")
        if report.catalog_links:
            click.echo(f"linked {report.catalog_links} routing catalog tables to this domain's tables")
        if report.rederived:
            r = report.rederived
            c = r["counts"]
            what = [f"{len(r['rules'])} rule(s) whose policy changed ({', '.join(r['rules'])})"] if r["rules"] else []
            what += [f"{len(r['metrics'])} metric(s) whose definition changed ({', '.join(r['metrics'])})"] \
                if r.get("metrics") else []
            click.echo(f"re-derived the tasks of {' and '.join(what)}: {c['updated']} updated, {c['retired']} "
                       f"retired, {c['unchanged']} unchanged; --json gives the update keys")
    if report.failures:
        sys.exit(1)


@main.group()
def graph() -> None:
    """Inspect the artifact linkage graph."""


@graph.command("stats")
@click.option("--domain", default=None, help="Only this domain.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def graph_stats_cmd(domain: str | None, as_json: bool) -> None:
    """Node and edge counts by type, and the tasks: admitted standard tasks, with variants, with
    rejected candidates (the words every command uses)."""
    from dibench.core.task_counts import TaskCounts
    from dibench.stores.graph import get_graph
    from dibench.service.queries import graph_stats

    stats = graph_stats(get_graph(), domain)
    if as_json:
        print_json(stats)
        return
    rows = [["node", k, v] for k, v in stats["nodes"].items()] + [["edge", k, v] for k, v in stats["edges"].items()]
    rows.append(["total", "nodes", sum(stats["nodes"].values())])
    rows.append(["total", "edges", sum(stats["edges"].values())])
    print_table(f"graph {domain or '(all domains)'}", ["kind", "type", "count"], rows)
    t = stats["tasks"]
    click.echo("tasks: " + TaskCounts(t["admitted_standard"], t["admitted_with_variants"],
                                      t["with_rejected_candidates"]).line())


@main.command("rules-for")
@click.argument("metric_id")
@click.option("--domain", default=None, help="Domain of the metric (needed when the id exists in several).")
@click.option("--tasks", "with_tasks", is_flag=True, help="Also list tasks currently depending on each rule.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def rules_for_cmd(metric_id: str, domain: str | None, with_tasks: bool, as_json: bool) -> None:
    """Which rules affect METRIC_ID: direct edges, composite paths, applicability, verification, version,
    and each rule's place in the metric's policy (the rules its gold answers apply)."""
    from dibench.stores.graph import get_graph
    from dibench.service.queries import rules_for

    rows = rules_for(get_graph(), metric_id, domain)
    if with_tasks:
        from dibench.service.queries import tasks_for_rules

        tasks = tasks_for_rules(get_graph(), metric_id, domain, [r["rule_id"] for r in rows])
        for r in rows:
            r["tasks"] = tasks.get(r["rule_id"], [])
    if as_json:
        print_json(rows)
        return
    print_table(f"rules affecting {metric_id}", ["rule", "type", "version", "verified", "via", "in policy",
                                                 "order", "applies when", "op"] + (["tasks"] if with_tasks else []),
                [[r["rule_id"], r["rule_type"], r["version"], r["verified"], " -> ".join(r["path"]), r["policy"],
                  r["order"] or "-", ", ".join(f"{a['dimension']}={a['value']}" for a in r["applies_when"]) or "-",
                  (r["operation"] or {}).get("op", "multi") if isinstance(r["operation"], dict) else "multi"]
                 + ([len(r.get("tasks", []))] if with_tasks else []) for r in rows])
    from dibench.service.queries import policy_summary

    pol = policy_summary(get_graph(), metric_id, domain)
    click.echo(f"policy of {metric_id} (what gold answers apply): {', '.join(pol['rules']) or 'no rule'}"
               + ("" if pol["complete"] else "; INCOMPLETE: generation skips this metric"))
    if len(pol["order"]) > 1:
        click.echo(f"applied in this order: {' -> '.join(pol['order'])}")
    for line in pol["conflicts"]:
        err_console.print(f"[red]conflict[/red] {line}", highlight=False, soft_wrap=True)
    if pol["unknown"]:
        click.echo(f"rules without effects that mention it: {', '.join(pol['unknown'])}")

# ------------------------------------------------------------------------------ generation
def _print_summary(summary: Any) -> None:
    d = summary.as_dict()
    print_table("tasks by analysis type", ["analysis type", "admitted"], [[k, v] for k, v in d["by_type"].items()])
    print_table("tasks by knowledge tier", ["tier", "admitted"], [[k, v] for k, v in d["by_tier"].items()])
    cands = d["candidates"] or 1
    print_table("rejections by validation check", ["check", "rejected", "share of candidates"],
                [[k, v, f"{100 * v / cands:.1f}%"] for k, v in d["rejections_by_check"].items()] or [["-", 0, "0%"]])
    c = d["task_counts"]
    click.echo(f"run {d['run_key']}: {c['admitted_standard']} admitted standard tasks ({c['admitted_with_variants']} "
               f"with variants; {c['with_rejected_candidates']} with rejected candidates) of {d['candidates']} "
               f"standard candidates from {d['skeletons']} skeletons; rules decisive in a task {d['rules_covered']}/{d['rules_total']}, "
               f"featured {d['featured_covered']}/{d['rules_total']}; {d['multi_decisive']} tasks with more than "
               f"one decisive rule; metrics covered {d['metrics_covered']}; validation stage 2: {d['stage2']}; "
               f"wall {d['wall_seconds']}s, SQL {d['sql_seconds']}s in {d['sql_statements']} statements "
               f"({d['workers']} worker(s))" + (" (resumed)" if d["resumed"] else ""))
    if d.get("write_retries"):
        click.echo("graph transactions retried by the driver: "
                   + ", ".join(f"{code} {n}" for code, n in d["write_retries"].items()))
    paths = {p.split(":")[0]: 0 for c in d["sql_plan"].values() for p in c}
    for counts in d["sql_plan"].values():
        for p, n in counts.items():
            paths[p.split(":")[0]] += n
    click.echo("SQL plan of the candidates: " + ", ".join(f"{p} {n}" for p, n in sorted(paths.items())))
    if d["llm_model"] != "none":
        versions = ", ".join(f"{k} {v}" if isinstance(v, str) else f"{k} " + ", ".join(
            f"{x['prompt_version']} ({x['model']})" for x in v) for k, v in sorted(d["prompt_versions"].items()))
        click.echo(f"LLM {d['llm_model']}: calls {d['llm'].get('calls', {})}, cache hits "
                   f"{d['llm'].get('cache_hits', {})}, failures {d['llm_failures']}; prompts: {versions}")
    for metric, why in d.get("skipped_metrics", {}).items():
        err_console.print(f"[yellow]skipped[/yellow] {metric}: {why}", highlight=False, soft_wrap=True)
    if d.get("migrated"):
        click.echo(f"{d['migrated']} tasks generated under an older gold meaning were retired (GoldMigration record)")
    if d.get("earlier_tasks"):
        err_console.print(f"[yellow]note[/yellow] {d['earlier_tasks']} admitted standard tasks of earlier runs of this "
                          f"domain were not regenerated by this run and stay admitted: eval and mcp serve them too "
                          f"unless given --run {d['run_key']}, and an export selects them too",
                          highlight=False, soft_wrap=True)
    print_shortcut_audit(d.get("shortcut_audit"), d.get("shortcut_rejected") or {})



def llm_options(max_llm_calls: int | None = None, judge: bool | None = None) -> None:
    """Command-line LLM limits, passed on as settings (worker processes read the environment)."""
    if max_llm_calls is not None:
        if max_llm_calls < 0:
            raise click.BadParameter("must be 0 or more", param_hint="--max-llm-calls")
        os.environ["DIBENCH_LLM_MAX_CALLS"] = str(max_llm_calls)
    if judge is not None:
        os.environ["DIBENCH_LLM_JUDGE"] = "true" if judge else "false"
    reset_settings()


LLM_CALLS_OPTION = click.option(
    "--max-llm-calls", type=int, default=None,
    help="At most this many LLM requests (cache hits are free); then template phrasing, no judge.")
JUDGE_OPTION = click.option(
    "--judge/--no-judge", default=None,
    help="Run the stage-2 LLM judge (default: when a model is configured); phrasing is independent.")


def _generate(pack_name: str, target: int, seed: int, workers: int, min_per_type: int, as_json: bool,
              resume: str | None = None, new: bool = False) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dibench.service import library

    pk = library.load_pack(pack_name)

    # With --json, stdout carries the JSON alone: progress goes to stderr.
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console if as_json else console) as bar:
        job = bar.add_task(f"{pk.name}: skeletons", total=None)
        summary = library.generate(pk, target=target, seed=seed, workers=workers, min_per_type=min_per_type,
                                   progress=bar.console.log, resume=resume, new=new,
                                   counter=lambda done, total: bar.update(job, completed=done, total=total))
    if as_json:
        print_json(summary.as_dict())
    else:
        _print_summary(summary)


@main.command("generate")
@click.argument("pack")
@click.option("--target", type=int, default=40, show_default=True,
              help="Skeletons selected: MMR, then coverage of unrepresented metrics and rules, within the target.")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of every non-LLM random choice.")
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes claiming skeletons.")
@click.option("--min-per-type", type=int, default=3, show_default=True,
              help="Augmentation beyond --target: more skeletons until each analysis type has this many "
                   "admitted tasks (0: none, so the run has exactly --target skeletons).")
@click.option("--resume", "resume", default=None, metavar="RUN", help="Resume this unfinished run (its key).")
@click.option("--new", "new", is_flag=True, help="Start a new run even if an unfinished one could be resumed.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (only JSON on stdout).")
@LLM_CALLS_OPTION
@JUDGE_OPTION
@click.option("--legacy-plan", is_flag=True,
              help="Run one SQL statement per answer instead of the grouped plan (one scan per metric, dimension "
                   "and rule set); same tasks, for comparisons. Same as DIBENCH_GROUPED_PLAN=0.")
@handle_errors
def generate_cmd(pack: str, target: int, seed: int, workers: int, min_per_type: int, resume: str | None, new: bool,
                 as_json: bool, max_llm_calls: int | None, judge: bool | None, legacy_plan: bool) -> None:
    """Generate validated tasks for an ingested PACK and write them into the graph.

    A run whose process died (killed, machine lost) is resumed by the next `generate` of the
    same PACK, seed and target: its plan is kept, skeletons already done are not redone, and
    the claims of its dead workers are taken over. --resume RUN names the run, --new starts a
    fresh one. Worker processes exit with this process. A task regenerated by a later run
    belongs to that run only."""
    llm_options(max_llm_calls, judge)
    if legacy_plan:
        os.environ["DIBENCH_GROUPED_PLAN"] = "0"  # worker processes read the environment
        reset_settings()
    _generate(pack, target, seed, workers, min_per_type, as_json, resume, new)


@main.command("worker")
@click.argument("run")
@click.option("--pack", "pack_path", default=None,
              help="Pack folder, when the run's domain is not a built-in domain of that name.")
@click.option("--worker-id", default=None,
              help="Name the claims of this worker carry (default host:pid); unique per worker.")
@click.option("--max-skeletons", type=int, default=None, help="Stop after this many skeletons.")
@handle_errors
def worker_cmd(run: str, pack_path: str | None, worker_id: str | None, max_skeletons: int | None) -> None:
    """Process skeletons of RUN, which a `dibench generate` elsewhere drives, until none is left.

    Start it on any machine that reaches the same Neo4j and PostgreSQL: skeletons are claimed
    under a lease in the graph, so every worker takes different ones, and a worker that dies
    leaves its claims to the others once the lease expires. Prints what it did as JSON."""
    from dibench.generation.workers import RunFinished, join

    try:
        stats = join(run, pack_path, worker_id, max_skeletons=max_skeletons)
    except RunFinished as exc:
        err_console.print(str(exc), highlight=False, soft_wrap=True)
        return
    print_json({k: stats[k] for k in ("worker", "skeletons", "admitted_rows", "statements", "write_retries")}
               | {"sql_seconds": round(stats["sql_seconds"], 2), "wall_seconds": round(stats["wall_seconds"], 2)})


@main.command("demo")
@click.option("--domain", "domain_name", default="demo", show_default=True, help="Built-in domain to run.")
@click.option("--size", type=int, default=None, help="Size of a generated domain (demo: tickets).")
@click.option("--target", type=int, default=None, help="Skeletons selected (MMR + coverage; default per domain).")
@click.option("--min-per-type", type=int, default=None, help="Minimum tasks per analysis type (default per domain).")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed.")
@click.option("--workers", type=int, default=2, show_default=True, help="Worker processes.")
@handle_errors
def demo_cmd(domain_name: str, size: int | None, target: int | None, min_per_type: int | None, seed: int,
             workers: int) -> None:
    """End to end: services up, load the domain, ingest it, generate tasks, print a summary."""
    from dibench.ingest.database import load_database
    from dibench.service import library
    from dibench.service.queries import graph_stats
    from dibench.stores import local
    from dibench.stores.graph import get_graph
    from dibench.stores.warehouse import get_warehouse

    console.rule("1/4 services")
    _print_status(local.up(get_settings()))
    pk = library.load_pack(domain_name)
    console.rule(f"2/4 load {pk.name}")
    with working(f"loading {pk.name} into PostgreSQL"):
        report = load_database(pk, get_warehouse(), size=size, seed=seed if domain_name == "demo" else None)
    click.echo(json.dumps(report, default=str))
    console.rule("3/4 ingest")
    graph = get_graph()
    with working("building the artifact linkage graph"):
        ing = library.ingest_pack(pk, graph=graph, warehouse=get_warehouse())
    click.echo(f"rule -> metric edges verified {ing.verified}, unverified {ing.unverified}")
    stats = graph_stats(graph, pk.name)
    click.echo(f"graph: {sum(stats['nodes'].values())} nodes, {sum(stats['edges'].values())} edges")
    console.rule("4/4 generate")
    # The demo aims at a quick, varied run; the real domains at the published scale
    # (at least 10 counterfactual, decomposition and significance tasks each).
    default_target, default_min = DEMO_DEFAULTS.get(pk.name, (40, 10))
    _generate(pk.name, target or default_target, seed, workers, min_per_type or default_min, False)


# Targets count the coverage pass too (it used to come on top: demo 20 gave 28 skeletons, seed 42).
DEMO_DEFAULTS = {"demo": (28, 5), "berka": (60, 10), "pagila": (50, 10)}

# ------------------------------------------------------------------------------ knowledge service
def _print_changelog(log: dict[str, Any], verbose: bool = False) -> None:
    """The summary first (versions, task counts); the edge changes; each changed task only when
    `verbose` (a rule on a busy metric changes hundreds)."""
    b, a, c = log["before"], log["after"], log["counts"]
    click.echo(f"{log['action']} {log['rule_id']} ({log['domain']}): version {b.get('version')} "
               f"#{str(b.get('hash') or '-')[:12]} -> "
               + ("removed" if log["action"] == "remove" else f"{a.get('version')} #{str(a.get('hash') or '-')[:12]}"))
    click.echo(f"tasks: {c['unchanged']} unchanged, {c['updated']} updated, {c['retired']} retired, "
               f"{c['regenerated']} regenerated" + ("" if log["written"] else " (nothing to write)"))
    if log["effects"]:
        print_table("rule -> metric edges", ["metric", "change", "verified before", "verified after", "operation after"],
                    [[e["metric"], e["change"], e["verified_before"], e["verified_after"],
                      json.dumps(e["after"], sort_keys=True) if e["after"] else "-"] for e in log["effects"]])
    changed = [t for t in log["tasks"] if t["action"] != "unchanged"]
    if changed and verbose:
        print_table("tasks changed", ["task", "type", "metric", "action", "version", "reason", "gold before -> after"],
                    [[t["key"], t["analysis_type"], t["metric_id"], t["action"],
                      f"{t['version_before']} -> {t['version_after']}", t["reason"],
                      f"{json.dumps(t['gold_before'], sort_keys=True)[:60]} -> {json.dumps(t['gold_after'], sort_keys=True)[:60]}"]
                     for t in changed])
    elif changed:
        click.echo(f"{len(changed)} tasks changed: --verbose lists each, --json gives the whole changelog")
    llm = log.get("llm") or {}
    if llm.get("model", "none") != "none":
        click.echo(f"LLM {llm['model']}: calls {llm['calls']}, cache hits {llm['cache_hits']}, failures "
                   f"{llm['failures']}; prompts {json.dumps(llm['prompt_versions'], sort_keys=True)}")


@main.command("update-rule")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--pack", "pack_path", default=None, help="Pack of the document (default: the folder above with pack.yaml).")
@click.option("--regenerate", is_flag=True, help="Also generate tasks for skeletons the rule newly reaches.")
@click.option("--dry-run", is_flag=True, help="Compute and print the changelog without writing.")
@click.option("--json", "as_json", is_flag=True, help="Print the changelog as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="List every changed task (the summary comes first either way).")
@LLM_CALLS_OPTION
@JUDGE_OPTION
@handle_errors
def update_rule_cmd(path: str, pack_path: str | None, regenerate: bool, dry_run: bool, as_json: bool, verbose: bool,
                    max_llm_calls: int | None, judge: bool | None) -> None:
    """Re-read one rule document, re-verify its edges and re-derive the tasks it affects.

    With an LLM configured, a document without effects has them extracted, and re-derived or
    regenerated tasks whose facts changed are phrased and judged as `generate` does (same call
    budget, judge switch, reply cache and fidelity check); a failed model call retires that task
    with the reason, and running the update again re-derives it.

    Example: dibench update-rule domains/demo/rules/dormant-ticket-outliers.md --dry-run"""
    llm_options(max_llm_calls, judge)
    from dibench.service.update import load_document, plan_update
    from dibench.service.update_write import run_update
    from dibench.stores.graph import apply_schema, get_graph
    from dibench.stores.llm import configured_model
    from dibench.stores.warehouse import get_warehouse

    graph = get_graph()
    apply_schema(graph)
    pk, doc = load_document(path, pack_path)
    plan_fn = lambda: plan_update(pk, doc, graph, get_warehouse(), configured_model(), regenerate=regenerate)  # noqa: E731
    with working(f"updating {doc.id}: verifying edges, re-deriving tasks", quiet=as_json):
        plan = plan_fn() if dry_run else run_update(plan_fn, graph, pk.name)[0]
    log = plan.changelog()
    if dry_run:
        log["written"] = False
    if as_json:
        print_json(log)
    else:
        _print_changelog(log, verbose)


@main.command("remove-rule")
@click.argument("rule_id")
@click.option("--domain", default=None, help="Domain of the rule (needed when the id exists in several).")
@click.option("--pack", "pack_path", default=None,
              help="The domain's pack, to re-derive the tasks whose metric's policy loses the rule "
                   "(default: the built-in pack of that name, if any; without a pack they are retired).")
@click.option("--json", "as_json", is_flag=True, help="Print the changelog as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="List every changed task (the summary comes first either way).")
@LLM_CALLS_OPTION
@JUDGE_OPTION
@handle_errors
def remove_rule_cmd(rule_id: str, domain: str | None, pack_path: str | None, as_json: bool, verbose: bool,
                    max_llm_calls: int | None, judge: bool | None) -> None:
    """Handle a deleted rule document: remove its edges, keep its versions, re-derive every task on
    a metric it modified under the policy without it (tasks featuring it are retired).

    Example: dibench remove-rule RULE-OUTLIER-DORMANT --domain demo"""
    llm_options(max_llm_calls, judge)
    from dibench.core.pack import DOMAINS_DIR, load_pack
    from dibench.service.update import plan_remove, resolve_rule
    from dibench.service.update_write import run_update
    from dibench.stores.graph import get_graph
    from dibench.stores.llm import configured_model
    from dibench.stores.warehouse import get_warehouse

    graph = get_graph()
    dom = resolve_rule(graph, rule_id, domain)
    root = pack_path or (str(DOMAINS_DIR / dom) if (DOMAINS_DIR / dom / "pack.yaml").is_file() else None)
    pk = load_pack(root) if root else None
    if pk is None:
        err_console.print(f"[yellow]warning[/yellow] no pack for domain {dom!r}: tasks on its metrics are retired, "
                          f"not re-derived (pass --pack)", highlight=False, soft_wrap=True)
    plan, _ = run_update(lambda: plan_remove(graph, rule_id, dom, pk, get_warehouse() if pk else None,
                                             configured_model()), graph, dom)
    log = plan.changelog()
    if as_json:
        print_json(log)
    else:
        _print_changelog(log, verbose)


@main.command("impact")
@click.argument("rule_id")
@click.option("--domain", default=None, help="Domain of the rule (needed when the id exists in several).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def impact_cmd(rule_id: str, domain: str | None, as_json: bool) -> None:
    """The metrics, dimensions and tasks RULE_ID affects."""
    from dibench.stores.graph import get_graph
    from dibench.service.impact import impact

    data = impact(get_graph(), rule_id, domain)
    if as_json:
        print_json(data)
        return
    click.echo(f"{data['rule_id']} ({data['domain']}): {data['title']} [{data['rule_type']}] version {data['version']}"
               + (" (removed)" if data["removed"] else ""))
    print_table("metrics", ["metric", "verified", "operation", "changed slices"],
                [[m["metric"], m["verified"], json.dumps(m["operation"], sort_keys=True), len(m["changed_slices"])]
                 for m in data["metrics"]] + [[c, "-", "via composite", "-"] for c in data["composites"]])
    print_table("dimensions", ["dimension", "why"], [[d["dimension"], "; ".join(d["why"])] for d in data["dimensions"]])
    tc = data["task_counts"]
    print_table("tasks", ["status", "count"], [[k, v] for k, v in tc["by_status"].items()])
    click.echo(f"{tc['admitted']} admitted tasks depend on this rule: "
               + ", ".join(f"{k} {v}" for k, v in tc["by_analysis_type"].items()))


def _print_drift(log: dict[str, Any]) -> None:
    moved = [t for t in log["tasks"] if t["outcome"] in ("drifted", "failed")]
    if moved:
        print_table("tasks drifted or failed", ["task", "type", "metric", "outcome", "action", "version", "reason"],
                    [[t["key"], t["analysis_type"], t["metric_id"], t["outcome"], t["action"],
                      f"{t['version_before']} -> {t['version_after']}", t["reason"][:120]] for t in moved])
    c, tm = log["counts"], log["timing"]
    click.echo(f"drift {log['domain']}: {c['skipped']} skipped (tables unchanged), {c['unchanged']} unchanged, "
               f"{c['drifted']} drifted, {c['failed']} failed; {log['not_computed']} knowledge tasks not computed "
               f"from data; {tm['seconds']}s ({tm['sql_statements']} SQL statements, {tm['fingerprint_queries']} "
               f"fingerprint queries){'; applied' if log['applied'] else ''}; record {log['check_key']}")


@main.command("drift")
@click.argument("domain_name")
@click.option("--apply", "apply_", is_flag=True,
              help="Version drifted tasks with their new answers (old version kept) and record fingerprints.")
@click.option("--pack", "pack_path", default=None,
              help="Pack folder of the domain, when it is not built in (its own database, if it names one).")
@click.option("--json", "as_json", is_flag=True, help="Print the changelog as JSON.")
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 when any task drifted or failed (for CI).")
@handle_errors
def drift_cmd(domain_name: str, apply_: bool, pack_path: str | None, as_json: bool, fail_on_drift: bool) -> None:
    """Re-execute the stored gold and base SQL of DOMAIN's tasks on today's data and record what moved.

    Tasks whose tables have the data fingerprint they recorded are skipped; the others are
    re-executed and compared with their stored answers under their answer contracts. The
    changelog is written to the graph as a DriftCheck node.

    Example: dibench drift demo --fail-on-drift"""
    from dibench.service.drift import run_drift
    from dibench.stores.graph import apply_schema, get_graph

    graph = get_graph()
    apply_schema(graph)
    with working(f"drift check of {domain_name}: fingerprints, re-executing stored SQL", quiet=as_json):
        plan = run_drift(graph, _domain_warehouse(domain_name, pack_path), domain_name, apply=apply_)
    log = plan.changelog()
    if as_json:
        print_json(log)
    else:
        _print_drift(log)
    if fail_on_drift and (log["counts"]["drifted"] or log["counts"]["failed"]):
        sys.exit(1)


def _domain_warehouse(domain_name: str, pack_path: str | None) -> Any:
    """The warehouse of a domain: its pack's own database if the pack names one."""
    from dibench.core.pack import DOMAINS_DIR, load_pack
    from dibench.stores.pack_data import warehouse_for
    from dibench.stores.warehouse import get_warehouse

    if pack_path is not None:
        return warehouse_for(load_pack(pack_path))
    if (DOMAINS_DIR / domain_name / "pack.yaml").is_file():
        return warehouse_for(load_pack(domain_name))
    return get_warehouse()


@main.command("export")
@click.option("--cypher", "cypher_text", default=None,
              help="Read-only Cypher selecting tasks (RETURN t.key AS key); --audience private only.")
@click.option("--preset", type=click.Choice(["domain", "analysis_type", "tier", "rule", "metric", "status"]), default=None,
              help="A named selection (pass its one parameter with --param, e.g. --param tier=K+A+R).")
@click.option("--filter", "filters", multiple=True,
              help="Select by public fields: field=value[,value...] (repeatable; fields: domain, analysis_type, "
                   "tier, variant, status, answer_format, version, key, metric, rule, review; status defaults to "
                   "admitted).")
@click.option("--param", "params", multiple=True, help="Query parameter k=v (repeatable; JSON values are decoded).")
@click.option("--domain", default=None,
              help="The one domain to export (required when the graph holds more than one).")
@click.option("--audience", type=click.Choice(["public", "private"]), default="public", show_default=True,
              help="public: what an agent may see; private: adds gold answers, SQL and parameters.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "hf"]), default="jsonl", show_default=True,
              help="Output format.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Output folder.")
@click.option("--dialect", "dialects", default=None,
              help="Also give the gold SQL in these dialects (comma-separated: duckdb,snowflake,bigquery,trino,spark).")
@click.option("--allow-empty", is_flag=True, help="Exit 0 even when the query selects no task.")
@handle_errors
def export_cmd(cypher_text: str | None, preset: str | None, filters: tuple[str, ...], params: tuple[str, ...],
               domain: str | None, audience: str, fmt: str, out_dir: str, dialects: str | None,
               allow_empty: bool) -> None:
    """Export the tasks a preset, a filter over public fields or (private audience only) a Cypher
    query selects from one domain: the audience's views and a manifest (--dialect adds the gold
    SQL in other engines' dialects to the private view). docs/public-surface.md lists what a
    public export can see; docs/graph.md the labels and properties a Cypher query may use.

    A selection of no task writes nothing and exits 1 (for a Cypher query, naming the labels and
    properties it uses that the graph does not hold), unless --allow-empty.

    Example: dibench export --preset domain --param domain=demo -o out/demo"""
    from dibench.service import library
    from dibench.service.export import parse_filters, parse_param
    from dibench.sqlops.transpile import parse_dialects

    from dibench.service.export import EmptyExport

    try:
        manifest = library.export(out_dir, cypher=cypher_text, preset=preset,
                                  params=dict(parse_param(p) for p in params), filters=parse_filters(filters),
                                  domain=domain, audience=audience, fmt=fmt,
                                  dialects=parse_dialects(dialects) if dialects else (), allow_empty=allow_empty)
    except EmptyExport:
        from dibench.service.hints import unknown_names
        from dibench.stores.graph import get_graph

        for line in unknown_names(get_graph(), cypher_text) if cypher_text else []:
            err_console.print(f"[yellow]hint[/yellow] {line}", highlight=False, soft_wrap=True)
        err_console.print("[red]error[/red] the query selected 0 tasks, so nothing was written (docs/graph.md lists "
                          "the graph's labels and properties; --allow-empty writes an empty export)",
                          highlight=False, soft_wrap=True)
        sys.exit(1)
    c = manifest["counts"]
    standard = c["by_variant"].get("standard", 0)
    what = (f"{standard} admitted standard tasks ({c['tasks']} with variants)"
            if set(c["by_status"]) <= {"admitted"} else f"{c['tasks']} tasks ({standard} standard)")
    click.echo(f"exported {what} of {manifest['domain']} ({audience}) to {out_dir} ({fmt}): "
               + ", ".join(f"{k} {v}" for k, v in c["by_analysis_type"].items()))
    for name, digest in manifest["files"].items():
        click.echo(f"  {name}  sha256 {digest[:16]}")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port.")
@click.option("--insecure-local", is_flag=True, default=False,
              help="Serve without API tokens (reads and public exports open), on a loopback address only.")
@handle_errors
def serve_cmd(host: str, port: int, insecure_local: bool) -> None:
    """Run the HTTP API (FastAPI; OpenAPI docs at /docs). Without DIBENCH_API_TOKEN or
    DIBENCH_API_READ_TOKEN every route but /health is refused, unless --insecure-local. Requests
    whose Host header is not the bound address, localhost or a name in DIBENCH_API_ALLOWED_HOSTS
    get 400."""
    import uvicorn

    from dibench.service.api import create_app

    from dibench.core.loopback import is_loopback

    if insecure_local and not is_loopback(host):
        raise click.ClickException("--insecure-local binds a loopback address only (127.0.0.1 or another of 127.0.0.0/8, ::1); drop --host")
    app = create_app(insecure_local=insecure_local, host=host)
    if get_settings().reviewers:  # the review app's routes, with their own people (`dibench review serve`)
        from dibench.service.review import install_review
        from dibench.stores.graph import get_graph
        from dibench.stores.warehouse import get_warehouse

        install_review(app, get_settings(), get_graph, get_warehouse)
    uvicorn.run(app, host=host, port=port)


# The command modules register here, last: they import cli.common, never this module.
from dibench.cli import evaluation as _evaluation, review as _review, routing as _routing  # noqa: E402

for _command in (_evaluation.score, _evaluation.eval_cmd, _evaluation.mcp_cmd, _evaluation.report_cmd, _evaluation.ablation_cmd,
                 _routing.catalog, _routing.routing, _review.review):
    main.add_command(_command)

# One example per command whose docstring has none, shown at the end of its --help
# (tests/test_readme_commands.py parses each against the CLI).
EXAMPLES = {
    "ablation pairing": "dibench ablation pairing --domain demo -o out/pairing.json",
    "ablation variants": "dibench ablation variants out/eval/demo/oracle out/eval/demo/no-rule",
    "catalog delete": "dibench catalog delete spider",
    "catalog ingest": "dibench catalog ingest ../shared/data/spider --catalog spider",
    "catalog status": "dibench catalog status --catalog spider",
    "demo": "dibench demo --domain berka",
    "domain check": "dibench domain check demo",
    "domain check-rules": "dibench domain check-rules demo --json",
    "domain list": "dibench domain list",
    "domain remove": "dibench domain remove demo --yes",
    "domain unlock": "dibench domain unlock demo",
    "domain validate": "dibench domain validate domains/demo --offline",
    "eval": "dibench eval --agent oracle --domain demo --trials 3 -o out/eval/demo/oracle",
    "generate": "dibench generate demo --target 28 --workers 2",
    "graph stats": "dibench graph stats --domain demo",
    "impact": "dibench impact RULE-OUTLIER-DORMANT --domain demo",
    "mcp": "dibench mcp --domain demo --transport http",
    "routing eval": "dibench routing eval --router lexical --ask once",
    "routing generate": "dibench routing generate --catalog spider --n 815 --seed 42",
    "routing report": "dibench routing report out/routing/lexical.json -o out/routing.html",
    "rules-for": "dibench rules-for MV-FRT-001 --domain demo --tasks",
    "score": "dibench score out/x/private.jsonl answers.jsonl",
    "serve": "dibench serve --port 8765",
    "services credentials": "dibench services credentials --shell",
    "services down": "dibench services down",
    "services status": "dibench services status",
    "services up": "dibench services up",
    "worker": "dibench worker RUN --worker-id w2",
}


def _with_examples(group: click.Group, path: tuple[str, ...] = ()) -> None:
    for name, command in group.commands.items():
        key = " ".join((*path, name))
        if isinstance(command, click.Group):
            _with_examples(command, (*path, name))
        elif key in EXAMPLES and "Example" not in (command.help or ""):
            command.help = f"{command.help or ''}\n\nExample: {EXAMPLES[key]}"


_with_examples(main)

if __name__ == "__main__":  # pragma: no cover
    main()
