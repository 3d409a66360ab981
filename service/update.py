"""Incremental update when one rule document changes (`dibench update-rule`) or is deleted
(`dibench remove-rule`).

`plan_update` / `plan_remove` read the graph and the warehouse and compute everything: the rule's
new version and verified edges, and per affected task one action, `unchanged`, `updated` (the
previous version kept as a TaskVersion) or `retired` (with the reason), plus tasks for skeletons
the rule newly reaches. `service.update_write` writes the plan in one transaction, so a crash
leaves the previous graph and a rerun completes it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError, PackError, PackErrors
from dibench.core.keys import metric_key, rule_key
from dibench.core.pack import Pack, RuleDoc, content_hash, load_pack, read_rule
from dibench.generation.executor import Executor
from dibench.generation.pipeline import CODE_VERSION, llm_props
from dibench.generation.skeletons import Skeleton, enumerate_all
from dibench.generation.tasks import build_candidates, vocabulary
from dibench.generation.validation import Candidate, Vocabulary
from dibench.generation.writeback import task_rows
from dibench.ingest.extract import PROMPT_VERSION as EXTRACT_PROMPT_VERSION
from dibench.ingest.rules import RulePlan, plan_rules
from dibench.ingest.validate import catalog_problems, document_problems, refuse_problems
from dibench.service.queries import resolve_one
from dibench.service.rederive import canonical, rederive
from dibench.stores.graph import Graph
from dibench.stores.llm import describe, session
from dibench.stores.pack_data import schema_columns
from dibench.stores.policies import Policy, RuleEdge, first_applies, policy_inputs
from dibench.stores.warehouse import Warehouse

NOT_DISCRIMINATIVE = "rule_not_discriminative"


class UpdateConflict(DibenchError):
    """Another update of the same domain committed between this update's plan and its write."""

    hint = "rerun the command: the plan is recomputed against the new state"


@dataclass
class TaskChange:
    key: str
    analysis_type: str
    metric_id: str
    why: str  # uses_rule | new_metric | regenerated
    action: str  # unchanged | updated | retired | regenerated
    reason: str = ""
    version_before: int = 0
    version_after: int = 0
    gold_before: Any = None
    gold_after: Any = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Regeneration:
    run_key: str
    run_props: dict[str, Any]
    skeletons: list[Skeleton]
    rows_by_skeleton: dict[str, list[dict[str, Any]]]


@dataclass
class UpdatePlan:
    """Everything an update writes, computed before any write."""

    domain: str
    rule_id: str
    seq: int
    before: dict[str, Any]
    after: dict[str, Any]
    pack: Pack | None = None
    rules: RulePlan | None = None
    removed: bool = False
    effects: list[dict[str, Any]] = field(default_factory=list)
    applies: dict[str, list[str]] = field(default_factory=dict)
    changes: list[TaskChange] = field(default_factory=list)
    archive: list[dict[str, Any]] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)
    retire: list[dict[str, Any]] = field(default_factory=list)
    regeneration: Regeneration | None = None
    warnings: list[str] = field(default_factory=list)
    llm: dict[str, Any] = field(default_factory=dict)  # model, prompt versions, calls (see llm_record)
    policy_order: dict[str, list[str]] = field(default_factory=dict)  # affected metric -> its rules, in order
    # A change of metric definitions (rule_id CATALOG): the metrics whose definition changed.
    catalog_metrics: list[str] = field(default_factory=list)

    @property
    def rule_key(self) -> str:
        return rule_key(self.domain, self.rule_id)

    @property
    def update_key(self) -> str:
        to = "removed" if self.removed else str(self.after.get("hash") or "")[:12]
        return f"update:{self.domain}/{self.rule_id}@{str(self.before.get('hash') or 'none')[:12]}->{to}#{self.seq + 1}"

    @property
    def changed(self) -> bool:
        """Whether the transaction has anything to write (a rerun after a commit has not)."""
        return bool(self.before.get("hash") != self.after.get("hash") or self.before.get("removed") != self.removed
                    or self.archive or self.writes or self.retire
                    or (self.regeneration and self.regeneration.skeletons))

    def counts(self) -> dict[str, int]:
        out = {"unchanged": 0, "updated": 0, "retired": 0, "regenerated": 0}
        for c in self.changes:
            out[c.action] += 1
        return out

    def changelog(self) -> dict[str, Any]:
        return {
            "domain": self.domain, "rule_id": self.rule_id, "action": "remove" if self.removed else "update",
            "update_key": self.update_key if self.changed else None, "written": self.changed,
            "before": self.before, "after": self.after, "effects": self.effects, "applies_when": self.applies,
            "counts": self.counts(), "tasks": [c.as_dict() for c in sorted(self.changes, key=lambda c: c.key)],
            "warnings": self.warnings, "llm": self.llm, "policy_order": self.policy_order,
        }


