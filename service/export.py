"""`dibench export`: a task subset chosen by a graph query, as files.

A public export selects tasks with a preset or a structured filter over public fields
(`PublicFilter`, one statement of ours): it cannot reach a private value, since no text of the
caller's reaches Neo4j. User Cypher (`RETURN t.key AS key`) is for the private audience and runs
only when Neo4j's plan shows a read (stores.cypher_guard). The service materialises the records
itself, from one domain and a whitelist of properties per audience (`public`: core/visibility.py;
`private`: adds gold and base answers, SQL, parameters). An export holds its audience's views and
a manifest; the same graph and query give byte-identical files.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from sqlglot import exp

from dibench.core.ambiguity import ambiguous
from dibench.core.contracts import task_contract
from dibench.core.errors import DibenchError
from dibench.core.visibility import public_properties, public_view
from dibench.evaluation.tasks import load_tasks, task_dicts
from dibench.generation.writeback import asked
from dibench.service.shortcut_levels import records_audit
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.transpile import transpile_all
from dibench.stores.cypher_guard import check_read_only, run_user_query
from dibench.stores.graph import Graph, load
from dibench.stores.pack_data import schema_columns
from dibench.stores.policies import domain_policies
from dibench.stores.warehouse import Warehouse

PRESETS = ("domain", "analysis_type", "tier", "rule", "metric", "status")
FORMATS = ("jsonl", "csv", "hf")
AUDIENCES = ("public", "private")
KEY_CONTRACT = "the query returns task keys: a column `key` with Task.key strings (RETURN t.key AS key)"
PUBLIC_SURFACE = ("a public export selects with --preset or --filter over the public fields "
                  "(docs/public-surface.md); arbitrary Cypher is for the private audience only "
                  "(--audience private; over HTTP: view private, with the write token)")
PUBLIC_FIELDS = ("task_id", "domain", "analysis_type", "tier", "variant", "question", "answer_format", "metadata")
PRIVATE_FIELDS = ("task_id", "domain", "analysis_type", "tier", "question", "answer_format", "gold_answer",
                  "base_answer", "gold_sql", "base_sql", "params", "contract", "metric_ids", "rule_ids", "variant",
                  "featured_rule", "decisive_rules", "policy", "lifted_answer")
JSON_TEXT_FIELDS = ("gold_answer", "base_answer", "params", "contract", "metadata", "metric_ids", "rule_ids",
                    "decisive_rules", "policy", "lifted_answer", "gold_sql_dialects")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
FINGERPRINT_SQL = ("SELECT COUNT(*) AS n_rows, MD5(STRING_AGG(MD5(CAST(dibench_fp_row AS TEXT)), '' "
                   "ORDER BY MD5(CAST(dibench_fp_row AS TEXT)))) AS checksum FROM fp_table AS dibench_fp_row")
MAX_FILTER_VALUES = 10_000


class ExportError(DibenchError):
    """An export query that breaks the key contract, or an export that cannot be written."""


class EmptyExport(ExportError):
    """The query selected no task, and the caller asked for no empty export: nothing was written."""


class PrivateOnly(ExportError):
    """A public export asked for user Cypher: only the private audience may run it."""

    hint = PUBLIC_SURFACE


class PublicFilter(BaseModel):
    """The public selection: tasks whose public fields take one of the given values (no field:
    any value; `status` defaults to admitted in exports). `metric` and `rule` follow the task's
    ON_METRIC and USES_RULE edges, which the impact and rules-for answers show as well."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    domain: list[str] | None = None
    analysis_type: list[str] | None = None
    tier: list[str] | None = None
    variant: list[str] | None = None
    status: list[str] | None = None
    answer_format: list[str] | None = None
    version: list[int] | None = None
    key: list[str] | None = None
    metric: list[str] | None = None
    rule: list[str] | None = None
    # unreviewed / passed / failed: the reviews of the task's current version (cypher/export_filter.cypher)
    review: list[Literal["unreviewed", "passed", "failed"]] | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        """One value or a list of them; strings at most 500 characters, at most MAX_FILTER_VALUES."""
        values = v if isinstance(v, (list, tuple)) or v is None else [v]
        if values is not None and len(values) > MAX_FILTER_VALUES:
            raise ValueError(f"at most {MAX_FILTER_VALUES} values")
        if values is not None and any(isinstance(x, str) and len(x) > 500 for x in values):
            raise ValueError("values are at most 500 characters")
        return values

    def params(self) -> dict[str, Any]:
        return self.model_dump()


