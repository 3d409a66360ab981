"""Per-benchmark public ids: every `routing generate` run publishes its contracts under fresh ids.

The catalog keeps its own database ids (stable across re-ingests: units and graph edges refer to
them; they never leave the private side). Publishing a generation draws a benchmark id, a public
id for every catalog database and a task id for every contract from the OS's secure random
source, so nothing public (the release, the catalog, a database's name, an earlier benchmark)
determines them. The mapping public id -> catalog id is written only to a private
RoutingBenchmark node; evaluation reads it to show routers the catalog under the benchmark's ids
and to execute their routes. The public export holds requests and the catalog as routers see it.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dibench.routing.environment import CatalogIndexes, RoutingEnvironment
from dibench.routing.errors import RoutingError
from dibench.routing.models import Contract
from dibench.routing.naming import mint_public_id
from dibench.stores.graph import Graph


@dataclass(frozen=True)
class BenchmarkIds:
    benchmark: str
    public_of: dict[str, str]  # catalog id -> public id

    def catalog_of(self) -> dict[str, str]:
        return {pub: cat for cat, pub in self.public_of.items()}


def mint(catalog_ids: list[str]) -> BenchmarkIds:
    public: set[str] = set()
    while len(public) < len(catalog_ids):  # distinct, and none equal to a catalog id
        public |= {mint_public_id() for _ in range(len(catalog_ids) - len(public))} - set(catalog_ids)
    drawn = sorted(public)
    secrets.SystemRandom().shuffle(drawn)  # no order of the catalog ids survives in the public ones
    return BenchmarkIds("bm_" + secrets.token_hex(6), dict(zip(sorted(catalog_ids), drawn)))


def _relabel(value: Any, ids: dict[str, str]) -> Any:
    """Every database id in a dumped contract: whole values, and the `@<db>` of a re-owned unit id."""
    if isinstance(value, dict):
        return {k: _relabel(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_relabel(v, ids) for v in value]
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        head, at, db = value.partition("@")
        if at and db.split("~")[0] in ids:
            return head + at + ids[db.split("~")[0]] + db[len(db.split("~")[0]):]
    return value


def publish(contracts: list[Contract], ids: BenchmarkIds) -> list[Contract]:
    """The contracts under the benchmark's ids: database ids mapped, task ids fresh and random."""
    out = []
    for c in contracts:
        data = _relabel(c.model_dump(mode="json"), ids.public_of)
        data.update(task_id="rt_" + secrets.token_hex(6), benchmark=ids.benchmark)
        out.append(Contract.model_validate(data))
    return out


def benchmark_key(catalog: str, benchmark: str) -> str:
    return f"routing-benchmark:{catalog}/{benchmark}"


def store(graph: Graph, catalog: str, ids: BenchmarkIds) -> dict[str, int]:
    pairs = sorted(ids.public_of.items())
    return graph.write("routing_benchmark_upsert", key=benchmark_key(catalog, ids.benchmark), catalog=catalog,
                       benchmark=ids.benchmark, catalog_ids=[c for c, _ in pairs], public_ids=[p for _, p in pairs])


def load(graph: Graph, catalog: str, benchmark: str) -> BenchmarkIds:
    """Private: the mapping of one generated benchmark of catalog."""
    rows = graph.read("routing_benchmark_mapping", catalog=catalog, benchmark=benchmark)
    if not rows:
        raise RoutingError(f"catalog {catalog!r} has no generated benchmark {benchmark!r}",
                           hint="evaluate contracts of a `dibench routing generate` run of this catalog")
    return BenchmarkIds(benchmark, dict(zip(rows[0]["catalog_ids"], rows[0]["public_ids"])))


def store_audit(graph: Graph, catalog: str, benchmark: str, audit: dict[str, Any]) -> None:
    graph.write("routing_benchmark_chance_set", catalog=catalog, benchmark=benchmark, audit=json.dumps(audit))


def load_audit(graph: Graph, catalog: str, benchmark: str) -> dict[str, Any] | None:
    """The benchmark's stored shortcut audit (its chance levels), None when it has none."""
    rows = graph.read("routing_benchmark_chance", catalog=catalog, benchmark=benchmark)
    return json.loads(rows[0]["audit"]) if rows and rows[0]["audit"] else None


def benchmark_of(contracts: list[Contract]) -> str | None:
    """The one benchmark the contracts belong to (None: contracts from before per-benchmark ids)."""
    found = {c.benchmark for c in contracts}
    if len(found) > 1:
        raise RoutingError(f"contracts of {len(found)} generated benchmarks mixed in one evaluation",
                           hint="evaluate one `routing generate` output at a time")
    return found.pop() if found else None


# ------------------------------------------------------------------------------ public export
def public_catalog(indexes: CatalogIndexes) -> list[dict[str, Any]]:
    """Every database exactly as a router's inspect tools show it, with its relationships."""
    env = RoutingEnvironment(indexes)
    return [{**env.inspect_database(pid), "summary": indexes.view.databases[pid].summary,
             "relationships": env.inspect_relationships(pid)} for pid in indexes.view.ids()]


def write_public(contracts: list[Contract], indexes: CatalogIndexes, folder: Path,
                 audit: dict[str, Any] | None = None) -> list[Path]:
    """tasks.jsonl (task id, request), catalog.json and manifest.json (the behaviour mix and the
    shortcut audit's chance levels): what a router may see; no gold, no mapping."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks, catalog = folder / "tasks.jsonl", folder / "catalog.json"
    tasks.write_text("".join(json.dumps({"task_id": c.task_id, "benchmark": c.benchmark, "request": c.request},
                                        sort_keys=True) + "\n" for c in sorted(contracts, key=lambda c: c.task_id)))
    catalog.write_text(json.dumps({"benchmark": benchmark_of(contracts), "databases": public_catalog(indexes)},
                                  indent=1, sort_keys=True, default=str))
    manifest = folder / "manifest.json"
    mix: dict[str, int] = {}
    for c in contracts:
        mix[str(c.behaviour)] = mix.get(str(c.behaviour), 0) + 1
    manifest.write_text(json.dumps({"benchmark": benchmark_of(contracts), "tasks": len(contracts),
                                    "behaviour_mix": mix, "shortcut_audit": audit}, indent=1, sort_keys=True))
    return [tasks, catalog, manifest]
