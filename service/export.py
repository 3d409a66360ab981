"""`dibench export`: a task subset chosen by a graph query, as files.

Query contract: the user's Cypher returns task keys, either a column `key` holding
`Task.key` strings (`MATCH (t:Task) ... RETURN t.key AS key`) or a column holding Task nodes
(`RETURN t`). It is checked for write clauses before it runs (service.cypher_guard) and runs in
a READ access-mode session. Presets (cypher/export_preset_<name>.cypher) are named queries of
the same shape.

An export holds a public view (what an agent may see: question, type, tier, answer format,
metadata), a private view (the task record of the answers brief: gold and base answers, SQL,
params, contract if present) and a manifest (query, parameters, counts, rule versions, a
fingerprint of the data, Run information, sha256 per task and per file). Output is
deterministic: sorted keys, tasks in key order, no export-time timestamps, so the same graph and
query give byte-identical files.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlglot import exp

from ingest.database import schema_columns
from service.cypher_guard import check_read_only
from service.errors import DibenchError
from service.graph import Graph, load
from service.policy import domain_policies
from service.warehouse import Warehouse
from sqlops.dialect import parse, render
from sqlops.transpile import transpile_all

PRESETS = ("domain", "analysis_type", "tier", "rule", "metric", "status")
FORMATS = ("jsonl", "csv", "hf")
KEY_CONTRACT = "the query returns task keys: a column `key` with Task.key strings, or a column of Task nodes"
PUBLIC_FIELDS = ("task_id", "domain", "analysis_type", "tier", "variant", "question", "answer_format", "metadata")
PRIVATE_FIELDS = ("task_id", "domain", "analysis_type", "tier", "question", "answer_format", "gold_answer",
                  "base_answer", "gold_sql", "base_sql", "params", "contract", "metric_ids", "rule_ids", "variant",
                  "featured_rule", "decisive_rules", "policy", "lifted_answer")
JSON_TEXT_FIELDS = ("gold_answer", "base_answer", "params", "contract", "metadata", "metric_ids", "rule_ids",
                    "decisive_rules", "policy", "lifted_answer", "gold_sql_dialects")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
FINGERPRINT_SQL = ("SELECT COUNT(*) AS n_rows, MD5(STRING_AGG(MD5(CAST(dibench_fp_row AS TEXT)), '' "
                   "ORDER BY MD5(CAST(dibench_fp_row AS TEXT)))) AS checksum FROM fp_table AS dibench_fp_row")


class ExportError(DibenchError):
    """An export query that breaks the key contract, or an export that cannot be written."""


@dataclass(frozen=True)
class ExportQuery:
    text: str
    params: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"cypher": self.text, "params": self.params, "preset": self.preset, "contract": KEY_CONTRACT}


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


def preset_query(name: str, params: dict[str, Any]) -> ExportQuery:
    if name not in PRESETS:
        raise ExportError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}")
    stmt = load(f"export_preset_{name}")
    if set(params) != set(stmt.params):
        raise ExportError(f"preset {name} takes exactly --param {', '.join(sorted(stmt.params))}=...; "
                          f"got {sorted(params) or 'none'}")
    return ExportQuery(stmt.text, dict(params), name)


def task_keys(graph: Graph, q: ExportQuery) -> list[str]:
    check_read_only(q.text)
    rows = graph.run_raw_read(q.text, q.params)
    keys: set[str] = set()
    for r in rows:
        if "key" in r and isinstance(r["key"], str):
            keys.add(r["key"])
            continue
        nodes = [v for v in r.values() if isinstance(v, dict) and str(v.get("key", "")).startswith("task:")]
        if not nodes:
            raise ExportError(f"export query returned a row without a task key: {sorted(r)}", hint=KEY_CONTRACT)
        keys.update(str(n["key"]) for n in nodes)
    return sorted(keys)


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
    if t.get("gold_sql_dialects"):
        rec["gold_sql_dialects"] = t["gold_sql_dialects"]
    return rec


def public_record(t: dict[str, Any]) -> dict[str, Any]:
    """No gold, no SQL, no rule ids (they would say which document to consult)."""
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


def read_snapshot(graph: Graph, q: ExportQuery, retries: int = 8) -> Snapshot:
    """Keys and records read between two equal readings of the domains' update sequence: an
    update that commits meanwhile makes us read again, so an export never mixes two states."""
    for _ in range(retries):
        before = graph.read("export_clock")
        keys = task_keys(graph, q)
        rows = graph.read("export_tasks", keys=keys) if keys else []
        if graph.read("export_clock") == before:
            return Snapshot(rows, before)
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


def _jsonl(records: list[dict[str, Any]], as_text: bool = False) -> bytes:
    lines = []
    for r in records:
        if as_text:
            r = {k: dumps(v) if k in JSON_TEXT_FIELDS else v for k, v in r.items()}
        lines.append(dumps(r) + "\n")
    return "".join(lines).encode()


def dataset_card(manifest: dict[str, Any]) -> bytes:
    counts = manifest["counts"]
    return (
        "---\nconfigs:\n- config_name: public\n  data_files: data/public.jsonl\n  default: true\n"
        "- config_name: private\n  data_files: data/private.jsonl\n---\n"
        "# dibench task export\n\n"
        f"{counts['tasks']} tasks chosen by a graph query (see `manifest.json`: query, parameters, rule versions, "
        "data fingerprint, runs, sha256 per task and file).\n\n"
        "- `data/public.jsonl`: what an agent may see (question, analysis type, tier, answer format, metadata).\n"
        "- `data/private.jsonl`: the task records with gold and base answers, SQL and parameters. Fields whose "
        "shape depends on the analysis type (`gold_answer`, `base_answer`, `params`, `contract`, `metadata`, "
        "`metric_ids`, `rule_ids`) hold JSON text, so that every row has one Arrow schema; decode them with "
        "`json.loads`.\n\n"
        "Load with `datasets.load_dataset(\"json\", data_files=\"data/public.jsonl\")`.\n"
    ).encode()


def build_files(snap: Snapshot, q: ExportQuery, fmt: str, fp: dict[str, Any],
                policies: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, bytes]:
    """{relative path: bytes} of an export, manifest included. Pure. `policies`: per domain, the
    metrics whose policy is incomplete (a conflict, a rule without effects): generation skipped them."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    tasks = [r["task"] for r in snap.rows]
    private = [private_record(t) for t in tasks]
    public = [public_record(t) for t in tasks]
    files: dict[str, bytes] = {}
    if fmt == "jsonl":
        files = {"public.jsonl": _jsonl(public), "private.jsonl": _jsonl(private)}
    elif fmt == "csv":
        files = {"public.csv": _csv(public, PUBLIC_FIELDS), "private.csv": _csv(private, PRIVATE_FIELDS)}
    else:
        files = {"data/public.jsonl": _jsonl(public, as_text=True), "data/private.jsonl": _jsonl(private, as_text=True)}
    versions = {(v["domain"], v["rule_id"], v["hash"]): v for r in snap.rows for v in r["rule_versions"]}
    runs = {r["run"]["key"]: r["run"] for r in snap.rows if r["run"]}
    manifest = {
        "format": fmt, "query": q.describe(),
        "counts": {"tasks": len(tasks), "by_domain": dict(sorted(Counter(t["domain"] for t in tasks).items())),
                   "by_analysis_type": dict(sorted(Counter(t["analysis_type"] for t in tasks).items())),
                   "by_tier": dict(sorted(Counter(t["tier"] for t in tasks).items())),
                   "by_status": dict(sorted(Counter(t.get("status") for t in tasks).items()))},
        "rule_versions": [versions[k] for k in sorted(versions)],
        "graph_update_seq": {c["domain"]: c["seq"] for c in snap.clock if c["domain"] in fp},
        "data_fingerprint": fp, "runs": [runs[k] for k in sorted(runs)],
        "incomplete_policies": policies or {},
        "tasks": {rec["task_id"]: {"sha256": sha256(dumps(rec).encode()), "rule_versions": t.get("rule_versions") or [],
                                   "data_fingerprint": _loads(t.get("data_fingerprint"))}
                  for rec, t in zip(private, tasks)},
    }
    if fmt == "hf":
        files["README.md"] = dataset_card(manifest)
    manifest["files"] = {name: sha256(data) for name, data in sorted(files.items())}
    files["manifest.json"] = (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False, default=str)
                              + "\n").encode()
    return files