# ------------------------------------------------------------------------------ documents
def pack_root_of(path: Path) -> Path:
    """The pack a rule document belongs to: the nearest folder above it holding pack.yaml."""
    for parent in path.resolve().parents:
        if (parent / "pack.yaml").is_file():
            return parent
    raise PackErrors([PackError(str(path), "-", "no pack.yaml in any folder above this rule document")])


def with_document(pack: Pack, doc: RuleDoc) -> Pack:
    """The pack with `doc` in place of the document of the same id (or added)."""
    return replace(pack, rules=tuple(sorted([r for r in pack.rules if r.id != doc.id] + [doc], key=lambda r: r.id)))


def load_document(path: str | Path, pack: str | Path | None = None) -> tuple[Pack, RuleDoc]:
    """The pack with the rule document at `path` in place (the document may lie anywhere: the
    user names it; it is still read through the pack file door, core.pack.read_pack_file)."""
    doc = read_rule(Path(path))
    pk = load_pack(pack if pack is not None else pack_root_of(Path(path)))
    return with_document(pk, doc), doc


# ------------------------------------------------------------------------------ rule references
def plan_edges(plan: RulePlan, doc: RuleDoc, rule_type: str) -> list[RuleEdge]:
    """The verified rule -> metric edges of the rule's new version, as the graph will hold them."""
    dim, value = first_applies([{"dimension": a["dimension"].split("/", 1)[1], "value": a["value"]}
                                for a in plan.applies])
    return [RuleEdge(doc.id, m["metric"].split("/", 1)[1], m["props"]["op"], rule_type, doc.front.version,
                     doc.content_hash, dim, value, doc.front.supersedes)
            for m in plan.modifies if m["props"]["verified"]]


def effects_diff(before: list[dict[str, Any]], plan: RulePlan | None) -> list[dict[str, Any]]:
    old = {e["metric"]: e for e in before}
    new = {m["metric"].split("/", 1)[1]: m["props"] for m in (plan.modifies if plan else [])}
    out = []
    for metric in sorted(set(old) | set(new)):
        o, n = old.get(metric), new.get(metric)
        op_o = json.loads(o["op"]) if o else None
        op_n = json.loads(n["op"]) if n else None
        change = "added" if o is None else "removed" if n is None else "changed" if op_o != op_n else "unchanged"
        out.append({"metric": metric, "change": change, "before": op_o, "after": op_n,
                    "verified_before": bool(o and o["verified"]), "verified_after": bool(n and n["verified"]),
                    "changed_slices": list(n["changed_slices"]) if n else []})
    return out


# ------------------------------------------------------------------------------ classification
@dataclass
class _Ctx:
    pack: Pack
    ex: Executor
    vocab: Vocabulary
    llm: BaseChatModel | None
    windows: dict[str, Any]
    update_key: str


def _gold(task: dict[str, Any]) -> Any:
    return json.loads(task["gold_answer"]) if task.get("gold_answer") else None