FILTER_FIELDS = tuple(PublicFilter.model_fields)
assert set(FILTER_FIELDS) <= public_properties("Task") | {"metric", "rule", "review"}, "a filter field must be public"


def public_filter(raw: dict[str, Any], *, admitted: bool = True) -> PublicFilter:
    """A PublicFilter from request data, refused in one line naming the field (an unknown field is
    named as not public: a private property cannot be filtered on by any spelling)."""
    unknown = sorted(str(k)[:60] for k in raw if k not in FILTER_FIELDS)
    if unknown:
        raise ExportError(f"filter field {unknown[0]!r} is not a public field; public filter fields: "
                          f"{', '.join(FILTER_FIELDS)}", hint=PUBLIC_SURFACE)
    try:
        f = PublicFilter.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ExportError(f"filter field {str(err['loc'][0])[:60]!r}: {err['msg']}") from None
    return f.model_copy(update={"status": ["admitted"]}) if admitted and f.status is None else f


@dataclass(frozen=True)
class ExportQuery:
    """What selects an export's tasks: user Cypher (`text`, private audience only) or the public
    filter statement with a PublicFilter (from --filter, or from a preset)."""

    text: str
    params: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None
    selection: PublicFilter | None = None

    @property
    def user(self) -> bool:
        """User Cypher, which only the private audience runs."""
        return self.selection is None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cypher": self.text, "params": self.params, "preset": self.preset,
                               "contract": KEY_CONTRACT}
        if self.selection is not None:
            out["filter"] = {k: v for k, v in self.selection.params().items() if v is not None}
        return out

    def domain_hint(self) -> str | None:
        """The one domain a selection names: its export needs no separate --domain."""
        named = self.selection.domain if self.selection is not None else None
        return named[0] if named and len(named) == 1 else None


def filter_query(selection: PublicFilter, preset: str | None = None, params: dict[str, Any] | None = None) -> ExportQuery:
    return ExportQuery(load("export_filter").text, dict(params or {}), preset, selection)


def export_query(cypher: str | None, preset: str | None, params: dict[str, Any],
                 filters: dict[str, Any] | None = None) -> ExportQuery:
    """The query of an export request: exactly one of user Cypher, a preset and a filter."""
    given = [x for x in (cypher, preset, filters) if x is not None]
    if len(given) != 1:
        raise ExportError("pass exactly one of --cypher, --preset and --filter (HTTP: cypher, preset, filter)")
    if preset is not None:
        return preset_query(preset, params)
    if filters is not None:
        if params:
            raise ExportError("--param goes with --cypher or --preset; a filter carries its own values")
        return filter_query(public_filter(filters))
    return ExportQuery(str(cypher), params)


def parse_param(item: str) -> tuple[str, Any]:
    """`k=v`; v is read as JSON when it is a JSON number, boolean, null, list or object, else a string."""
    if "=" not in item:
        raise ExportError(f"--param {item!r}: expected k=v")
    k, v = item.split("=", 1)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
        raise ExportError(f"--param {item!r}: invalid parameter name {k!r}")
    try:
        value = json.loads(v)
    except json.JSONDecodeError:
        return k, v
    return k, value if not isinstance(value, str) else v


def parse_filters(items: Sequence[str]) -> dict[str, Any] | None:
    """`--filter k=v[,v...]` items as one filter ({k: [v, ...]}; a repeated k adds values)."""
    if not items:
        return None
    out: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ExportError(f"--filter {item[:80]!r}: expected field=value[,value...]")
        k, v = item.split("=", 1)
        out.setdefault(k, []).extend(int(x) if k == "version" and x.strip().isdigit() else x for x in v.split(","))
    return out


# The preset and the filter field it sets (`status` takes any status; the others admitted tasks).
_PRESET_FIELD = {"domain": "domain", "analysis_type": "analysis_type", "tier": "tier", "rule": "rule",
                 "metric": "metric", "status": "status"}


