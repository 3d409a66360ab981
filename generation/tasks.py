"""One skeleton -> candidate tasks: ground it, run every compatible analysis, phrase, validate."""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from generation.analyses import Outcome, registry
from generation.grounding import Context, Executor, data_window
from generation.questions import answer_format, llm_question, template_question
from generation.skeletons import Skeleton
from generation.validation import PHRASING_DIMENSIONS, Candidate, Vocabulary, judge, rule_changes_answer, stage1
from ingest.pack import Pack
from service.errors import DibenchError
from service.llm import LLM_FAILURES, BudgetExhausted
from service.models import LLMEffects

MAX_WINDOW_TRIES = 3


def vocabulary(pack: Pack, columns: dict[str, list[str]]) -> Vocabulary:
    ids: set[str] = set()
    for t, cols in columns.items():
        if "_" in t:
            ids.add(t.lower())
        ids.update(c.lower() for c in cols if "_" in c)
    ids.update(m.id.lower() for m in pack.metrics)
    ids.update(r.id.lower() for r in pack.rules)
    ids.add(pack.schema.lower() + ".")
    return Vocabulary(frozenset(ids))


def tier_of(analysis: str, sk: Skeleton) -> str:
    if analysis == "knowledge_retrieval":
        return "K"
    return "K+A+R" if sk.rules else "K+A"


def candidate_key(sk: Skeleton, analysis: str, variant: str = "standard") -> str:
    digest = hashlib.sha1(f"{sk.key}|{analysis}|{variant}".encode()).hexdigest()[:16]
    return f"task:{sk.domain}/{digest}"


def effects_for(sk: Skeleton, metric_id: str) -> list[tuple[str, Any]]:
    out = []
    for r in sk.rules:
        for e in r.effects_json():
            if e.get("metric") == metric_id:
                out.append((r.id, LLMEffects.model_validate({"effects": [e]}).effects[0]))
    return out


def build_candidates(sk: Skeleton, pack: Pack, ex: Executor, vocab: Vocabulary, *, seed: int,
                     llm: BaseChatModel | None = None, windows: dict[str, Any] | None = None,
                     judge: bool = True) -> list[Candidate]:
    metric = pack.metric_by_id[sk.metric]
    windows = windows if windows is not None else {}
    if metric.id not in windows:
        windows[metric.id] = data_window(ex.wh, metric)
    docs = {r.id: r for r in pack.rules}
    out: list[Candidate] = []
    for analysis in registry():
        if not analysis.compatible(sk):
            continue
        rng = random.Random(f"{seed}|{sk.key}|{analysis.NAME}")
        ctx = Context(metric, sk, effects_for(sk, metric.id), ex, rng, windows[metric.id], docs)
        result: Outcome | None = None
        try:
            for _ in range(getattr(analysis, "WINDOW_TRIES", MAX_WINDOW_TRIES)):
                result = analysis.build(ctx)
                # A rule task retries other windows until the rule changes the answer.
                if result is None or not sk.rules or analysis.NAME == "knowledge_retrieval" \
                        or rule_changes_answer(analysis.NAME, result.gold_answer, result.base_answer, metric.rounding):
                    break
        except DibenchError as exc:
            result = Outcome({"error": str(exc)}, {}, None, None, {}, {}, {})
        if result is None:
            continue
        tier = tier_of(analysis.NAME, sk)
        rule_texts = [docs[r.id].body for r in sk.rules if r.id in docs]
        question = template_question(analysis.NAME, metric.name, sk.dimension_label, result.facts, rng, metric.unit,
                                     sk.dimension_type)
        llm_failure: str | None = None
        if llm is not None:
            # A failed model call is this candidate's problem, never the run's: the candidate keeps
            # the template question and is rejected with the reason (an exhausted call budget only
            # means the template question stands).
            try:
                question = llm_question(llm, analysis.NAME, metric.name, result.gold_answer, result.facts,
                                        rule_texts, where=f"phrasing {sk.key} {analysis.NAME}")
            except BudgetExhausted:
                pass
            except LLM_FAILURES as exc:
                llm_failure = f"llm: {exc}"
        c = Candidate(
            key=candidate_key(sk, analysis.NAME), skeleton_key=sk.key, domain=sk.domain,
            analysis_type=analysis.NAME, tier=tier, metric_id=metric.id, rule_ids=[r.id for r in sk.rules],
            rule_versions=[f"{r.id}@{r.version}#{r.content_hash[:12]}" for r in sk.rules], dimension=sk.dimension,
            dimension_type=sk.dimension_type, question=question, answer_format=answer_format(analysis.NAME),
            gold_answer=result.gold_answer, base_answer=result.base_answer if tier == "K+A+R" else None,
            gold_sql=result.gold_sql, base_sql=result.base_sql, gold_params=result.gold_params,
            base_params=result.base_params, tables=list(sk.tables), facts=result.facts, rounding=metric.rounding,
        )
        c.rejections = [llm_failure] if llm_failure else stage1(c, vocab)
        if llm is not None and not llm_failure and any(r.startswith("phrasing_fidelity") for r in c.rejections):
            # An LLM question that drifted from the facts is rewritten once with the problems, then judged again.
            try:
                c.question = llm_question(llm, analysis.NAME, metric.name, result.gold_answer, result.facts,
                                          rule_texts, where=f"phrasing {sk.key} {analysis.NAME} (rewrite)",
                                          rewrite=(c.question, c.rejections))
                c.rejections = stage1(c, vocab)
            except BudgetExhausted:
                pass
            except LLM_FAILURES as exc:
                c.rejections.append(f"llm: {exc}")
        if not c.rejections:
            def rephrase(previous: str, objections: list[str], result: Outcome = result,
                         name: str = analysis.NAME) -> str:
                assert llm is not None
                return llm_question(llm, name, metric.name, result.gold_answer, result.facts, rule_texts,
                                    where=f"{sk.key} (rewrite)", rewrite=(previous, objections))

            c.judge = run_judge(llm if judge else None, c, vocab, rephrase,
                                skipped="no LLM configured" if llm is None else "judge disabled (--no-judge)")
        out.append(c)
    return out


