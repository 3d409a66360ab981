"""Re-derive one stored task's gold answer under changed rule operations.

The task's skeleton is rebuilt with the current rule operations and its own analysis runs again
on generation's seeded stream (`f"{seed}|{skeleton key}|{analysis}"`); the attempt whose base
parameters equal the stored ones is the task's own grounding, so the answer is what generation
would compute for that question today. Why re-ground: docs/architecture.md, "Keeping gold true".
"""
from __future__ import annotations

import json
import random
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.pack import Pack
from dibench.generation.analyses import Analysis, Outcome, registry
from dibench.generation.executor import Executor
from dibench.generation.grounding import data_window
from dibench.generation.skeletons import Skeleton
from dibench.generation.tasks import candidate, ground
from dibench.generation.validation import Candidate, Vocabulary


def canonical(value: Any) -> str:
    """The JSON form tasks are stored with (sorted keys, dates as ISO strings)."""
    return json.dumps(value, sort_keys=True, default=str)


def analysis_named(name: str) -> Analysis:
    for a in registry():
        if a.NAME == name:
            return a
    raise KeyError(name)


def rederive(task: dict[str, Any], skeleton: Skeleton, pack: Pack, ex: Executor, vocab: Vocabulary, *,
             seed: int, windows: dict[str, Any], llm: BaseChatModel | None, judge: bool = True) -> Candidate | None:
    """A fresh candidate for stored `task` under `skeleton`'s policy (the metric's policy as of now;
    the featured rule stays the task's own). None when the task's grounding cannot be reproduced any
    more (its slice no longer yields an answer)."""
    metric = pack.metric_by_id[task["metric_id"]]
    analysis = analysis_named(task["analysis_type"])
    if metric.id not in windows:
        windows[metric.id] = data_window(ex.wh, metric, pack.metric_by_id, schema=ex.schema)
    rng = random.Random(f"{seed}|{task['skeleton_key']}|{analysis.NAME}")
    docs = {r.id: r for r in pack.rules}

    def own_grounding(result: Outcome) -> bool:
        return analysis.NAME == "knowledge_retrieval" or canonical(result.base_params) == task["base_params"]

    g = ground(analysis, skeleton, metric, ex, rng, windows[metric.id], docs, accept=own_grounding,
               metrics=pack.metric_by_id)  # as many windows as generation tried
    if g is None or not own_grounding(g.result):
        return None
    # Same facts: the question still asks exactly this, so it keeps its wording.
    same = canonical(g.result.facts) == task["facts"]
    return candidate(skeleton, pack, analysis.NAME, g, rng, vocab, llm, key=task["key"],
                     question=task["question"] if same else None, judge=judge)
