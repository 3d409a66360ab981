"""The routing jobs end to end: generate contracts; set up an evaluation.

generate: catalog view -> source units (executed) -> unit pool -> contracts (validated, worded)
-> published under fresh per-benchmark ids -> RoutingUnit / RoutingTask nodes -> JSONL export.
evaluate: contracts -> their benchmark's private id mapping -> the catalog view and locations under
the benchmark's ids -> environment, routers, execution.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.routing import benchmark
from dibench.routing.audit import ShortcutAudit
from dibench.routing.audit import audit as shortcut_audit
from dibench.routing.build_common import BuildContext
from dibench.routing.environment import CatalogIndexes
from dibench.routing.execution import OracleSql, RouteExecutor, SqlWriter, TextToSql
from dibench.routing.generate import DEFAULT_N, STRICT_SET_REPEATS, GenerationReport, generate
from dibench.routing.models import Contract
from dibench.routing.pool import UnitPool
from dibench.routing.sqlite_exec import SqliteExecutor
from dibench.routing.task_store import export_jsonl, import_jsonl, read_contracts, write_contracts, write_units
from dibench.routing.units import UnitBuild, build_units, read_release
from dibench.routing.validate import Validator
from dibench.routing.view import CatalogView, Locations
from dibench.stores.graph import Graph

Progress = Callable[[int], None]


@dataclass
class GenerateSummary:
    units: UnitBuild
    report: GenerationReport  # contracts under the catalog's own ids (generation internals)
    published: list[Contract]  # the same contracts under the benchmark's public ids: stored and exported
    benchmark: str
    unit_seconds: float
    contract_seconds: float
    out: Path | None
    audit: ShortcutAudit | None = None
    audit_seconds: float = 0.0


def release_size(root: Path) -> int:
    return len(read_release(root).queries)


def run_generate(graph: Graph, *, catalog: str, root: Path, n: int = DEFAULT_N, seed: int = 42,
                 out: Path | None = None, public_dir: Path | None = None, llm: BaseChatModel | None = None,
                 only_databases: set[str] | None = None, shortcuts: bool = True, strict: bool = True,
                 unit_progress: Progress | None = None, contract_progress: Progress | None = None,
                 audit_progress: Progress | None = None) -> GenerateSummary:
    """Build units and contracts for `catalog` (whose databases must be ingested) and store them.

    only_databases: restrict units to these catalog ids (tests use a small catalog subset).
    out: the contracts (private: gold SQL, the intended reading). public_dir: what routers may see
    (requests and the catalog under the benchmark's ids). shortcuts: run the shortcut audit on the
    published contracts and store its chance levels with the benchmark. strict (the default): keep out
    every request whose sources a word-matching of the catalog's names finds (routing/word_match.py)
    and let no gold set repeat more than STRICT_SET_REPEATS times per behaviour; strict=False (`routing
    generate --lenient`) keeps them, and the audit then measures how far such words route.
    """
    view = CatalogView.load(graph, catalog)
    locations = Locations.load(graph, catalog)
    with SqliteExecutor() as executor:
        started = time.perf_counter()
        units = build_units(root, catalog, view, locations, executor, unit_progress)
        if only_databases is not None:
            units.units = [u for u in units.units if u.database in only_databases]
            units.failures = [f for f in units.failures if f.database in only_databases]
        write_units(graph, catalog, units.units, units.failures)
        unit_seconds = time.perf_counter() - started
        started = time.perf_counter()
        pool = UnitPool.build(view, units.units)
        ctx = BuildContext(catalog, pool, locations, executor, random.Random(seed), seed)
        validator = Validator(view, locations, executor, {u.unit_id: u for u in units.units},
                              refuse_word_matched=strict)
        report = generate(ctx, validator, n, llm=llm, progress=contract_progress,
                          set_repeats=STRICT_SET_REPEATS if strict else None)
        ids = benchmark.mint(view.ids())
        benchmark.store(graph, catalog, ids)
        published = benchmark.publish(report.contracts, ids)
        write_contracts(graph, catalog, published, ids.catalog_of())
        if out is not None:
            export_jsonl(published, out)
        contract_seconds = time.perf_counter() - started
        started = time.perf_counter()
        indexes = CatalogIndexes(view.aliased(ids.public_of))
        found = None
        if shortcuts and published:
            found = shortcut_audit(published, indexes, RouteExecutor(locations.aliased(ids.public_of), executor,
                                                                     OracleSql()), seed, progress=audit_progress)
            benchmark.store_audit(graph, catalog, ids.benchmark, found.to_dict())
        if public_dir is not None:
            benchmark.write_public(published, indexes, public_dir, found.to_dict() if found else None)
    return GenerateSummary(units, report, published, ids.benchmark, round(unit_seconds, 2),
                           round(contract_seconds, 2), out, found, round(time.perf_counter() - started, 2))


@dataclass
class EvalSetup:
    contracts: list[Contract]
    indexes: CatalogIndexes
    route_executor: RouteExecutor
    executor: SqliteExecutor


def load_eval(graph: Graph, catalog: str, contracts_file: Path | None = None,
              llm: BaseChatModel | None = None) -> EvalSetup:
    """Contracts (from a JSONL file, else from Neo4j), the public indexes and the private executor.

    With llm, contributions without SQL get text-to-SQL from it; otherwise the oracle executor.
    """
    contracts = import_jsonl(contracts_file) if contracts_file else read_contracts(graph, catalog)
    view = CatalogView.load(graph, catalog)
    locations = Locations.load(graph, catalog)
    published = benchmark.benchmark_of(contracts)
    if published is not None:  # routers see, and routes name, the benchmark's ids only
        public_of = benchmark.load(graph, catalog, published).public_of
        view, locations = view.aliased(public_of), locations.aliased(public_of)
    writer: SqlWriter = TextToSql(llm, view) if llm is not None else OracleSql()
    executor = SqliteExecutor()
    return EvalSetup(contracts, CatalogIndexes(view), RouteExecutor(locations, executor, writer), executor)


def stored_audit(graph: Graph, catalog: str, contracts: list[Contract]) -> ShortcutAudit | None:
    """The shortcut audit `routing generate` stored for these contracts' benchmark, if any."""
    published = benchmark.benchmark_of(contracts)
    data = benchmark.load_audit(graph, catalog, published) if published else None
    found = ShortcutAudit.from_dict(data) if data else None
    # a subset of the benchmark (a filtered contracts file) has chance levels of its own
    return found if found is not None and found.level("ra_set").n == len(contracts) else None