def _rows_for(c: Candidate, task: dict[str, Any], ctx: _Ctx, version: int, stamp: bool) -> list[dict[str, Any]]:
    rows = task_rows([c], ctx.pack, task["run_key"])
    for r in rows:
        r["props"]["version"] = version
        if stamp:
            r["props"]["updated_by"] = ctx.update_key
        r["skeleton_key"], r["run_key"] = task["skeleton_key"], task["run_key"]
    return rows


def classify(task: dict[str, Any], why: str, c: Candidate | None, ctx: _Ctx, plan: UpdatePlan) -> TaskChange:
    """Decide the action for one re-derived task and add its writes to the plan."""
    v = int(task.get("version") or 1)
    ch = TaskChange(task["key"], task["analysis_type"], task["metric_id"], why, "unchanged", version_before=v,
                    version_after=v, gold_before=_gold(task), gold_after=_gold(task))
    retired = task["status"] == "retired"
    if c is None or c.rejections:
        only_filter = c is not None and all(r.startswith(NOT_DISCRIMINATIVE) for r in c.rejections)
        if why == "new_metric" and only_filter:
            ch.reason = "the rule does not change this task's answer"
            return ch
        if retired:
            ch.reason = "stays retired"
            return ch
        ch.action = "retired"
        ch.reason = ("the rule no longer changes the answer" if only_filter else
                     "the task's slice can no longer be grounded" if c is None else "; ".join(c.rejections))
        ch.gold_after = c.gold_answer if c is not None else None
        plan.retire.append({"key": task["key"], "reason": ch.reason, "update": ctx.update_key})
        return ch
    same = canonical(c.gold_answer) == task["gold_answer"] and c.question == task["question"]
    if same and not retired:
        rows = _rows_for(c, task, ctx, v, stamp=False)
        std = rows[0]["props"]
        if any(canonical(std[k]) != canonical(task.get(k)) for k in ("rule_versions", "gold_sql", "gold_params",
                                                                             "policy", "decisive_rules")):
            ch.reason = "same answer; provenance moved to the metric's current policy"
            plan.writes.extend(rows)
        return ch
    ch.action, ch.version_after, ch.gold_after = "updated", v + 1, c.gold_answer
    ch.reason = "reinstated" if retired else ("rule now applies" if why == "new_metric" else "new gold answer")
    plan.archive.append({"key": task["key"], "prev_version": v, "version_key": f"taskver:{task['key']}@v{v}",
                         "update": ctx.update_key})
    rows = _rows_for(c, task, ctx, v + 1, stamp=True)
    plan.writes.extend(rows)
    return ch


def policy_skeleton(sk: Skeleton, policy: Policy | None) -> tuple[Skeleton | None, str]:
    """The task's skeleton under its metric's policy as of the update: None (with the reason) when
    the policy is incomplete or no longer holds the task's featured rule."""
    if policy is not None and not policy.complete:
        return None, policy.problem() or "the metric's policy is incomplete"
    refs = policy.edges if policy is not None else ()
    featured = sk.featured
    if featured is not None:
        now = next((r for r in refs if r.rule_id == featured.rule_id), None)
        if now is None:
            return None, f"the featured rule {featured.rule_id} no longer (verifiably) modifies this metric"
        return replace(sk, rules=(now,), policy=refs), ""
    return replace(sk, policy=refs), ""


def plan_tasks(plan: UpdatePlan, graph: Graph, ctx: _Ctx, policies: dict[str, Policy], metrics: list[str]) -> None:
    """Re-derive every task on a metric whose policy the update may change."""
    affected = graph.read("update_affected_tasks", metrics=[metric_key(plan.domain, m) for m in metrics])
    default_seed = get_settings().seed
    for a in sorted(affected, key=lambda a: a["task"]["key"]):
        task = a["task"]
        sk, why_not = policy_skeleton(Skeleton.from_row(a["skeleton"]), policies.get(task["metric_id"]))
        c = None
        if sk is not None:
            seed = int(a["seed"]) if a["seed"] is not None else default_seed
            c = rederive(task, sk, ctx.pack, ctx.ex, ctx.vocab, seed=seed, windows=ctx.windows, llm=ctx.llm,
                         judge=get_settings().llm_judge)
        change = classify(task, a["why"], c, ctx, plan)
        if sk is None and change.action == "retired":
            change.reason = why_not
            plan.retire[-1]["reason"] = change.reason
        plan.changes.append(change)


