"""`dibench catalog ...` and `dibench routing ...`: a thin click layer over the routing library.

Registered on the main CLI by one line in cli/main.py. Imports only cli.common and the routing
stages (never another command module). Each command opens the graph, calls one library function and
prints the result; a DibenchError becomes a one-line click error.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from dibench.cli.common import bars as _bars, console, get_settings, handle_errors, print_table as _table, progress as _progress

DEFAULT_CATALOG = "spider"
# the routing behaviours (routing.models.BEHAVIOURS, not imported here: `--help` must answer at once)
BEHAVIOURS = ("single", "parallel", "sequential", "exploratory", "interactive")
ROUTERS = ("oracle", "lexical", "random", "layout", "select-all", "llm")


# ------------------------------------------------------------------------------ catalog
@click.group("catalog")
def catalog() -> None:
    """Multi-database catalogs for source routing: ingest and inspect."""


@catalog.command("ingest")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--catalog", "name", default=DEFAULT_CATALOG, show_default=True, help="Catalog name in the graph.")
@click.option("--postgres-schema", "postgres_schemas", multiple=True,
              help="Ingest this schema of the configured PostgreSQL warehouse instead of a SQLite folder "
                   "(repeat for several).")
@handle_errors
def catalog_ingest(path: Path | None, name: str, postgres_schemas: tuple[str, ...]) -> None:
    """Profile every database of PATH into Neo4j; idempotent. PATH defaults to the folder the catalog was
    ingested from (DATA_DIR/spider for the default catalog). Sources ingested into the same catalog
    later are related to the ones already there; a re-ingest removes sources that are gone and
    retires the routing tasks that needed them. Databases whose tables are all empty are skipped."""
    from dibench.routing.ingest import discover, ingest_postgres_schemas, ingest_sqlite_folder
    from dibench.stores.graph import apply_schema, get_graph
    from dibench.stores.warehouse import get_warehouse

    graph = get_graph()
    apply_schema(graph)
    if postgres_schemas:
        report = ingest_postgres_schemas(graph, get_warehouse().admin(), list(postgres_schemas), catalog=name)
    else:
        root = path or _release_root(graph, name, "PATH")
        with _progress("profiling databases", len(discover(root))) as advance:
            report = ingest_sqlite_folder(graph, root, catalog=name, progress=lambda _n: advance(1))
    _table(f"catalog {report.catalog}", ["databases", "tables", "columns", "foreign keys", "relations", "seconds"],
           [[report.databases, report.tables, report.columns, report.foreign_keys, report.relations, report.seconds]])
    for s in report.skipped:
        console.print(f"[yellow]skipped[/yellow] {s}", highlight=False)
    if report.domain_links:
        console.print(f"linked {report.domain_links} catalog tables to dibench domain tables")
    gone = report.removed
    if gone.databases:
        console.print(f"[yellow]removed[/yellow] {gone.databases} database(s) no longer in the source, "
                      f"{gone.units} source unit(s) they owned; {gone.tasks_retired} routing task(s) that needed "
                      "them retired", highlight=False)


def _release_root(graph: Any, name: str, option: str) -> Path:
    """The release folder of catalog `name`: the one it was ingested from, DATA_DIR/spider for the
    default catalog, else a one-line refusal (never another catalog's data)."""
    from dibench.routing.catalog_store import folder_root
    from dibench.routing.errors import CatalogSourceError

    stored = folder_root(graph, name)
    if stored is not None:
        return Path(stored)
    if name == DEFAULT_CATALOG:
        return get_settings().data_dir / "spider"
    raise CatalogSourceError(f"catalog {name!r} has no release folder on record: give {option}",
                             hint=f"{option} is the folder holding tables.json / database/<db>/<db>.sqlite "
                                  "and the questions (dev.json, ...)")


@catalog.command("status")
@click.option("--catalog", "name", default=DEFAULT_CATALOG, show_default=True, help="Catalog name in the graph.")
@handle_errors
def catalog_status(name: str) -> None:
    """Count the catalog's databases, tables, columns, relations and routing tasks."""
    from dibench.routing.catalog_store import counts
    from dibench.routing.task_store import task_counts
    from dibench.stores.graph import get_graph

    graph = get_graph()
    c = counts(graph, name)
    _table(f"catalog {name}", list(c), [list(c.values())])
    tasks = task_counts(graph, name)
    if tasks:
        _table("routing tasks", list(tasks), [list(tasks.values())])


@catalog.command("delete")
@click.argument("name")
@handle_errors
def catalog_delete(name: str) -> None:
    """Remove catalog NAME: its databases, tables, columns, locations, units and routing tasks."""
    from dibench.routing.catalog_store import counts, delete_catalog
    from dibench.stores.graph import get_graph

    graph = get_graph()
    if not counts(graph, name)["databases"]:
        raise click.ClickException(f"no catalog named {name!r} in the graph")
    delete_catalog(graph, name)
    console.print(f"deleted catalog {name}")


# ------------------------------------------------------------------------------ routing
@click.group("routing")
def routing() -> None:
    """Multi-database source routing: generate task contracts, evaluate routers."""


@routing.command("generate")
@click.option("--catalog", "name", default=DEFAULT_CATALOG, show_default=True, help="Ingested catalog to use.")
@click.option("--path", "root", type=click.Path(path_type=Path), default=None,
              help="Release folder with dev.json / dev_gold.sql / train_gold.sql (default: the folder the catalog "
                   "was ingested from; DATA_DIR/spider for the default catalog).")
@click.option("--n", "n", type=int, default=None, help="Number of contracts (default 815, the published mix).")
@click.option("--seed", type=int, default=None, help="Random seed (default from settings, 42).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("out/routing/contracts.jsonl"),
              show_default=True, help="JSONL export of the contracts.")
@click.option("--public-dir", type=click.Path(path_type=Path), default=Path("out/routing/public"),
              show_default=True, help="Public export: tasks.jsonl (requests) and catalog.json (what routers see).")
@click.option("--llm", "use_llm", is_flag=True, help="Word requests with the configured LLM (template otherwise).")
@click.option("--allow-missing", "allow_missing", multiple=True, type=click.Choice(BEHAVIOURS),
              help="A behaviour the catalog may give none of (repeatable); any other missing behaviour exits 1.")
@click.option("--strict/--lenient", default=True, show_default=True,
              help="--strict (the default) keeps out every request whose sources a word-matching of the catalog's "
                   "names finds (exact, column words, stems, name-stem overlap) and lets no gold set repeat more "
                   "than twice per behaviour; on a catalog of a few databases few tasks survive. --lenient keeps "
                   "them (the shortcut audit then shows how far words route).")
@handle_errors
def routing_generate(name: str, root: Path | None, n: int | None, seed: int | None, output: Path, public_dir: Path,
                     use_llm: bool, allow_missing: tuple[str, ...], strict: bool) -> None:
    """Build source units from gold SQL, then validated contracts of the five behaviours, published under
    fresh random ids (a new benchmark each run; the id mapping stays in the graph, private)."""
    from dibench.routing.generate import DEFAULT_N, REFERENCE_MIX, targets
    from dibench.routing.report import pct
    from dibench.routing.pipeline import release_size, run_generate
    from dibench.routing.shortcuts import n_routers
    from dibench.stores.graph import apply_schema, get_graph
    from dibench.stores.llm import configured_model

    settings = get_settings()
    n = n or DEFAULT_N
    llm = configured_model(settings) if use_llm else None
    if use_llm and llm is None:
        raise click.ClickException("--llm needs DIBENCH_LLM_PROVIDER")
    graph = get_graph()
    apply_schema(graph)
    root = root or _release_root(graph, name, "--path")
    total = sum(targets(n).values())
    with _bars(("executing gold SQL", release_size(root)), ("building contracts", total),
               ("shortcut audit", total * n_routers())) as (up, cp, ap):
        s = run_generate(graph, catalog=name, root=root, n=n, seed=settings.seed if seed is None else seed,
                         out=output, public_dir=public_dir, llm=llm, unit_progress=up, contract_progress=cp,
                         audit_progress=ap, strict=strict)
    u = s.units
    asked = sum(x.intent_source == "question" for x in u.units)
    _table("source units", ["gold queries", "repeats merged", "units", "with a human question", "by file", "failed",
                            "seconds"],
           [[u.read, u.merged, len(u.units), asked, ", ".join(f"{k} {v}" for k, v in sorted(u.by_source.items())),
             ", ".join(f"{k} {v}" for k, v in sorted(u.failure_counts().items())) or "0", s.unit_seconds]])
    r = s.report
    built, paper = max(len(r.contracts), 1), {str(b): n for b, n in REFERENCE_MIX.items()}
    _table("contracts (mix beside the paper's)", ["behaviour", "target", "produced", "share", "paper's share"],
           [[b, t, r.produced.get(b, 0), pct(r.produced.get(b, 0) / built), pct(paper.get(b, 0) / DEFAULT_N)]
            for b, t in r.targets.items()] + [["total", sum(r.targets.values()), len(r.contracts), "", ""]])
    for line in r.shortfall_lines():
        console.print(f"[yellow]short[/yellow] {line}", highlight=False)
    if r.rejected:
        console.print("rejected candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(r.rejected.items())))
    if s.audit is not None:
        _chance_table(s.audit, f"shortcut audit ({s.audit_seconds}s): the best router that reads no request "
                               "semantics, per metric = this benchmark's chance level (95% Wilson intervals)")
    console.print(f"benchmark {s.benchmark}: contracts built in {s.contract_seconds}s; contracts (private) in "
                  f"{output}, public tasks and catalog in {public_dir}")
    missing = sorted(set(r.skipped()) - set(allow_missing))
    if missing:
        raise click.ClickException(f"no {', '.join(missing)} contract could be built on catalog {name!r} (reasons "
                                   "above); pass --allow-missing " + " --allow-missing ".join(missing)
                                   + " to accept a benchmark without them")


@routing.command("eval")
@click.option("--router", type=click.Choice(ROUTERS), required=True, help="Which reference router to run.")
@click.option("--catalog", "name", default=DEFAULT_CATALOG, show_default=True, help="Ingested catalog to use.")
@click.option("--contracts", "contracts_file", type=click.Path(path_type=Path, exists=True), default=None,
              help="JSONL contracts (default: the catalog's RoutingTask nodes).")
@click.option("--ask", type=click.Choice(["never", "once"]), default="never", show_default=True,
              help="Clarification policy: 'once' lets the router ask one question per task.")
@click.option("--seed", type=int, default=None, help="Seed of the random router (default 42).")
@click.option("--decimals", type=int, default=2, show_default=True, help="Round numbers half-up; -1 for exact.")
@click.option("--executor", type=click.Choice(["oracle", "llm"]), default="oracle", show_default=True,
              help="Who writes SQL for contributions without any: the gold unit SQL on a right route (oracle), "
                   "or text-to-SQL by the configured LLM.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None, help="Write results as JSON.")
@handle_errors
def routing_eval(router: str, name: str, contracts_file: Path | None, ask: str, seed: int | None, decimals: int,
                 executor: str, output: Path | None) -> None:
    """Route every contract, execute the routes, print RA-Set, RA-Graph, EA-Micro, Route+Exec-Graph."""
    from dibench.routing.audit import audit as audit_shortcuts
    from dibench.routing.evaluate import chance_routers, evaluate, retrieval_audit
    from dibench.routing.pipeline import load_eval, stored_audit
    from dibench.routing.shortcuts import n_routers
    from dibench.routing.report import METRICS, pct, result_to_dict, save_result, with_interval
    from dibench.routing.scoring import ScoreConfig
    from dibench.stores.graph import get_graph

    from dibench.stores.llm import configured_model

    llm = configured_model() if executor == "llm" else None
    if executor == "llm" and llm is None:
        raise click.ClickException("--executor llm needs DIBENCH_LLM_PROVIDER")
    setup = load_eval(get_graph(), name, contracts_file, llm)
    if not setup.contracts:
        raise click.ClickException(f"no contracts for catalog {name!r}; run `dibench routing generate` first")
    seed = get_settings().seed if seed is None else seed
    chosen = _router(router, setup.contracts, ask, seed)
    cfg = ScoreConfig(None if decimals < 0 else decimals)
    chance = [r for r in chance_routers(seed, setup.contracts) if r.name != chosen.name]
    stored = stored_audit(get_graph(), name, setup.contracts) if cfg == ScoreConfig() else None
    results = []
    with _progress(f"routing with {chosen.name} (and {', '.join(r.name for r in chance)})",
                   len(setup.contracts) * (1 + len(chance) + (0 if stored else n_routers()))) as advance:
        for r in [chosen, *chance]:
            results.append(evaluate(setup.contracts, setup.indexes, setup.route_executor, r,
                                    clarify=ask == "once" and r is chosen, cfg=cfg, progress=advance))
        shortcuts = stored or audit_shortcuts(setup.contracts, setup.indexes, setup.route_executor, seed, cfg,
                                              progress=advance)
    result = results[0]
    audit = retrieval_audit(setup.contracts, setup.indexes)
    s = result.summary
    _table(f"router {result.router} on {s.tasks} contracts (EA by {result.executor})", ["behaviour", "tasks", *(n for _, n in METRICS)],
           [[b, x.tasks, *(pct(getattr(x, k)) for k, _ in METRICS)] for b, x in s.by_behaviour.items()]
           + [["all", s.tasks, *(pct(getattr(s, k)) for k, _ in METRICS)]])
    _table("against chance on this catalog, same contracts (95% Wilson intervals)", ["router", *(n for _, n in METRICS)],
           [[r.router, *(with_interval(r.summary, k) for k, _ in METRICS)] for r in results])
    _chance_table(shortcuts, "chance level: the best router that reads no request semantics, per metric "
                             f"({len(shortcuts.routers)} shortcut routers on the same contracts)", result.summary)
    _table("selection", ["precision", "recall", "over-selection", "under-selection", "asked", "invalid routes"],
           [[pct(s.precision), pct(s.recall), pct(s.over_selection), pct(s.under_selection), result.asked,
             result.invalid_routes]])
    _table("retrieval audit (BM25, capability summaries)", ["K", "Recall@K", "complete set in top K"],
           [[a.k, pct(a.recall), pct(a.complete)] for a in audit])
    data = result_to_dict(result, audit, contracts=len(setup.contracts), catalog=name)
    data["chance"] = {r.router: result_to_dict(r, audit, contracts=len(setup.contracts), catalog=name)["summary"]
                      for r in results[1:]}
    data["shortcut_audit"] = shortcuts.to_dict()
    save_result(data)  # for the routing section of `dibench report`
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(data, indent=1))
        console.print(f"results written to {output}")
    setup.executor.close()


def _chance_table(audit: Any, caption: str, scored: Any = None) -> None:
    """Per metric: the best shortcut with its interval beside random (and the router scored, if any)."""
    from dibench.routing.report import METRICS, pct

    header = ["metric", *(["router scored"] if scored is not None else []), "best shortcut", "which", "random"]
    rows = []
    for key, label in METRICS:
        best, rand = audit.level(key), next(x for x in audit.random if x.metric == key)
        rows.append([label, *([pct(getattr(scored, key))] if scored is not None else []),
                     f"{pct(best.value)} [{pct(best.low)}-{pct(best.high)}]", best.router,
                     f"{pct(rand.value)} [{pct(rand.low)}-{pct(rand.high)}]"])
    _table(caption, header, rows)
    for behaviour, names in sorted(audit.flagged.items()):
        console.print(f"[yellow]shortcut[/yellow] {behaviour}: above random's interval on RA-Graph: "
                      + ", ".join(names), highlight=False)


def _router(kind: str, contracts: list[Any], ask: str, seed: int) -> Any:
    from dibench.routing.evaluate import random_router
    from dibench.routing.routers.layout import LayoutRouter
    from dibench.routing.routers.lexical import LexicalRouter
    from dibench.routing.routers.llm import LLMRouter
    from dibench.routing.routers.oracle import OracleRouter
    from dibench.routing.routers.select_all import SelectAllRouter
    from dibench.stores.llm import configured_model

    if kind == "oracle":
        return OracleRouter(contracts, seed)
    if kind == "random":
        return random_router(seed, contracts)
    if kind == "layout":
        return LayoutRouter(seed)
    if kind == "select-all":
        return SelectAllRouter()
    if kind == "lexical":
        return LexicalRouter("once" if ask == "once" else "never")
    model = configured_model()
    if model is None:
        raise click.ClickException("--router llm needs DIBENCH_LLM_PROVIDER (module:factory of a chat model)")
    return LLMRouter(model)


@routing.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="HTML file to write.")
@handle_errors
def routing_report(results: tuple[Path, ...], output: Path) -> None:
    """Render eval result files (from `routing eval -o`) as an HTML routing section."""
    from dibench.routing.report import render_section

    html = render_section([json.loads(p.read_text()) for p in results])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(f"<!doctype html><meta charset='utf-8'><title>dibench routing</title>\n{html}\n")
    console.print(f"wrote {output}")