def preset_query(name: str, params: dict[str, Any]) -> ExportQuery:
    """A named selection: one public filter field, given as its one parameter (`--param tier=K`)."""
    if name not in PRESETS:
        raise ExportError(f"unknown preset {name[:40]!r}; presets: {', '.join(PRESETS)}")
    field_name = _PRESET_FIELD[name]
    if set(params) != {field_name}:
        raise ExportError(f"preset {name} takes exactly --param {field_name}=...; got {sorted(params) or 'none'}")
    value = params[field_name]
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ExportError(f"preset {name}: --param {field_name} takes one value, not {type(value).__name__}")
    return filter_query(public_filter({field_name: str(value)}), name, params)


def task_keys(graph: Graph, q: ExportQuery, audience: str = "public") -> list[str]:
    """Sorted distinct task keys the query selects (column `key`; values that are not task keys
    are ignored, never echoed). User Cypher runs for the private audience only."""
    if q.selection is not None:
        rows = graph.read("export_filter", **q.selection.params())
    else:
        refuse_public_cypher(q, audience)
        rows = run_user_query(graph, q.text, q.params)
    keys: set[str] = set()
    for r in rows:
        if "key" not in r:
            raise ExportError(f"export query returned no `key` column (columns: {_columns(r)})", hint=KEY_CONTRACT)
        if isinstance(r["key"], str) and r["key"].startswith("task:"):
            keys.add(r["key"])
    return sorted(keys)


def refuse_public_cypher(q: ExportQuery, audience: str) -> None:
    """User Cypher: its text pass (local), then, for a public export, a refusal before anything
    reaches Neo4j."""
    if q.user:
        check_read_only(q.text)
        if _public(audience):
            raise PrivateOnly("refused Cypher: a public export cannot run arbitrary Cypher")


def _columns(row: dict[str, Any]) -> str:
    """Column names for an error: the caller's own aliases, bounded."""
    return ", ".join(name[:40] for name in sorted(row)[:10])


def _public(audience: str) -> bool:
    if audience not in AUDIENCES:
        raise ExportError(f"unknown audience {audience[:40]!r}: public or private")
    return audience == "public"


def resolve_domain(clock: list[dict[str, Any]], domain: str | None) -> str:
    """The one domain an export covers: the one named, or the graph's only domain."""
    names = [c["domain"] for c in clock]
    if domain is None:
        if len(names) == 1:
            return str(names[0])
        raise ExportError(f"the graph holds {len(names)} domains: name one with --domain (HTTP: `domain`)")
    if domain not in names:
        raise ExportError(f"no domain {domain[:80]!r} in the graph")
    return domain


# ------------------------------------------------------------------------------ records
def _loads(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str) and v else None


def private_record(t: dict[str, Any]) -> dict[str, Any]:
    rec = {
        "task_id": t["key"], "domain": t["domain"], "analysis_type": t["analysis_type"], "tier": t["tier"],
        "question": t["question"], "answer_format": t["answer_format"], "gold_answer": _loads(t.get("gold_answer")),
        "base_answer": _loads(t.get("base_answer")), "gold_sql": t.get("gold_sql"), "base_sql": t.get("base_sql"),
        "params": _loads(t.get("gold_params")) or {}, "metric_ids": [t["metric_id"]] if t.get("metric_id") else [],
        "rule_ids": list(t.get("rule_ids") or []), "variant": t.get("variant", "standard"),
        "featured_rule": t.get("featured_rule"), "decisive_rules": list(t.get("decisive_rules") or []),
        "policy": list(t.get("policy") or []), "lifted_answer": _loads(t.get("lifted_answer")),
    }
    if t.get("contract"):
        rec["contract"] = _loads(t["contract"])
    elif t.get("metric_rounding") is not None:
        # as evaluation makes it (evaluation.tasks): scorers of the export need the contract
        rec["contract"] = task_contract(str(t["analysis_type"]), int(t["metric_rounding"]),
                                       _loads(t.get("gold_answer"))).model_dump(mode="json")
    if t.get("gold_sql_dialects"):
        rec["gold_sql_dialects"] = t["gold_sql_dialects"]
    return rec