# ------------------------------------------------------------------------------ regeneration
def plan_regeneration(plan: UpdatePlan, graph: Graph, ctx: _Ctx, policies: dict[str, Policy],
                      new_metrics: list[str], seed: int) -> None:
    """Tasks for skeletons (metric, dimension, featured rule) on metrics the rule newly modifies."""
    if not new_metrics:
        return
    bases = [s for s in enumerate_all(graph, plan.domain, limit=10**9, seed=seed, policies=policies).skeletons
             if not s.rules and s.metric in new_metrics]
    wanted = [replace(s, rules=tuple(r for r in s.policy if r.rule_id == plan.rule_id)) for s in bases]
    existing = {r["key"] for r in graph.read("update_existing_skeletons", keys=[s.key for s in wanted])}
    wanted = sorted((s for s in wanted if s.rules and s.key not in existing), key=lambda s: s.key)
    run_key = f"run:{plan.domain}/update-{plan.rule_id}@{str(plan.after['hash'])[:12]}"
    props = {"domain": plan.domain, "seed": seed, "target": len(wanted), "code_version": CODE_VERSION,
             **llm_props(graph, plan.domain, ctx.llm), "update_of": plan.rule_id}
    regen = Regeneration(run_key, props, wanted, {})
    for sk in wanted:
        cands = build_candidates(sk, ctx.pack, ctx.ex, ctx.vocab, seed=seed, llm=ctx.llm, windows=ctx.windows,
                                 judge=get_settings().llm_judge)
        rows = task_rows(cands, ctx.pack, run_key)
        regen.rows_by_skeleton[sk.key] = rows
        for c in cands:
            if not c.rejections:
                plan.changes.append(TaskChange(c.key, c.analysis_type, c.metric_id, "regenerated", "regenerated",
                                               reason=f"new skeleton {sk.key}", version_after=1,
                                               gold_after=c.gold_answer))
    plan.regeneration = regen


# ------------------------------------------------------------------------------ plans
def llm_record(graph: Graph, domain: str, llm: BaseChatModel | None, before: dict[str, Any],
               rules: RulePlan | None = None) -> dict[str, Any]:
    """What an update asked of the model (the RuleUpdate record and a regeneration Run keep it):
    model, phraser, judge, call budget, every prompt version (this document's extraction
    included) and the calls, cache hits and failures per stage since `before` (a session snapshot)."""
    props = llm_props(graph, domain, llm)
    versions = json.loads(props["prompt_versions"])
    if rules is not None and any(r["props"]["effects_source"] == "llm" for r in rules.rules):
        mine = {"model": describe(llm), "prompt_version": EXTRACT_PROMPT_VERSION}
        versions["extract"] = [*[x for x in versions.get("extract", []) if x != mine], mine]
    return {"model": props["llm_model"], "phraser": props["phraser"], "judge": props["judge"],
            "max_calls": props["llm_max_calls"], "prompt_versions": versions, **session().since(before)}


def _with_usage(props: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """A regeneration Run's properties with the update's LLM usage, as a generation Run has them."""
    return {**props, "llm_usage": json.dumps({k: record[k] for k in ("calls", "cache_hits", "failures",
                                                                      "prompt_tokens", "max_prompt_tokens")},
                                             sort_keys=True),
            "llm_calls": sum(record["calls"].values()), "llm_failures": sum(record["failures"].values())}


def _context(pack: Pack, wh: Warehouse, llm: BaseChatModel | None, update_key: str) -> _Ctx:
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(wh, pack.schema).items()})
    return _Ctx(pack, Executor(wh, schema=pack.schema), vocab, llm, {}, update_key)


