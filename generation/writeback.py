"""Write-back: admitted tasks (and rejected candidates, with reasons) as Task nodes linked to
their skeleton, metric, decisive rules (USES_RULE, with the version used), tables, dimension and
Run. Each task records the policy it considered (rule id @ version), its featured rule, its
decisive rules, and the answers without any rule and without the featured rule. An admitted
rule task also gets its variants: `oracle` (the policy text in the question, the same gold) and
`no_rule` (its own question, asking for the catalog's definition alone; the base answer)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from dibench.core.ambiguity import Asked, ambiguous, asked_about, duplicates, near_duplicates, same_answers
from dibench.core.contracts import task_contract
from dibench.core.errors import GraphError
from dibench.core.keys import dimension_key, metric_key, rule_key, rule_version_key, table_key
from dibench.core.pack import Pack
from dibench.generation.validation import Candidate
from dibench.stores.graph import Graph, Tx

# What a task's gold means: 1 = the skeleton's one rule, 2 = the metric's whole policy, 3 = the
# same, rounded on the exact value, with no-rule variants that ask for the catalog's definition
# and knowledge facts that need the rule; 4 = the same, a significance answer with its t
# statistic, a knowledge reference text of whole fact sentences; 5 = the same, a trend on the
# window's calendar and a decomposition listing every group. A domain generated with an older meaning is retired,
# with a changelog entry, when it is generated again.
GOLD_VERSION = 5
GOLD_MEANING = ("the gold answer applies the metric's whole policy, rounded as PostgreSQL's ROUND(numeric) on "
                "the exact value; no-rule variants ask for the catalog's definition alone; knowledge facts are "
                "what the rule sets, and the reference text the document's sentences stating them; a "
                "significance answer carries its t statistic; a trend runs on the window's calendar (an empty month 0 "
                "for a count or a sum); a decomposition lists a suppressed group with a null value")


def _params_json(p: dict[str, Any]) -> str:
    return json.dumps(p, sort_keys=True, default=str)


def _json_or_none(v: Any) -> str | None:
    return json.dumps(v, sort_keys=True) if v is not None else None


def task_rows(cands: list[Candidate], pack: Pack, run_key: str) -> list[dict[str, Any]]:
    docs = {r.id: r for r in pack.rules}
    rows = []
    for c in cands:
        variants = [("standard", c)]
        if not c.rejections and c.tier == "K+A+R":
            variants.append(("oracle", c))
            if c.no_rule_question is not None:
                variants.append(("no_rule", c))
        for variant, cand in variants:
            key = cand.key if variant == "standard" else f"{cand.key}:{variant}"
            question = cand.question
            gold = cand.gold_answer
            facts = cand.facts
            rejections = cand.rejections
            if variant == "oracle":
                texts = "\n\n".join(f"Policy \"{docs[r].front.title}\":\n{docs[r].body}" for r in cand.rule_ids if r in docs)
                question = f"{cand.question}\n\nRelevant policy text:\n{texts}"
            if variant == "no_rule":
                # Its own question: the catalog's definition alone (generation.tasks.no_rule_variant).
                question, gold, rejections = str(cand.no_rule_question), cand.base_answer or {}, cand.no_rule_rejections
                facts = {**cand.facts, "catalog_only": True}
            status = "rejected" if rejections else "admitted"
            props = {
                "domain": cand.domain, "analysis_type": cand.analysis_type, "tier": cand.tier, "variant": variant,
                "question": question, "answer_format": cand.answer_format,
                "gold_answer": json.dumps(gold, sort_keys=True),
                "base_answer": _json_or_none(cand.base_answer),
                "gold_sql": cand.gold_sql if variant != "no_rule" else cand.base_sql, "base_sql": cand.base_sql,
                "gold_params": _params_json(cand.gold_params if variant != "no_rule" else cand.base_params),
                "base_params": _params_json(cand.base_params),
                "metric_id": cand.metric_id, "rule_ids": cand.rule_ids, "rule_versions": cand.rule_versions,
                "dimension": cand.dimension, "status": status, "rejections": rejections,
                "featured_rule": cand.featured_rule, "decisive_rules": cand.decisive_rules, "policy": cand.policy,
                "gold_version": GOLD_VERSION,
                "judge": json.dumps(cand.judge, sort_keys=True), "facts": json.dumps(facts, sort_keys=True, default=str),
                "run_key": run_key, "skeleton_key": cand.skeleton_key, "version": 1, "sql_plan": cand.sql_plan,
            }
            if cand.rounding_ties:  # a contract of its own: it accepts either rounding of a tie
                props["contract"] = json.dumps(task_contract(
                    cand.analysis_type, cand.rounding, gold,
                    ties=[(u, e) for u, e in cand.rounding_ties]).model_dump(mode="json"), sort_keys=True)
            if variant != "no_rule":  # the no-rule variant has no rule to lift or feature
                props.update({
                    "lifted_answer": _json_or_none(cand.lifted_answer), "lifted_sql": cand.lifted_sql,
                    "lifted_params": _params_json(cand.lifted_params), "featured_sql": cand.featured_sql,
                    "featured_params": _params_json(cand.featured_params)})
            rows.append({
                "key": key, "props": props, "metric_key": metric_key(cand.domain, cand.metric_id),
                "dimension_key": dimension_key(cand.domain, cand.dimension),
                "tables": [table_key(cand.domain, t) for t in cand.tables],
                # The version the task was computed with (`id@version#hash12`), not the pack
                # folder's copy of the document: a rule updated from a file elsewhere (or not in
                # the folder at all) must still get its USES_RULE_VERSION edge.
                "rules": [{"key": rule_key(cand.domain, rid), "version": rv.split("@", 1)[1].split("#")[0],
                           "version_key": rule_version_key(cand.domain, rid, rv.rsplit("#", 1)[1])}
                          for rid, rv in zip(cand.rule_ids, cand.rule_versions)],
                "standard": cand.key, "variant": variant,
            })
    return rows


AMBIGUOUS = "ambiguous_question"


def with_variants(reasons: dict[str, str], keys: Iterable[str], why: str) -> None:
    """The variants of a rejected standard task go with it (a variant stands for its task): each
    variant key `<standard>:<variant>` among `keys` gets `why` with the standard key filled in."""
    for key in keys:
        standard, _, variant = key.rpartition(":")
        if variant in ("oracle", "no_rule") and standard in reasons and key not in reasons:
            reasons[key] = why.format(standard)


def asked(graph: Graph, domain: str, keys: list[str] | None = None) -> list[Asked]:
    """The admitted tasks of `domain` (of `keys` when given) as the invariant reads them."""
    return [Asked(r["key"], r["question"] or "", r["analysis_type"], json.loads(r["gold"] or "{}"), int(r["rounding"]),
                  asked_about(r["analysis_type"], r.get("metric_id"), r.get("dimension"), json.loads(r.get("facts") or "{}")))
            for r in graph.read("tasks_questions", domain=domain, keys=keys)]


def reject_ambiguous(graph: Graph, domain: str) -> int:
    """Reject every admitted task of `domain` that shares its normalised question with a task of
    a different gold answer (core/ambiguity.py): neither can be answered right for both. The
    number of tasks rejected."""
    tasks = asked(graph, domain)
    found = ambiguous(tasks)
    reasons = {k: f"{AMBIGUOUS}: the same question as {len(others)} admitted task(s) with another answer "
                  f"(e.g. {others[0]})" for k, others in found.items()}
    with_variants(reasons, (t.key for t in tasks), f"{AMBIGUOUS}: its standard task {{}} is rejected as ambiguous")
    if reasons:
        graph.write("tasks_reject_ambiguous", rows=[{"key": k, "reason": r} for k, r in sorted(reasons.items())])
    return len(reasons)


DUPLICATE = "duplicate_task"


def reject_duplicates(graph: Graph, domain: str) -> int:
    """Reject every admitted task of `domain` that repeats the question and answer of another
    (core/ambiguity.py, `duplicates`), only the answer of another of its analysis type and variant
    (`same_answers`), or asks what another asks in other words (`near_duplicates`), its variants
    with it. The number of tasks rejected."""
    tasks = asked(graph, domain)
    reasons = {k: f"{DUPLICATE}: the same answer as {kept}, to another question (copying it would pass)"
               for k, kept in same_answers(tasks).items()}
    reasons.update({k: f"{DUPLICATE}: asks what {kept} asks (the same metric, window and groups), in other words"
                    for k, kept in near_duplicates(tasks).items()})
    reasons.update({k: f"{DUPLICATE}: the same question and answer as {kept}" for k, kept in duplicates(tasks).items()})
    with_variants(reasons, (t.key for t in tasks), f"{DUPLICATE}: its standard task {{}} is a copy")
    if reasons:
        graph.write("tasks_reject_with_reason", rows=[{"key": k, "reason": r} for k, r in sorted(reasons.items())])
    return len(reasons)


def link_variants(tx: Tx, rows: list[dict[str, Any]], by: str) -> None:
    """After `rows` (task_rows, or an update's re-derived rows) are written in `tx`: link their
    variants to their standard tasks, retire the variants the rows no longer carry, and check,
    before the commit, that every admitted variant of these tasks has its twin's rule versions
    (else GraphError, and the transaction writes nothing)."""
    tx.run("tasks_variant_link", rows=[r for r in rows if r["variant"] != "standard"])
    written: dict[str, dict[str, Any]] = {}
    for r in rows:
        entry = written.setdefault(r["standard"], {"standard": r["standard"], "variants": [], "by": by,
                                                  "reason": "its standard task was written without this variant"})
        if r["variant"] != "standard":
            entry["variants"].append(r["key"])
    tx.run_rows("tasks_variants_prune", list(written.values()))
    broken = tx.run("tasks_variant_versions", keys=sorted(written))
    if broken:
        raise GraphError(f"variant {broken[0]['variant']} would carry other rule versions than its standard task "
                         f"{broken[0]['standard']} ({len(broken)} such variants); nothing was written")
