"""Rule step: Rule and RuleVersion nodes, rule -> metric edges (counterfactually verified) and
rule -> dimension applicability edges.

Effects come from the front matter; when absent, from an LLM extractor if one is configured;
otherwise the rule is ingested without effects and a warning says so. A document whose
extraction fails is reported and left out, without touching the graph for it.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError, PackError
from dibench.core.keys import dimension_key, metric_key, row, rule_key, rule_version_key
from dibench.core.pack import Pack, RuleDoc, _rel
from dibench.ingest.conflicts import conflict_lines, pack_conflicts
from dibench.ingest.extract import PROMPT_VERSION as EXTRACT_PROMPT_VERSION, extract_effects
from dibench.ingest.validate import document_problems
from dibench.ingest.verify import EdgeCheck, SideCache, edge_window, prefetch, verify_effect
from dibench.sqlops.ops import AnyEffect
from dibench.stores.graph import Graph
from dibench.stores.llm import describe
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse


@dataclass
class RulePlan:
    rules: list[dict[str, Any]] = field(default_factory=list)
    modifies: list[dict[str, Any]] = field(default_factory=list)
    applies: list[dict[str, Any]] = field(default_factory=list)
    mentions: list[dict[str, Any]] = field(default_factory=list)  # effect-less rule -> metric it names
    prune: list[dict[str, Any]] = field(default_factory=list)
    checks: list[EdgeCheck] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    problems: list[PackError] = field(default_factory=list)  # `domain validate`'s, of the documents left out
    conflicts: list[str] = field(default_factory=list)  # unresolved policy conflicts, one line each


def effect_json(eff: AnyEffect) -> str:
    return json.dumps(eff.model_dump(mode="json", exclude_none=True), sort_keys=True)


def needs_extraction(doc: RuleDoc) -> bool:
    return doc.front.effects is None


def doc_effects(doc: RuleDoc, pack: Pack, llm: BaseChatModel | None, plan: RulePlan, graph: Graph | None = None,
                columns: dict[str, dict[str, str]] | None = None) -> tuple[list[AnyEffect], str]:
    if not needs_extraction(doc):
        return list(doc.front.effects or []), "front_matter"
    if llm is None:
        named = mentioned_metrics(doc, pack)
        also = (f"; the policy of {', '.join(named)} is unknown until it does, so generation skips "
                f"{'it' if len(named) == 1 else 'them'}") if named else ""
        plan.warnings.append(f"{_rel(doc.path)}: no effects in front matter and no LLM configured; "
                             f"ingested without effects (set DIBENCH_LLM or add `effects`){also}")
        return [], "none"
    # Candidate metrics are selected through the graph: the caller has written the metric/table part.
    assert graph is not None, "LLM extraction needs the graph"
    return list(extract_effects(doc, pack, llm, graph, columns).effects), "llm"


def mentioned_metrics(doc: RuleDoc, pack: Pack) -> list[str]:
    """Metrics a document concerns: it names the metric by id or by name (singular or plural), or
    names a column the metric's value aggregates ("rating", "amount": what the document defines
    is what the metric counts). Whole words, case-insensitive, `_` read as a space."""
    text = " ".join(f"{doc.front.title}\n{doc.body}".lower().replace("_", " ").split())
    out = []
    for m in pack.metrics:
        if any(re.search(rf"(?<![\w-]){re.escape(needle)}(?![\w-])", text) for needle in needles(m)):
            out.append(m.id)
    return out


def needles(m: Any) -> list[str]:
    """How a document may name metric `m`: its id, its name and that name's other number, and
    the columns its value aggregates (as words, without an is_/has_ prefix)."""
    name = " ".join(m.name.lower().split())
    out = [m.id.lower(), name, name[:-1] if name.endswith("s") else name + "s"]
    for column in aggregated_columns(m.sql or ""):
        words = column.lower()
        for prefix in ("is_", "has_"):
            words = words[len(prefix):] if words.startswith(prefix) else words
        words = words.replace("_", " ").strip()
        if len(words) >= 3 and not words.endswith(" id") and words != "id":
            out.append(words)
    return list(dict.fromkeys(out))


def aggregated_columns(sql: str) -> list[str]:
    """The columns inside the aggregate functions of a metric's SQL (none when it does not parse)."""
    from sqlglot import exp

    from dibench.sqlops.dialect import parse

    try:
        tree = parse(sql, where="metric SQL") if sql.strip() else None
    except DibenchError:
        return []
    if tree is None:
        return []
    return list(dict.fromkeys(c.name for agg in tree.find_all(exp.AggFunc) for c in agg.find_all(exp.Column)))