# The rule_id of an update made by changed metric definitions, not by a rule document.
CATALOG = "catalog"


def plan_metric_update(pack: Pack, graph: Graph, wh: Warehouse, llm: BaseChatModel | None, changed: dict[str, str],
                       before: dict[str, str]) -> UpdatePlan:
    """Plan the re-derivation of every task on a metric whose definition changed (`changed` and
    `before`: {metric id: content hash} after and before the ingest that wrote them), and on the
    derived metrics built from one, under the policies in force: the same classification as a
    rule update (unchanged, updated with the old version archived, retired)."""
    d = pack.name
    seq = int(graph.read("update_domain_seq", domain=d)[0]["seq"])
    was = ",".join(f"{m}={before[m]}" for m in sorted(changed))
    now = ",".join(f"{m}={changed[m]}" for m in sorted(changed))
    plan = UpdatePlan(d, CATALOG, seq, {"version": None, "hash": content_hash(was), "removed": False},
                      {"version": None, "hash": content_hash(now), "removed": False}, pack=pack,
                      catalog_metrics=sorted(changed))
    inputs = policy_inputs(graph, d)
    metrics = sorted(inputs.affected(set(changed)))
    policies = inputs.build()
    plan.policy_order = {m: policies[m].order() for m in metrics if m in policies}
    plan_tasks(plan, graph, _context(pack, wh, llm, plan.update_key), policies, metrics)
    return plan


def plan_update(pack: Pack, doc: RuleDoc, graph: Graph, wh: Warehouse, llm: BaseChatModel | None = None, *,
                regenerate: bool = False, seed: int | None = None, formerly: Iterable[str] = ()) -> UpdatePlan:
    """Plan the update of rule `doc` (already placed in `pack`, see `with_document`). `formerly`:
    metrics the rule modified before a write that already replaced its edges (an ingest), whose
    tasks are re-derived too."""
    d = pack.name
    llm_before = session().snapshot()
    state = graph.read("update_rule_state", rule=rule_key(d, doc.id))
    st = state[0] if state else None
    seq = int(st["seq"]) if st else int(graph.read("update_domain_seq", domain=d)[0]["seq"])
    # `domain validate`'s checks first, in its words: nothing runs or is written for a document it refuses.
    columns = schema_columns(wh, pack.schema)
    refuse_problems(catalog_problems(pack, columns) + document_problems(pack, doc, columns))
    rules = plan_rules(pack, wh, llm, graph=graph, only={doc.id})
    refuse_problems(rules.problems)  # of effects the LLM extracted
    if rules.failures:
        raise DibenchError("; ".join(rules.failures), hint="fix the rule document; the graph was not changed")
    before = {"version": st["version"], "hash": st["hash"], "removed": bool(st["removed"])} if st else \
        {"version": None, "hash": None, "removed": False}
    after = {"version": doc.front.version, "hash": doc.content_hash, "removed": False}
    plan = UpdatePlan(d, doc.id, seq, before, after, pack=pack, rules=rules, warnings=list(rules.warnings))
    plan.effects = effects_diff(st["edges"] if st else [], rules)
    old_applies = {f"{a['dimension']}={a['value']}" for a in (st["applies"] if st else []) if a}
    new_applies = {f"{a['dimension'].split('/', 1)[1]}={a['value']}" for a in rules.applies}
    plan.applies = {"added": sorted(new_applies - old_applies), "removed": sorted(old_applies - new_applies)}
    edges = plan_edges(rules, doc, doc.front.rule_type.value)
    was = {e["metric"] for e in (st["edges"] if st else [])} | set(formerly)
    was_verified = {e["metric"] for e in (st["edges"] if st else []) if e["verified"]}
    mentions = [m["metric"].split("/", 1)[1] for m in rules.mentions]
    new_metrics = sorted({e.metric_id for e in edges} - was_verified)
    # Every metric whose policy the update may change: modified (or mentioned) before or after.
    inputs = policy_inputs(graph, d).replacing(doc.id, edges, mentions, doc.front.supersedes)
    metrics = sorted(inputs.affected(was | {m["metric"].split("/", 1)[1] for m in rules.modifies} | set(mentions)
                                     | set(st["mentions"] if st else [])))
    policies = inputs.build()
    plan.policy_order = {m: policies[m].order() for m in metrics if m in policies}
    ctx = _context(pack, wh, llm, plan.update_key)
    plan_tasks(plan, graph, ctx, policies, metrics)
    if regenerate:
        plan_regeneration(plan, graph, ctx, policies, new_metrics, seed if seed is not None else get_settings().seed)
    plan.llm = llm_record(graph, d, llm, llm_before, rules)
    if plan.regeneration is not None:
        plan.regeneration.run_props = _with_usage(plan.regeneration.run_props, plan.llm)
    return plan


