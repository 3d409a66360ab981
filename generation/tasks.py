"""One skeleton -> candidate tasks: ground it, run every compatible analysis, phrase, validate."""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.core.errors import DibenchError, ServiceError
from dibench.core.models import MetricSpec
from dibench.core.pack import Pack
from dibench.generation.analyses import Analysis, Outcome, registry
from dibench.generation.executor import Executor, Statement
from dibench.generation.grounding import Context, data_window
from dibench.generation.analyses.knowledge import natural
from dibench.generation.questions import answer_format, catalog_only, llm_question, template_question
from dibench.generation.skeletons import Skeleton
from dibench.generation.validation import (
    NOT_DISCRIMINATIVE, PHRASING_DIMENSIONS, Candidate, Vocabulary, judge, rule_changes_answer, stage1,
)
from dibench.stores.llm import LLM_FAILURES, BudgetExhausted

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
    return Vocabulary(frozenset(ids), {r.id: rule_condition_numbers(r) for r in pack.rules},
                      {r.id: f"{r.front.title}\n{r.body}" for r in pack.rules})


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


def rule_condition_numbers(rule: Any) -> frozenset[float]:
    """The numbers a rule's effects test or set (predicate literals, thresholds, minimum sizes),
    without years and dates: the conditions an agent must find in the document."""
    out: set[float] = set()
    for eff in rule.front.effects or []:
        data = eff.model_dump(exclude={"metric", "op", "from_date", "applies_when"}, exclude_none=True)
        text = re.sub(r"\d{4}-\d{2}-\d{2}", " ", json.dumps(data, default=str))
        out |= {float(n) for n in _NUMBER.findall(text) if not 1950 <= float(n) <= 2099 and float(n) not in (0.0, 1.0)}
    return frozenset(out)


KNOWLEDGE = "knowledge_retrieval"


def tier_of(analysis: str, policy_changes: bool) -> str:
    """K: retrieval alone; K+A+R: the metric's policy changes the answer; K+A otherwise."""
    if analysis == KNOWLEDGE:
        return "K"
    return "K+A+R" if policy_changes else "K+A"


# The analyses whose answers hold the metric's values rounded (a trend's and a significance test's
# figures are computed from the values, never the values themselves).
ROUNDED = frozenset({"point_query", "threshold_crossing", "comparison", "ranking", "counterfactual",
                     "decomposition"})


def candidate_key(sk: Skeleton, analysis: str, variant: str = "standard") -> str:
    digest = hashlib.sha1(f"{sk.key}|{analysis}|{variant}".encode()).hexdigest()[:16]
    return f"task:{sk.domain}/{digest}"


@dataclass
class Grounded:
    """An analysis grounded under the metric's policy, with the answers of its variants."""

    result: Outcome
    policy_changes: bool = False  # the policy's answer differs from the no-rule answer
    decisive: list[str] = field(default_factory=list)  # rules whose removal changes the answer
    lifted_answer: dict[str, Any] | None = None  # without the featured rule
    lifted: Statement | None = None
    featured_only: Statement | None = None
    # (gold rounding, the other right one) of the values the answers round from a tie: the contract takes both
    ties: list[tuple[float, float]] = field(default_factory=list)


Accept = Callable[[Outcome], bool]