def prefetch_sides(pack: Pack, wh: Warehouse, only: set[str] | None, windows: dict[str, tuple[dt.date, dt.date]],
                   cache: SideCache) -> None:
    """Verify the front-matter effects of all documents metric by metric, one scan each (what
    verify_effect then reads); effects an LLM extracts later are verified one by one. Metrics are
    scanned `verify_workers` at a time, each on its own connection: one grouped statement with
    distinct counts or percentiles sorts on one core, and a metric's scan shares nothing with
    another's. Most effects first, so that the longest scans do not come last."""
    by_metric: dict[str, list[tuple[str, AnyEffect]]] = {}
    for doc in pack.rules:
        if (only is None or doc.id in only) and doc.front.effects:
            for eff in doc.front.effects:
                if eff.metric in pack.metric_by_id:
                    by_metric.setdefault(eff.metric, []).append((doc.id, eff))

    def one(metric_id: str) -> tuple[dict[str, tuple[dt.date, dt.date]], SideCache]:
        metric, found = pack.metric_by_id[metric_id], dict(windows)
        own: SideCache = {}
        try:
            window = edge_window(wh, metric, by_metric[metric_id], found, schema=pack.schema)
            prefetch(wh, metric, by_metric[metric_id], window, own, schema=pack.schema)
        except DibenchError:
            pass  # verify_effect meets the same error edge by edge and records it on each
        return found, own

    order = sorted(by_metric, key=lambda m: (-len(by_metric[m]), m))
    with ThreadPoolExecutor(max_workers=max(1, get_settings().verify_workers)) as pool:
        for found, own in pool.map(one, order):
            windows.update(found)
            cache.update(own)