def public_record(t: dict[str, Any]) -> dict[str, Any]:
    """No gold, no SQL, no rule ids (they would say which document to consult): public Task
    properties only (core/visibility.py)."""
    t = public_view("Task", t)
    return {"task_id": t["key"], "domain": t["domain"], "analysis_type": t["analysis_type"], "tier": t["tier"],
            "variant": t.get("variant", "standard"), "question": t["question"], "answer_format": t["answer_format"],
            "metadata": {"status": t.get("status"), "version": t.get("version", 1)}}


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------ consistent read
@dataclass(frozen=True)
class Snapshot:
    rows: list[dict[str, Any]]
    clock: list[dict[str, Any]]
    domain: str


def read_snapshot(graph: Graph, q: ExportQuery, domain: str | None = None, audience: str = "public",
                  retries: int = 8) -> Snapshot:
    """Keys and one domain's records, for one audience, read between two equal readings of the
    domains' update sequence: an update that commits meanwhile makes us read again, so an export
    never mixes two states."""
    statement = "export_tasks_public" if _public(audience) else "export_tasks"
    refuse_public_cypher(q, audience)  # before any other question
    for _ in range(retries):
        before = graph.read("export_clock")
        scope = resolve_domain(before, domain)
        keys = task_keys(graph, q, audience)
        rows = graph.read(statement, keys=keys, domain=scope) if keys else []
        if graph.read("export_clock") == before:
            return Snapshot(rows, before, scope)
    raise ExportError(f"the graph kept changing during {retries} attempts to read a consistent export",
                      hint="retry when the running updates have finished")


# ------------------------------------------------------------------------------ fingerprint
def table_fingerprint(wh: Warehouse, schema: str, table: str) -> dict[str, Any]:
    if not (_IDENT.fullmatch(schema) and _IDENT.fullmatch(table)):
        raise ExportError(f"cannot fingerprint {schema}.{table}: not a plain identifier")
    tree = parse(FINGERPRINT_SQL, where="fingerprint")
    src = tree.find(exp.Table)
    assert src is not None
    src.set("this", exp.to_identifier(table, quoted=True))
    src.set("db", exp.to_identifier(schema, quoted=True))
    res = wh.execute_readonly(render(tree), {})
    n, checksum = res.rows[0]
    return {"rows": int(n), "md5": checksum}


def fingerprint(wh: Warehouse, schemas: dict[str, str]) -> dict[str, Any]:
    """{domain: {schema, tables: {table: {rows, md5}}}} for the domains in the export."""
    out: dict[str, Any] = {}
    for domain, schema in sorted(schemas.items()):
        tables = sorted(schema_columns(wh, schema)) if schema else []
        out[domain] = {"schema": schema, "tables": {t: table_fingerprint(wh, schema, t) for t in tables}}
    return out


# ------------------------------------------------------------------------------ files
def _csv(records: list[dict[str, Any]], fields: tuple[str, ...]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for r in records:
        w.writerow([dumps(r.get(f)) if f in JSON_TEXT_FIELDS else ("" if r.get(f) is None else r.get(f))
                    for f in fields])
    return buf.getvalue().encode()


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(dumps(r) + "\n" for r in records).encode()


# In the Hugging Face export, the fields whose shape depends on the analysis type (a number, a
# list of rows, a map) are JSON text, so that every row of a split has one Arrow schema; null
# stays null. Every other field keeps its JSON type: lists are lists, numbers numbers.
HF_TEXT_FIELDS = ("gold_answer", "base_answer", "lifted_answer", "params", "contract", "gold_sql_dialects")
VARIANTS = ("standard", "oracle", "no_rule")
CITATION = """@software{dibench,
  title  = {dibench: verifiable benchmarks for enterprise data agents from an artifact linkage graph},
  year   = {2026},
  note   = {version 0.1.0}
}"""


def _hf_record(r: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if v is None else dumps(v)) if k in HF_TEXT_FIELDS else v for k, v in r.items()}


def _hf_files(view: str, records: list[dict[str, Any]]) -> dict[str, bytes]:
    """One split per variant: data/<view>/<variant>.jsonl (variants with no task have no file)."""
    out = {}
    for variant in VARIANTS:
        rows = [_hf_record(r) for r in records if r.get("variant", "standard") == variant]
        if rows:
            out[f"data/{view}/{variant}.jsonl"] = _jsonl(rows)
    return out