def ground(analysis: Analysis, sk: Skeleton, metric: MetricSpec, ex: Executor, rng: random.Random,
           window: tuple[Any, Any], docs: dict[str, Any], *, accept: Accept | None = None,
           tries: int | None = None, metrics: dict[str, MetricSpec] | None = None) -> Grounded | None:
    """Ground `analysis` under the skeleton's policy. Attempts draw windows and groups from `rng`;
    the first attempt that `accept`s (default: a rule skeleton's featured rule is decisive) is kept.
    Each variant re-runs the kept attempt's draws with rules excluded, so it answers the same
    question; that is how the decisive rules and the answer without the featured rule are found."""
    featured = sk.featured.rule_id if sk.featured else None
    tries = tries or int(getattr(analysis, "WINDOW_TRIES", MAX_WINDOW_TRIES))
    result: Outcome | None = None
    for attempt in range(tries):
        state = rng.getstate()
        ctx = Context(metric, sk, ex, rng, window, docs, metrics=metrics or {})
        result = analysis.build(ctx)
        if result is None:
            return None
        if analysis.NAME == KNOWLEDGE:
            return Grounded(result)
        if ((analysis.NAME in ROUNDED and ctx.exact_ties) or result.ties) and attempt < tries - 1:
            # A value on an exact rounding tie has two right roundings: another window where one
            # is cheap; on the last try the task is kept and its contract accepts both.
            continue
        after = rng.getstate()

        def variant(excluded: frozenset[str], primary: Outcome = result, state: Any = state) -> dict[str, Any] | None:
            rng.setstate(state)
            vctx = Context(metric, sk, ex, rng, window, docs, excluded=excluded, fixed=primary.facts,
                           metrics=metrics or {})
            out = analysis.build(vctx)
            return out.gold_answer if out is not None else None

        def changes(other: dict[str, Any] | None, gold: dict[str, Any] = result.gold_answer) -> bool:
            return other is None or rule_changes_answer(analysis.NAME, gold, other, metric.rounding)

        last = attempt == tries - 1
        answers: dict[str, dict[str, Any] | None] = {}
        if accept is not None:
            if not accept(result) and not last:
                continue
        elif featured is not None:
            answers[featured] = variant(frozenset({featured}))
            # A rule task tries other windows until its featured rule is decisive (the cheap check first).
            if not changes(answers[featured]) and not last:
                rng.setstate(after)
                continue
        for r in sorted(ctx.in_force - set(answers)):
            answers[r] = variant(frozenset({r}))
        rng.setstate(after)
        g = Grounded(result, policy_changes=bool(ctx.in_force) and changes(result.base_answer),
                     decisive=sorted(r for r, a in answers.items() if changes(a)),
                     ties=[*(ctx.ties if analysis.NAME in ROUNDED else []), *result.ties])
        if featured is not None:
            g.lifted_answer = answers[featured]
            g.lifted = ctx.statement(ctx.in_force - {featured})
            g.featured_only = ctx.statement(frozenset({featured}))
        return g
    return None


def build_candidates(sk: Skeleton, pack: Pack, ex: Executor, vocab: Vocabulary, *, seed: int,
                     llm: BaseChatModel | None = None, windows: dict[str, Any] | None = None,
                     judge: bool = True) -> list[Candidate]:
    metric = pack.metric_by_id[sk.metric]
    windows = windows if windows is not None else {}
    if metric.id not in windows:
        windows[metric.id] = data_window(ex.wh, metric, pack.metric_by_id, schema=ex.schema)
    docs = {r.id: r for r in pack.rules}
    out: list[Candidate] = []
    for analysis in registry():
        if not analysis.compatible(sk):
            continue
        rng = random.Random(f"{seed}|{sk.key}|{analysis.NAME}")
        mark = len(ex.plan_log)
        try:
            g = ground(analysis, sk, metric, ex, rng, windows[metric.id], docs, metrics=pack.metric_by_id)
        except ServiceError:
            raise  # a store out of reach says nothing of this candidate: its skeleton is done again later
        except DibenchError as exc:
            g = Grounded(Outcome({"error": str(exc)}, {}, None, None, {}, {}, {}))
        if g is None:
            continue
        c = candidate(sk, pack, analysis.NAME, g, rng, vocab, llm, key=candidate_key(sk, analysis.NAME), judge=judge)
        c.sql_plan = sql_plan(ex.plan_log[mark:])
        out.append(c)
    return out