def with_dialects(snap: Snapshot, dialects: Sequence[str]) -> Snapshot:
    """Each task's gold SQL transpiled to `dialects` (sqlops/transpile.py), in its private record."""
    for r in snap.rows:
        r["task"]["gold_sql_dialects"] = transpile_all(r["task"].get("gold_sql"), list(dialects)) if dialects else None
    return snap


def export(graph: Graph, wh: Warehouse, q: ExportQuery, fmt: str, out: Path,
           dialects: Sequence[str] = ()) -> dict[str, Any]:
    """Run the export and write its files under `out`; returns the manifest."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    snap = with_dialects(read_snapshot(graph, q), dialects)
    schemas = {c["domain"]: c["schema"] for c in snap.clock}
    domains = sorted({r["task"]["domain"] for r in snap.rows})
    incomplete = {d: [p.as_dict() for p in domain_policies(graph, d).values() if not p.complete] for d in domains}
    files = build_files(snap, q, fmt, fingerprint(wh, {d: schemas.get(d) or "" for d in domains}),
                        {d: ps for d, ps in incomplete.items() if ps})
    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return dict(json.loads(files["manifest.json"]))


def stream_records(graph: Graph, q: ExportQuery, view: str = "public", dialects: Sequence[str] = ()) -> Iterator[str]:
    """JSONL lines of one consistent snapshot (the HTTP API streams these)."""
    if view not in ("public", "private"):
        raise ExportError(f"unknown view {view!r}: public or private")
    snap = with_dialects(read_snapshot(graph, q), dialects)
    make = public_record if view == "public" else private_record
    for r in snap.rows:
        yield dumps(make(r["task"])) + "\n"