Rephrase = Callable[[str, list[str]], str]


def run_judge(llm: BaseChatModel | None, c: Candidate, vocab: Vocabulary | None = None,
              rephrase: Rephrase | None = None, skipped: str = "no LLM configured") -> dict[str, Any]:
    """Stage 2. Admit only if all eight dimensions pass. A candidate failing only on phrasing
    dimensions is rewritten once (with the judge's objections), re-checked by stage 1 and re-scored;
    what the judge said the first time is kept in the record. A model call that fails rejects the
    candidate with the reason; an exhausted call budget skips the judge, as without a model."""
    if llm is None:
        return {"stage2": "skipped", "reason": skipped}
    try:
        return _judged(llm, c, vocab, rephrase)
    except BudgetExhausted:
        return {"stage2": "skipped", "reason": "LLM call budget exhausted"}
    except LLM_FAILURES as exc:
        c.rejections.append(f"llm: {exc}")
        return {"stage2": "failed", "reason": str(exc)}


def _judged(llm: BaseChatModel, c: Candidate, vocab: Vocabulary | None, rephrase: Rephrase | None) -> dict[str, Any]:
    verdict = judge(llm, c)
    failed = verdict.failed()
    record: dict[str, Any] = {"stage2": "judged", "rewritten": False}
    if failed and set(failed) <= PHRASING_DIMENSIONS and rephrase is not None:
        objections = [f"{d}: {getattr(verdict, d).reason}" for d in failed]
        record.update(rewritten=True, first_question=c.question,
                      first_verdict={"failed": failed, **json.loads(verdict.model_dump_json())})
        c.question = rephrase(c.question, objections)
        again = stage1(c, vocab) if vocab is not None else []
        if again:
            c.rejections.extend(again)
            return {**record, "failed": failed}
        verdict = judge(llm, c)
        failed = verdict.failed()
    if failed:
        reasons = "; ".join(f"{d}: {getattr(verdict, d).reason}" for d in failed)
        c.rejections.append(f"judge: failed {failed} ({reasons})")
    return {**record, "failed": failed, **json.loads(verdict.model_dump_json())}