def sql_plan(log: list[str]) -> str:
    """How an analysis's statements were answered: "grouped" (all from the grouped plan), "none"
    (no statement: knowledge), else "legacy: <reasons>" or "mixed: <reasons>" (the fallbacks')."""
    reasons = sorted({p.split(": ", 1)[1] for p in log if p != "grouped"})
    if not log:
        return "none"
    if not reasons:
        return "grouped"
    return f"{'mixed' if 'grouped' in log else 'legacy'}: {'; '.join(reasons)}"


def candidate(sk: Skeleton, pack: Pack, analysis: str, g: Grounded, rng: random.Random, vocab: Vocabulary,
              llm: BaseChatModel | None, *, key: str, question: str | None = None, judge: bool = True) -> Candidate:
    """A validated candidate task from a grounded analysis (`question` keeps a stored wording)."""
    metric = pack.metric_by_id[sk.metric]
    docs = {r.id: r for r in pack.rules}
    result = g.result
    featured = sk.featured
    tier = tier_of(analysis, g.policy_changes)
    # USES_RULE goes to the decisive rules; a knowledge task is about its featured document.
    # (the rule whose document it asks about: the featured one or another rule in force on the metric)
    used = ([str(result.facts.get("rule") or featured.rule_id)] if analysis == KNOWLEDGE and featured
            else g.decisive)
    refs = {r.rule_id: r for r in sk.policy}
    rule_texts = [docs[r].body for r in used if r in docs]
    llm_failure: str | None = None
    failed = "error" in result.gold_answer  # rejected below (missing_gold), with its error
    phrased = question is None and llm is not None and not failed
    if question is None:
        # A failed grounding has no facts (windows, groups) to phrase a question with.
        question = f"({analysis} of {metric.name}: not grounded)" if failed else template_question(
            analysis, metric.name, sk.dimension_label, result.facts, rng, metric.unit, sk.dimension_type,
            {**{natural(d.column): d.label for d in pack.spec.dimensions},
             **{d.column: d.label for d in pack.spec.dimensions}})
        if phrased and llm is not None:
            # A failed model call is this candidate's problem, never the run's: the candidate keeps
            # the template question and is rejected with the reason (an exhausted call budget only
            # means the template question stands).
            try:
                question = llm_question(llm, analysis, metric.name, result.gold_answer, result.facts, rule_texts,
                                        where=f"phrasing {sk.key} {analysis}")
            except BudgetExhausted:
                pass
            except LLM_FAILURES as exc:
                llm_failure = f"llm: {exc}"
    c = Candidate(
        key=key, skeleton_key=sk.key, domain=sk.domain,
        analysis_type=analysis, tier=tier, metric_id=metric.id, rule_ids=used,
        rule_versions=[f"{r}@{refs[r].version}#{refs[r].content_hash[:12]}" for r in used if r in refs],
        dimension=sk.dimension, dimension_type=sk.dimension_type, question=question,
        answer_format=answer_format(analysis, metric.rounding, metric.as_of,
                                    bool(result.facts.get("period_edge"))), gold_answer=result.gold_answer,
        base_answer=result.base_answer if tier == "K+A+R" else None,
        gold_sql=result.gold_sql, base_sql=result.base_sql, gold_params=result.gold_params,
        base_params=result.base_params, tables=list(sk.tables), facts=result.facts, rounding=metric.rounding,
        featured_rule=featured.rule_id if featured else None, decisive_rules=list(g.decisive),
        policy=list(dict.fromkeys(r.tag for r in sk.policy)), lifted_answer=g.lifted_answer,
        lifted_sql=g.lifted.sql if g.lifted else None, lifted_params=g.lifted.params if g.lifted else {},
        featured_sql=g.featured_only.sql if g.featured_only else None,
        featured_params=g.featured_only.params if g.featured_only else {}, rounding_ties=[list(t) for t in g.ties],
    )
    if featured is not None and analysis != KNOWLEDGE and not failed and featured.rule_id not in g.decisive:
        c.rejections.append(f"{NOT_DISCRIMINATIVE}: the featured rule {featured.rule_id} does not change the answer "
                            f"under the metric's policy (counterfactual filter)")
    c.rejections += [llm_failure] if llm_failure else stage1(c, vocab)
    if phrased and llm is not None and not llm_failure \
            and any(r.startswith("phrasing_fidelity") for r in c.rejections) \
            and not any(r.startswith(UNFIXABLE) for r in c.rejections):
        # An LLM question that drifted from the facts is rewritten once with the problems, then checked again.
        try:
            c.question = llm_question(llm, analysis, metric.name, result.gold_answer, result.facts, rule_texts,
                                      where=f"phrasing {sk.key} {analysis} (rewrite)",
                                      rewrite=(c.question, c.rejections))
            c.rejections = stage1(c, vocab)
        except BudgetExhausted:
            pass
        except LLM_FAILURES as exc:
            c.rejections.append(f"llm: {exc}")
    if c.tier == "K+A+R" and analysis in NO_RULE_VARIANT and not c.rejections:  # variants only of admitted tasks
        def phrase_no_rule(rewrite: tuple[str, list[str]] | None) -> str:
            assert llm is not None
            return llm_question(llm, analysis, metric.name, result.base_answer, {**result.facts, "catalog_only": True},
                                rule_texts, where=f"phrasing {sk.key} {analysis} (no-rule variant)", rewrite=rewrite,
                                catalog=True)

        no_rule_variant(c, vocab, llm if phrased else None, phrase_no_rule)
    if not c.rejections:
        def rephrase(previous: str, objections: list[str]) -> str:
            assert llm is not None
            return llm_question(llm, analysis, metric.name, result.gold_answer, result.facts, rule_texts,
                                where=f"{sk.key} (rewrite)", rewrite=(previous, objections))

        c.judge = run_judge(llm if judge else None, c, vocab, rephrase,
                            skipped="no LLM configured" if llm is None else "judge disabled (--no-judge)")
    return c