def plan_rules(pack: Pack, wh: Warehouse, llm: BaseChatModel | None = None, *, graph: Graph | None = None,
               verify: bool = True, only: set[str] | None = None) -> RulePlan:
    """The rule part of the ingest plan; with `llm`, documents without effects get them extracted,
    and `graph` (holding the domain's metrics and tables) must be given."""
    plan = RulePlan()
    d = pack.name
    windows: dict[str, tuple[dt.date, dt.date]] = {}
    sides: SideCache = {}  # each metric's slices without rules and under each effect, one scan per metric
    if verify:
        prefetch_sides(pack, wh, only, windows, sides)
    # Every document's effects (front matter or extracted) get `domain validate`'s checks,
    # against the loaded schema.
    columns = schema_columns(wh, pack.schema)
    for doc in pack.rules:
        if only is not None and doc.id not in only:
            continue
        try:
            effects, source = doc_effects(doc, pack, llm, plan, graph, columns)
        except DibenchError as exc:
            plan.failures.append(str(exc))
            continue
        # Checked before anything of the document enters the plan: a document with one bad
        # effect is left out whole (graph unchanged for it), never written with the rest.
        problems = document_problems(pack, doc, columns, effects)
        if problems:
            plan.problems.extend(problems)
            plan.failures.extend(str(p) for p in problems)
            continue
        f = doc.front
        vkey = rule_version_key(d, doc.id, doc.content_hash)
        # Extracted effects say what produced them (model, prompt version); the Run of a generation
        # from these edges repeats it (generation.pipeline.create_run).
        provenance = {"effects_model": describe(llm), "effects_prompt_version": EXTRACT_PROMPT_VERSION} \
            if source == "llm" else {}
        plan.rules.append(row(rule_key(d, doc.id), {
            "domain": d, "id": doc.id, "title": f.title, "rule_type": f.rule_type.value, "owner": f.owner,
            "version": f.version, "effective_date": f.effective_date.isoformat(), "path": str(doc.path.name),
            "content_hash": doc.content_hash, "effects_source": source, "body": doc.body,
            "supersedes": f.supersedes, **provenance,
        }, version_key=vkey, version_props={
            "domain": d, "rule_id": doc.id, "version": f.version, "hash": doc.content_hash,
            "effective_date": f.effective_date.isoformat(), "body": doc.body,
            "effects_json": json.dumps([json.loads(effect_json(e)) for e in effects], sort_keys=True),
            "ingested_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }))
        keep_metrics, keep_applies = [], []
        for eff in effects:
            metric = pack.metric_by_id[eff.metric]
            if verify:
                window = edge_window(wh, metric, [(doc.id, eff)], windows, schema=pack.schema)
                check = verify_effect(wh, metric, doc.id, eff, window, schema=pack.schema, cache=sides)
            else:
                check = EdgeCheck(doc.id, metric.id, False, (), 0, "not verified (--no-verify)")
            plan.checks.append(check)
            keep_metrics.append(metric_key(d, metric.id))
            plan.modifies.append(row("", {
                "op": effect_json(eff), "op_type": eff.op, "verified": check.verified,
                "changed_slices": list(check.changed_slices), "slices_checked": check.slices_checked,
                "error": check.error, "version": f.version,
            }, rule=rule_key(d, doc.id), metric=metric_key(d, metric.id)))
            if eff.applies_when is not None:
                value = str(eff.applies_when.value)
                dkey = dimension_key(d, eff.applies_when.dimension)
                keep_applies.append(f"{dkey}={value}")
                plan.applies.append({"rule": rule_key(d, doc.id), "dimension": dkey, "value": value})
        mentions = [metric_key(d, m) for m in mentioned_metrics(doc, pack)] if source == "none" else []
        plan.mentions += [{"rule": rule_key(d, doc.id), "metric": m} for m in mentions]
        plan.prune.append({"rule": rule_key(d, doc.id), "metrics": keep_metrics, "applies": keep_applies,
                           "mentions": mentions})
    # One effect per (rule, metric) edge: a second effect of the same rule on the same metric
    # is folded into the edge's op list.
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for m in plan.modifies:
        k = (m["rule"], m["metric"])
        if k in merged:
            old = merged[k]["props"]
            ops = json.loads(old["op"]) if old["op"].startswith("[") else [json.loads(old["op"])]
            ops.append(json.loads(m["props"]["op"]))
            old["op"] = json.dumps(ops, sort_keys=True)
            old["verified"] = old["verified"] or m["props"]["verified"]
            old["changed_slices"] = old["changed_slices"] + m["props"]["changed_slices"]
            merged[k]["hash"] = row("", old)["hash"]
        else:
            merged[k] = m
    plan.modifies = list(merged.values())
    if only is None:
        # Conflicts among the edges in force. Their metrics' policies stay incomplete in the graph
        # (stores/policies.py) and generation skips them until a `supersedes` resolves it.
        verified = {(c.rule_id, c.metric_id) for c in plan.checks if c.verified}
        plan.conflicts = conflict_lines(pack, pack_conflicts(pack, lambda r, m: (r, m) in verified))
    plan.applies = [dict(t) for t in {tuple(sorted(a.items())) for a in plan.applies}]
    plan.applies.sort(key=lambda a: (a["rule"], a["dimension"], a["value"]))
    return plan