def dataset_card(manifest: dict[str, Any], files: dict[str, bytes], by_variant: Counter[str]) -> bytes:
    """The dataset card: a config per audience view with a split per variant, the license the
    data owner sets, a citation, the task counts and the digest of the manifest's task list."""
    counts = manifest["counts"]
    configs = []
    for view in ("public", "private"):
        splits = [(v, f"data/{view}/{v}.jsonl") for v in VARIANTS if f"data/{view}/{v}.jsonl" in files]
        if splits:
            configs.append(f"- config_name: {view}\n" + ("  default: true\n" if view == "public" else "")
                           + "  data_files:\n" + "".join(f"  - split: {v}\n    path: {p}\n" for v, p in splits))
    tasks_digest = sha256(dumps(manifest["tasks"]).encode())
    rows = "".join(f"| {k} | {v} |\n" for k, v in [*sorted(by_variant.items()), *counts["by_analysis_type"].items()])
    return (
        "---\nlicense: other\nlicense_name: set-by-the-data-owner\npretty_name: dibench tasks of "
        f"{manifest['domain']}\ntask_categories:\n- table-question-answering\n- question-answering\n"
        f"configs:\n{''.join(configs)}---\n"
        f"# dibench tasks of {manifest['domain']}\n\n"
        f"{counts['tasks']} tasks chosen by a graph query. `manifest.json` holds the query, parameters, rule "
        "versions, data fingerprint, runs, and the sha256 of each task and file; the sha256 of its task list "
        f"(`tasks`, canonical JSON) is `{tasks_digest}`.\n\n"
        "The license is the data owner's: the tasks are computed from their database and documents.\n\n"
        "| split or analysis type | tasks |\n|---|---|\n" + rows + "\n"
        "- config `public`: what an agent may see (question, analysis type, tier, answer format, metadata).\n"
        "- config `private`: adds gold and base answers, SQL, parameters and contracts. "
        f"{', '.join(f'`{f}`' for f in HF_TEXT_FIELDS)} hold JSON text (their shape depends on the analysis "
        "type; decode with `json.loads`); a missing value is null.\n\n"
        "Load with `datasets.load_dataset(\"<this folder>\", \"public\", split=\"standard\")`.\n\n"
        f"## Citation\n\n```bibtex\n{CITATION}\n```\n"
    ).encode()


def _view_files(fmt: str, view: str, records: list[dict[str, Any]]) -> dict[str, bytes]:
    fields = PUBLIC_FIELDS if view == "public" else PRIVATE_FIELDS
    if fmt == "jsonl":
        return {f"{view}.jsonl": _jsonl(records)}
    if fmt == "csv":
        return {f"{view}.csv": _csv(records, fields)}
    return _hf_files(view, records)


