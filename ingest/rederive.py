"""Re-derive one stored task's gold answer under changed rule operations.

We re-ground rather than re-apply the operations to the stored base SQL tree: the task's
Skeleton is rebuilt from its node with the current rule operations, and the task's own
analysis runs again with the generation seed, i.e. the same random stream
`f"{seed}|{skeleton key}|{analysis}"` as `generation.tasks.build_candidates`. The draws of
that stream (window, groups, k) depend on the base data only, so the seeded attempt whose base
parameters equal the stored ones is the task's own grounding. Reason for this choice: an
answer is shaped from raw rows by the analysis (trend summary, top-k, Welch test, threshold
verdict ...); running the same analysis code gives exactly the gold answer that generation
would compute for that question today, with no second copy of the shaping logic, and rule
operations keep being applied to the metric template before shaping, as in generation.
"""
from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from generation.analyses import Analysis, Outcome, registry
from generation.grounding import Context, Executor, data_window
from generation.questions import answer_format, llm_question, template_question
from generation.skeletons import RuleRef, Skeleton
from generation.tasks import MAX_WINDOW_TRIES, effects_for, run_judge, tier_of
from generation.validation import Candidate, Vocabulary, stage1
from ingest.pack import Pack


def canonical(value: Any) -> str:
    """The JSON form tasks are stored with (sorted keys, dates as ISO strings)."""
    return json.dumps(value, sort_keys=True, default=str)


def analysis_named(name: str) -> Analysis:
    for a in registry():
        if a.NAME == name:
            return a
    raise KeyError(name)


def _replay(analysis: Analysis, ctx: Context, stored_base_params: str) -> Outcome | None:
    """The seeded attempt whose base parameters are the stored ones (None: not reproducible)."""
    for _ in range(MAX_WINDOW_TRIES):
        result = analysis.build(ctx)
        if result is None:
            return None
        if analysis.NAME == "knowledge_retrieval" or canonical(result.base_params) == stored_base_params:
            return result
    return None


def rederive(task: dict[str, Any], skeleton: Skeleton, rules: tuple[RuleRef, ...], pack: Pack, ex: Executor,
             vocab: Vocabulary, *, seed: int, windows: dict[str, Any], llm: BaseChatModel | None) -> Candidate | None:
    """A fresh candidate for stored `task` with `rules` (the task's rules with their operations
    as of now; may add a rule its skeleton did not have). None when the task's grounding cannot
    be reproduced any more (its slice no longer yields an answer)."""
    metric = pack.metric_by_id[task["metric_id"]]
    analysis = analysis_named(task["analysis_type"])
    if metric.id not in windows:
        windows[metric.id] = data_window(ex.wh, metric)
    own = {r.id for r in skeleton.rules}
    # The context keeps the skeleton's own rule set (with current operations) so that the seeded
    # draws that look at rules (a conditional rule's value) are the ones generation made; the
    # effects include every rule now applied, added ones too.
    ctx_skeleton = replace(skeleton, rules=tuple(r for r in rules if r.id in own))
    effects = effects_for(replace(skeleton, rules=rules), metric.id)
    rng = random.Random(f"{seed}|{task['skeleton_key']}|{analysis.NAME}")
    docs = {r.id: r for r in pack.rules}
    ctx = Context(metric, ctx_skeleton, effects, ex, rng, windows[metric.id], docs)
    result = _replay(analysis, ctx, task["base_params"])
    if result is None:
        return None
    tier = tier_of(analysis.NAME, replace(skeleton, rules=rules))
    if canonical(result.facts) == task["facts"]:
        question = task["question"]  # same facts: the question still asks exactly this
    elif llm is not None:
        question = llm_question(llm, analysis.NAME, metric.name, result.gold_answer, result.facts,
                                [docs[r.id].body for r in rules if r.id in docs], where=task["key"])
    else:
        question = template_question(analysis.NAME, metric.name, skeleton.dimension_label, result.facts, rng,
                                     str(getattr(metric.unit, "value", metric.unit)), skeleton.dimension_type)
    c = Candidate(
        key=task["key"], skeleton_key=task["skeleton_key"], domain=task["domain"], analysis_type=analysis.NAME,
        tier=tier, metric_id=metric.id, rule_ids=[r.id for r in rules],
        rule_versions=[f"{r.id}@{r.version}#{r.content_hash[:12]}" for r in rules], dimension=skeleton.dimension,
        dimension_type=skeleton.dimension_type, question=question, answer_format=answer_format(analysis.NAME),
        gold_answer=result.gold_answer, base_answer=result.base_answer if tier == "K+A+R" else None,
        gold_sql=result.gold_sql, base_sql=result.base_sql, gold_params=result.gold_params,
        base_params=result.base_params, tables=list(skeleton.tables), facts=result.facts,
    )
    c.rejections = stage1(c, vocab)
    if not c.rejections:
        c.judge = run_judge(llm, c)
    return c