# Rejections no wording lifts: the rule does not decide the answer, the answer cannot be scored,
# a date is used as a group. A candidate with one is not rephrased (the call would be wasted).
UNFIXABLE = (NOT_DISCRIMINATIVE, "missing_gold", "unscorable", "datetime_as_category")

# Analyses with a no-rule variant: a counterfactual asks about the policy itself (its value with
# and without a rule), so "before any policy adjustments" would ask nothing.
NO_RULE_VARIANT = frozenset({"point_query", "trend_analysis", "comparison", "ranking", "significance_testing",
                             "threshold_crossing", "decomposition"})
NoRulePhraser = Callable[[tuple[str, list[str]] | None], str]


def no_rule_variant(c: Candidate, vocab: Vocabulary, llm: BaseChatModel | None, phrase: NoRulePhraser) -> None:
    """Phrase and check the no-rule variant of rule task `c`: its answer is the base answer, so
    its question asks for the catalog's definition alone (questions.catalog_only, or the LLM
    phraser told so); stage 1 checks it as a task of its own, a drifting LLM question is
    rewritten once. Sets c.no_rule_question and c.no_rule_rejections."""
    question = catalog_only(c.question)
    failure: str | None = None
    if llm is not None:
        try:
            question = phrase(None)
        except BudgetExhausted:
            pass  # the template's opt-out of the standard question stands
        except LLM_FAILURES as exc:
            failure = f"llm: {exc}"
    variant = replace(c, question=question, gold_answer=c.base_answer or {}, rejections=[],
                      facts={**c.facts, "catalog_only": True})
    problems = [failure] if failure else stage1(variant, vocab)
    if llm is not None and not failure and any(p.startswith("phrasing_fidelity") for p in problems):
        try:
            variant.question = phrase((variant.question, problems))
            problems = stage1(variant, vocab)
        except BudgetExhausted:
            pass
        except LLM_FAILURES as exc:
            problems = [f"llm: {exc}"]
    c.no_rule_question, c.no_rule_rejections = variant.question, problems


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