def build_files(snap: Snapshot, q: ExportQuery, fmt: str, fp: dict[str, Any], audience: str = "public",
                policies: dict[str, list[dict[str, Any]]] | None = None,
                unambiguous: int | None = None, policy_order: dict[str, list[str]] | None = None,
                shortcuts: dict[str, Any] | None = None) -> dict[str, bytes]:
    """{relative path: bytes} of an export, manifest included. Pure. A public export holds the
    public view only, and its manifest hashes public records (a hash of a private record would
    let anyone check a guessed gold answer). `policies`: per domain, the metrics whose policy is
    incomplete (a conflict, a rule without effects): generation skipped them. `unambiguous`: the
    admitted tasks checked for one answer per question (`check_unambiguous`). `policy_order`: the
    rules of each exported task's metric in the order their effects apply (what gold applied).
    `shortcuts`: the shortcut audit of the exported admitted tasks (service/shortcut_levels.py)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    tasks = [r["task"] for r in snap.rows]
    public = [public_record(t) for t in tasks]
    files = _view_files(fmt, "public", public)
    hashed = public
    if not _public(audience):
        hashed = [private_record(t) for t in tasks]
        files.update(_view_files(fmt, "private", hashed))
    versions = {(v["domain"], v["rule_id"], v["hash"]): v for r in snap.rows for v in r["rule_versions"]}
    runs = {r["run"]["key"]: r["run"] if not _public(audience) else public_view("Run", r["run"])
            for r in snap.rows if r["run"]}
    manifest = {
        "format": fmt, "audience": audience, "domain": snap.domain, "query": q.describe(),
        "counts": {"tasks": len(tasks), "by_domain": dict(sorted(Counter(t["domain"] for t in tasks).items())),
                   "by_analysis_type": dict(sorted(Counter(t["analysis_type"] for t in tasks).items())),
                   "by_tier": dict(sorted(Counter(t["tier"] for t in tasks).items())),
                   "by_status": dict(sorted(Counter(t.get("status") for t in tasks).items())),
                   "by_variant": dict(sorted(Counter(t.get("variant") for t in tasks).items()))},
        "rule_versions": [versions[k] for k in sorted(versions)],
        "graph_update_seq": {c["domain"]: c["seq"] for c in snap.clock if c["domain"] in fp},
        "data_fingerprint": fp, "runs": [runs[k] for k in sorted(runs)],
        "incomplete_policies": policies or {},
        "policy_order": policy_order or {},
        "invariants": {"one_answer_per_question": {"admitted_tasks": unambiguous, "violations": 0}},
        # The best no-understanding strategy per analysis type x tier x variant on these tasks.
        "shortcut_audit": shortcuts,
        "tasks": {rec["task_id"]: {"sha256": sha256(dumps(rec).encode()), "rule_versions": t.get("rule_versions") or [],
                                   "data_fingerprint": _loads(t.get("data_fingerprint"))}
                  for rec, t in zip(hashed, tasks)},
    }
    if fmt == "hf":
        files["README.md"] = dataset_card(manifest, files, Counter(r["variant"] for r in public))
    manifest["files"] = {name: sha256(data) for name, data in sorted(files.items())}
    files["manifest.json"] = (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False, default=str)
                              + "\n").encode()
    return files


def with_dialects(snap: Snapshot, dialects: Sequence[str]) -> Snapshot:
    """Each task's gold SQL transpiled to `dialects` (sqlops/transpile.py), in its private record."""
    for r in snap.rows:
        r["task"]["gold_sql_dialects"] = transpile_all(r["task"].get("gold_sql"), list(dialects)) if dialects else None
    return snap


def check_unambiguous(graph: Graph, snap: Snapshot) -> int:
    """The number of admitted tasks in the export, after checking that no two of them share a
    question and differ in gold (core/ambiguity.py); ExportError names a pair otherwise."""
    keys = [r["task"]["key"] for r in snap.rows]
    tasks = asked(graph, snap.domain, keys) if keys else []
    found = ambiguous(tasks)
    if found:
        first, others = next(iter(found.items()))
        raise ExportError(f"{len(found)} admitted tasks of the export share their question with a task of another "
                          f"answer (e.g. {first} and {others[0]}): an agent cannot answer both right",
                          hint=f"run `dibench generate {snap.domain}` again: it rejects ambiguous questions")
    return len(tasks)


def export_audit(graph: Graph, snap: Snapshot) -> dict[str, Any] | None:
    """The shortcut audit of the export's admitted tasks (None: it holds none)."""
    keys = {r["task"]["key"] for r in snap.rows if r["task"].get("status") == "admitted"}
    if not keys:
        return None
    records = [t for t in load_tasks(graph, snap.domain) if t.task_id in keys]
    return records_audit(task_dicts(records), graph).model_dump(mode="json") if records else None