def resolve_rule(graph: Graph, rule_id: str, domain: str | None) -> str:
    return str(resolve_one(graph, "impact_rule_lookup", "rule", rule_id, domain,
                           hint="`dibench graph stats` shows what is loaded")["domain"])


def plan_remove(graph: Graph, rule_id: str, domain: str | None = None, pack: Pack | None = None,
                wh: Warehouse | None = None, llm: BaseChatModel | None = None) -> UpdatePlan:
    """Plan the removal of a deleted rule document: its edges removed, its versions kept; every task
    on a metric it modified is re-derived under the policy without it (tasks featuring it retire).
    Without the pack and warehouse to re-derive with, those tasks are retired instead."""
    d = resolve_rule(graph, rule_id, domain)
    llm_before = session().snapshot()
    st = graph.read("update_rule_state", rule=rule_key(d, rule_id))[0]
    before = {"version": st["version"], "hash": st["hash"], "removed": bool(st["removed"])}
    plan = UpdatePlan(d, rule_id, int(st["seq"]), before, {"version": None, "hash": None, "removed": True},
                      removed=True)
    plan.effects = effects_diff(st["edges"], None)
    plan.applies = {"added": [], "removed": sorted(f"{a['dimension']}={a['value']}" for a in st["applies"] if a)}
    inputs = policy_inputs(graph, d).replacing(rule_id, [], [], None)
    metrics = sorted(inputs.affected({e["metric"] for e in st["edges"]} | set(st["mentions"])))
    after_removal = inputs.build()
    plan.policy_order = {m: after_removal[m].order() for m in metrics if m in after_removal}
    if pack is not None and wh is not None:
        kept = replace(pack, rules=tuple(r for r in pack.rules if r.id != rule_id))
        columns = schema_columns(wh, kept.schema)
        refuse_problems(catalog_problems(kept, columns) + [p for r in kept.rules
                                                          for p in document_problems(kept, r, columns)])
        plan_tasks(plan, graph, _context(kept, wh, llm, plan.update_key), after_removal, metrics)
        for ch in plan.changes:
            if ch.action == "retired" and rule_id in ch.reason:
                ch.reason = "the rule document was removed"
        for r in plan.retire:
            if rule_id in r["reason"]:
                r["reason"] = "the rule document was removed"
        plan.llm = llm_record(graph, d, llm, llm_before)
        return plan
    for a in sorted(graph.read("update_affected_tasks", metrics=[metric_key(d, m) for m in metrics]),
                    key=lambda a: a["task"]["key"]):
        task = a["task"]
        v = int(task.get("version") or 1)
        ch = TaskChange(task["key"], task["analysis_type"], task["metric_id"], a["why"], "unchanged",
                        "stays retired", v, v, _gold(task), _gold(task))
        if task["status"] == "admitted":
            ch.action, ch.reason, ch.gold_after = "retired", "the rule document was removed", None
            plan.retire.append({"key": task["key"], "reason": ch.reason, "update": plan.update_key})
        plan.changes.append(ch)
    return plan
