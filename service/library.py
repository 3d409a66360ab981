"""The Python API: what `import dibench` offers, and what the CLI and the HTTP API call.

    import dibench
    pack = dibench.load_pack("demo")                     # a built-in domain, or a pack folder
    dibench.ingest_pack(pack)                            # the artifact linkage graph (idempotent)
    summary = dibench.generate(pack, target=40)          # validated tasks, written into the graph
    manifest = dibench.export("out/demo", preset="domain", params={"domain": "demo"})
    report = dibench.score("out/demo/private.jsonl", "answers.jsonl")

Each call uses the configured stores (DIBENCH_* settings) unless given a graph or a warehouse,
and raises a DibenchError subclass naming what is at fault.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.pack import Pack, load_pack as _load_pack, remember_pack
from dibench.evaluation.chance import ChanceLevels
from dibench.evaluation.harness import chance_for_records
from dibench.evaluation.scoring import Report, load_attempts, load_tasks, score_run
from dibench.generation.pipeline import Counter_, RunSummary, generate as _generate
from dibench.generation.shortcuts.audit import ShortcutAudit
from dibench.ingest.pipeline import IngestReport
from dibench.service.export import export as _export, export_query, stream_records
from dibench.service.ingest import Preview, ingest_and_rederive, preview as _preview
from dibench.service.shortcut_levels import records_audit
from dibench.stores.graph import Graph, apply_schema, get_graph
from dibench.stores.llm import configured_model
from dibench.stores.pack_data import warehouse_for
from dibench.stores.warehouse import Warehouse, get_warehouse

__all__ = ["chance_levels", "export", "export_lines", "generate", "ingest_pack", "ingest_preview", "load_pack", "score"]


def load_pack(name_or_path: str | Path, *, leave_out_refused_rules: bool = False) -> Pack:
    """A domain pack, read and validated: a built-in domain's name or a pack folder. With
    `leave_out_refused_rules`, a rule document that cannot be read is named in `pack.refused`
    and left out; anything else wrong still refuses the pack."""
    return _load_pack(name_or_path, leave_out_refused_rules=leave_out_refused_rules)


def _pack(pack: Pack | str | Path) -> Pack:
    return pack if isinstance(pack, Pack) else _load_pack(pack)


def ingest_pack(pack: Pack | str | Path, *, verify: bool = True, graph: Graph | None = None,
           warehouse: Warehouse | None = None, llm: BaseChatModel | None = None) -> IngestReport:
    """Build (or bring up to date) the pack's artifact linkage graph; running it twice changes
    nothing. Rule edges are checked counterfactually unless `verify` is False. The configured LLM
    (if any) extracts the effects of documents that state none. Tasks on a metric whose policy
    the ingest changed are re-derived as `update-rule` would (`report.rederived`)."""
    pk = _pack(pack)
    remember_pack(pk)
    graph = graph or get_graph()
    apply_schema(graph)
    wh = warehouse or warehouse_for(pk)
    return ingest_and_rederive(pk, graph, wh, llm if llm is not None else configured_model(), verify=verify)


def ingest_preview(pack: Pack | str | Path, *, graph: Graph | None = None, warehouse: Warehouse | None = None,
                   llm: BaseChatModel | None = None) -> Preview:
    """What `ingest_pack` would re-derive (retire, update) for the pack's new, edited or restored
    rule documents, planned without writing anything."""
    pk = _pack(pack)
    return _preview(pk, graph or get_graph(), warehouse or warehouse_for(pk),
                    llm if llm is not None else configured_model())


def generate(pack: Pack | str | Path, *, target: int = 40, seed: int = 42, workers: int = 1,
             min_per_type: int = 3, resume: str | None = None, new: bool = False, graph: Graph | None = None,
             progress: Callable[[str], None] | None = None, counter: Counter_ | None = None) -> RunSummary:
    """Generate validated tasks of an ingested pack into the graph. An unfinished run of the same
    pack, seed and target is resumed (`resume` names one, `new` starts afresh)."""
    pk = _pack(pack)
    remember_pack(pk)
    graph = graph or get_graph()
    apply_schema(graph)
    return _generate(pk, graph, target=target, seed=seed, workers=workers, min_per_type=min_per_type,
                     progress=progress, counter=counter, resume=resume, new=new)


def export(out: str | Path, *, cypher: str | None = None, preset: str | None = None,
           params: Mapping[str, Any] | None = None, filters: Mapping[str, Any] | None = None,
           domain: str | None = None, audience: str = "public", fmt: str = "jsonl", dialects: Sequence[str] = (),
           graph: Graph | None = None, warehouse: Warehouse | None = None, allow_empty: bool = True) -> dict[str, Any]:
    """Write the tasks that a preset, a filter over public fields (`{"tier": ["K+A+R"]}`) or, for
    the private audience only, a read-only Cypher query (`RETURN t.key AS key`) selects from one
    domain into the folder `out`, for one audience; returns the manifest. With `allow_empty`
    False, a selection of no task writes nothing and raises EmptyExport."""
    q = export_query(cypher, preset, dict(params or {}), dict(filters) if filters is not None else None)
    return _export(graph or get_graph(), warehouse or get_warehouse(), q, fmt, Path(out),
                   domain=domain or q.domain_hint(), audience=audience, dialects=dialects, allow_empty=allow_empty)


def export_lines(*, cypher: str | None = None, preset: str | None = None, params: Mapping[str, Any] | None = None,
                 filters: Mapping[str, Any] | None = None, domain: str | None = None, audience: str = "public",
                 dialects: Sequence[str] = (), graph: Graph | None = None) -> Iterator[str]:
    """The JSONL lines of the same export, from one consistent snapshot, without writing files."""
    q = export_query(cypher, preset, dict(params or {}), dict(filters) if filters is not None else None)
    return stream_records(graph or get_graph(), q, audience, domain or q.domain_hint(), dialects)


def score(tasks: str | Path | Sequence[Mapping[str, Any]], answers: str | Path | Mapping[str, Any]) -> Report:
    """Score answers ({task_id: answer}, or a JSONL file of {"task_id", "answer"} lines) against
    task records (a private export's JSONL file, or the records themselves)."""
    records = load_tasks(tasks) if isinstance(tasks, (str, Path)) else tasks
    if isinstance(answers, (str, Path)):
        attempts = load_attempts(answers)
        given = {task: answer for (task, trial), answer in attempts.items() if trial == 1}
        return score_run(records, given, trials=attempts)
    return score_run(records, answers)


def chance_levels(tasks: str | Path | Sequence[Mapping[str, Any]], *, graph: Graph | None = None,
                  warehouse: Warehouse | None = None) -> ChanceLevels:
    """What the reference agents no-rule, featured-rule-only and keyword-dump score on the same
    task records (a file or the records), run on the domain's warehouse and knowledge base."""
    records = load_tasks(tasks) if isinstance(tasks, (str, Path)) else tasks
    return chance_for_records(graph or get_graph(), warehouse or get_warehouse(), [dict(r) for r in records])


def shortcut_audit(tasks: str | Path | Sequence[Mapping[str, Any]], *, graph: Graph | None = None) -> ShortcutAudit:
    """The best no-understanding strategy per analysis type x tier x variant on exactly these
    private task records (a file or the records), beside the oracle (generation/shortcuts)."""
    records = load_tasks(tasks) if isinstance(tasks, (str, Path)) else tasks
    return records_audit([dict(r) for r in records], graph or get_graph())