def export(graph: Graph, wh: Warehouse, q: ExportQuery, fmt: str, out: Path, *, domain: str | None = None,
           audience: str = "public", dialects: Sequence[str] = (), allow_empty: bool = True) -> dict[str, Any]:
    """Run the export of one domain for one audience and write its files under `out`; returns
    the manifest. Nothing is written when the query, the domain or the folder is refused, nor
    (EmptyExport) when the query selects no task and `allow_empty` is False."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    output_folder(out, create=False)  # refuse a bad -o before the query runs
    snap = with_dialects(read_snapshot(graph, q, domain, audience), () if _public(audience) else dialects)
    if not snap.rows and not allow_empty:
        raise EmptyExport("the query selected 0 tasks; nothing was written")
    schemas = {c["domain"]: c["schema"] for c in snap.clock}
    policies = domain_policies(graph, snap.domain)
    incomplete = [p.as_dict() for p in policies.values() if not p.complete]
    # Rule ids say which document to consult: the order goes into private manifests only.
    exported = {r["task"].get("metric_id") for r in snap.rows} if not _public(audience) else set()
    order = {m: p.order() for m, p in sorted(policies.items()) if m in exported and p.order()}
    checked = check_unambiguous(graph, snap)
    files = build_files(snap, q, fmt, fingerprint(wh, {snap.domain: schemas.get(snap.domain) or ""}), audience,
                        {snap.domain: incomplete} if incomplete else {}, checked, order,
                        export_audit(graph, snap))
    write_files(output_folder(out), files)
    return dict(json.loads(files["manifest.json"]))


def stream_records(graph: Graph, q: ExportQuery, audience: str = "public", domain: str | None = None,
                   dialects: Sequence[str] = ()) -> Iterator[str]:
    """JSONL lines of one consistent snapshot (the HTTP API streams these)."""
    snap = with_dialects(read_snapshot(graph, q, domain, audience), () if _public(audience) else dialects)
    check_unambiguous(graph, snap)
    make = public_record if _public(audience) else private_record
    for r in snap.rows:
        yield dumps(make(r["task"])) + "\n"


# ------------------------------------------------------------------------------ safe writing
_SPECIAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def output_folder(out: Path, create: bool = True) -> Path:
    """The export folder, refused (one line) when it climbs with `..`, is a symlink, lies in a
    kernel file system or is not a folder. Created when missing (with `create`)."""
    if ".." in out.parts:
        raise ExportError(f"output folder {str(out)[:200]!r}: `..` is not allowed; give the folder itself")
    absolute = Path.cwd() / out
    real = absolute.resolve()
    if any(real == r or r in real.parents for r in _SPECIAL_ROOTS):
        raise ExportError(f"output folder {str(out)[:200]!r}: not a place for files (kernel file system)")
    if absolute.is_symlink():
        raise ExportError(f"output folder {str(out)[:200]!r} is a symlink; give the real folder")
    if not create:
        if absolute.exists() and not absolute.is_dir():
            raise ExportError(f"output folder {str(out)[:200]!r} is not a folder")
        return absolute
    try:
        absolute.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"output folder {str(out)[:200]!r}: cannot create it ({exc.strerror})") from None
    if not absolute.is_dir():
        raise ExportError(f"output folder {str(out)[:200]!r} is not a folder")
    return absolute


def _open_dir(parent_fd: int, name: str) -> int:
    """A sub-folder, one or more levels down, opened without following a symlink at any level
    (each level created when missing)."""
    fd = os.dup(parent_fd)
    try:
        for part in Path(name).parts:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_target(dir_fd: int, name: str, shown: str) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ExportError(f"{shown}: exists and is not a regular file (symlink, folder or device); not overwritten")


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write `files` ({relative path: bytes}) inside `folder` only: every target is checked before
    anything is written, each file goes to a temp file opened with O_NOFOLLOW | O_EXCL and is
    renamed over the target, so a symlink planted in the folder is never written through."""
    for name in files:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ExportError(f"{name[:200]}: export file names stay inside the output folder")
    try:
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ExportError(f"output folder {str(folder)[:200]!r}: cannot open it ({exc.strerror})") from None
    fds = {"": root}
    try:
        for name in files:
            parent = str(Path(name).parent) if Path(name).parent != Path(".") else ""
            if parent not in fds:
                fds[parent] = _open_dir(root, parent)
            _check_target(fds[parent], Path(name).name, str(folder / name)[:200])
        for name, data in files.items():
            parent = str(Path(name).parent) if Path(name).parent != Path(".") else ""
            _write_one(fds[parent], Path(name).name, data)
    except OSError as exc:
        raise ExportError(f"cannot write the export in {str(folder)[:200]!r}: {exc.strerror}") from None
    finally:
        for fd in fds.values():
            os.close(fd)


def _write_one(dir_fd: int, name: str, data: bytes) -> None:
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
