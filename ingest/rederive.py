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
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from generation.analyses import Analysis, Outcome, registry
from generation.grounding import Executor, data_window
from generation.skeletons import Skeleton
from generation.tasks import candidate, ground
from generation.validation import Candidate, Vocabulary
from ingest.pack import Pack


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
