"""Validation. Stage 1: programmatic checks, each a named function returning a reason or None;
all must pass. Stage 2: an eight-dimension LLM judge (skipped, and recorded as skipped, when no
LLM is configured); only all-pass candidates are admitted, phrasing-only failures are rewritten
once and re-scored."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ConfigDict

from dibench.core.contracts import check_answer, shape_problems, task_contract
from dibench.generation.fidelity import fidelity_problems
from dibench.generation.knowledge_admission import lazy_problem, named_answer
from dibench.stores.llm import ask_structured


@dataclass
class Candidate:
    key: str
    skeleton_key: str
    domain: str
    analysis_type: str
    tier: str
    metric_id: str
    rule_ids: list[str]
    rule_versions: list[str]
    dimension: str
    dimension_type: str
    question: str
    answer_format: str
    gold_answer: dict[str, Any]
    base_answer: dict[str, Any] | None
    gold_sql: str | None
    base_sql: str | None
    gold_params: dict[str, Any]
    base_params: dict[str, Any]
    tables: list[str]
    facts: dict[str, Any] = field(default_factory=dict)
    rejections: list[str] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)
    rounding: int = 2  # the metric's rounding: the answer contract's tolerance
    featured_rule: str | None = None  # the skeleton's rule: a rule task is about it
    decisive_rules: list[str] = field(default_factory=list)  # rules whose removal changes the gold answer
    policy: list[str] = field(default_factory=list)  # every rule considered, as id@version
    lifted_answer: dict[str, Any] | None = None  # the answer under the policy without the featured rule
    lifted_sql: str | None = None
    lifted_params: dict[str, Any] = field(default_factory=dict)
    featured_sql: str | None = None  # the featured rule alone (what a one-rule analyst computes)
    featured_params: dict[str, Any] = field(default_factory=dict)
    sql_plan: str = ""  # how its statements were answered (generation.tasks.sql_plan)
    # The no-rule variant of a rule task: its own question (the catalog's definition alone) and
    # what stage 1 found wrong with it; None when the task has no such variant.
    no_rule_question: str | None = None
    no_rule_rejections: list[str] = field(default_factory=list)
    # [gold rounding, the other right one] of the values its answers round from a tie (the contract takes both)
    rounding_ties: list[list[float]] = field(default_factory=list)


def rule_changes_answer(analysis_type: str, gold: dict[str, Any], base: dict[str, Any], rounding: int) -> bool:
    """Whether the scorer can tell the gold answer from the no-rule answer. Plain inequality is not
    enough: a rule that moves only a non-decisive field (a significance test's p-value) leaves the
    scored answer unchanged, and an agent ignoring the rule would pass. A gold answer of the wrong
    shape is left to the checks that reject it (missing_gold, unscorable)."""
    contract = task_contract(analysis_type, rounding)
    if shape_problems(contract, gold):
        return gold != base
    return not check_answer(contract, gold, base).passed


@dataclass(frozen=True)
class Vocabulary:
    """Identifiers that must never appear in a question, and each rule's condition numbers (which
    a standard question must leave to the agent to find)."""

    identifiers: frozenset[str]
    conditions: dict[str, frozenset[float]] = field(default_factory=dict)
    # each rule document as a reader sees it (title, then body), by rule id: what the knowledge
    # admission checks a knowledge question against
    documents: dict[str, str] = field(default_factory=dict)


Check = Callable[[Candidate, Vocabulary], str | None]
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def leaked_identifiers(c: Candidate, v: Vocabulary) -> str | None:
    words = {w.strip(".-").lower() for w in _WORD.findall(c.question)}
    # An identifier ending in "." is a prefix (the schema): "mini.orders" leaks it as much as "mini.".
    prefixes = tuple(i for i in v.identifiers if i.endswith("."))
    leaked = sorted(w for w in words if w in v.identifiers or (prefixes and w.startswith(prefixes)))
    return f"question leaks identifiers {leaked}" if leaked else None


def too_short(c: Candidate, v: Vocabulary) -> str | None:
    return "question shorter than 20 characters" if len(c.question.strip()) < 20 else None


def datetime_as_category(c: Candidate, v: Vocabulary) -> str | None:
    categorical_types = {"comparison", "ranking", "decomposition", "significance_testing"}
    if c.dimension_type == "temporal" and c.analysis_type in categorical_types:
        return "a datetime column is used as a categorical filter"
    if c.dimension_type == "temporal" and "group" in c.facts:
        return "a datetime column is used as a categorical filter"
    return None


def missing_gold(c: Candidate, v: Vocabulary) -> str | None:
    if not c.gold_answer:
        return "gold answer missing"
    if "error" in c.gold_answer:
        return "gold answer marked as error"
    return None


def short_knowledge(c: Candidate, v: Vocabulary) -> str | None:
    if c.analysis_type == "knowledge_retrieval" and len(str(c.gold_answer.get("text", ""))) <= 10:
        return "knowledge reference text of 10 characters or less"
    return None


def unscorable(c: Candidate, v: Vocabulary) -> str | None:
    a = c.gold_answer
    t = c.analysis_type
    if t in ("point_query", "threshold_crossing") and a.get("value") is None:
        return "no scorable expected answer (value suppressed or empty)"
    if t == "point_query" and a.get("value") == 0:  # "food revenue of a drink": the constant 0 answers it
        return "no scorable expected answer (the value is 0, which a constant gives)"
    if t == "comparison" and (a.get("value_a") is None or a.get("value_b") is None or a.get("higher") == "undetermined"):
        return "no scorable expected answer (a compared group has no value)"
    if t in ("ranking", "decomposition", "counterfactual") and not a.get("rows"):
        return "no scorable expected answer (no rows)"
    if t == "knowledge_retrieval" and a.get("value") in (None, "", []) and not a.get("must_include"):
        return "no scorable expected answer (nothing asked for)"
    return None


def task_values(c: Candidate) -> set[str]:
    """The data values the task itself names (its groups): written as the data has them, they
    are the agent's filter values, not column names."""
    values = {str(c.facts[k]) for k in ("group", "group_a", "group_b") if c.facts.get(k) is not None}
    values |= {str(r["group"]) for r in c.gold_answer.get("rows") or [] if isinstance(r, dict) and r.get("group")}
    return values


def not_naturalised(c: Candidate, v: Vocabulary) -> str | None:
    text = c.question
    for value in sorted(task_values(c), key=len, reverse=True):
        text = text.replace(value, " ")
    return "question contains a raw column-style name (underscore)" if "_" in text else None


def knowledge_leak(c: Candidate, v: Vocabulary) -> str | None:
    """A knowledge question that states what it asks for (a rephrased question may): the echo
    answers it."""
    if c.analysis_type != "knowledge_retrieval":
        return None
    named = named_answer(c.question, c.gold_answer)
    return f"the question names the answer ({named})" if named else None


def knowledge_lazy_retrieval(c: Candidate, v: Vocabulary) -> str | None:
    """A knowledge question, as shipped (templated or rephrased), whose answer a lazy reader finds
    by its place (generation/knowledge_admission.py)."""
    if c.analysis_type != "knowledge_retrieval" or not v.documents or not c.rule_ids:
        return None
    problem = lazy_problem(c.question, c.gold_answer, v.documents.get(c.rule_ids[0]), tuple(v.documents.values()))
    return problem.split(": ", 1)[1] if problem else None


# The counterfactual filter (generation/tasks.py `candidate`): a rule task is admitted only if its
# featured rule is decisive under the metric's whole policy. Its rejections start with this name.
NOT_DISCRIMINATIVE = "rule_not_discriminative"


def phrasing_fidelity(c: Candidate, v: Vocabulary) -> str | None:
    """The question states the task's window, groups, k, threshold and comparison as the facts
    say, and not the answer (generation.fidelity)."""
    conditions = {n for r in c.decisive_rules or c.rule_ids for n in v.conditions.get(r, frozenset())}
    problems = fidelity_problems(c.question, c.analysis_type, c.facts, c.gold_answer, conditions)
    return "; ".join(problems) if problems else None


STAGE1: tuple[Check, ...] = (missing_gold, unscorable, too_short, leaked_identifiers,
                             datetime_as_category, short_knowledge, not_naturalised, phrasing_fidelity, knowledge_leak,
                             knowledge_lazy_retrieval)


def stage1(c: Candidate, v: Vocabulary) -> list[str]:
    out = []
    for check in STAGE1:
        reason = check(c, v)
        if reason:
            out.append(f"{check.__name__}: {reason}")
    return out


JUDGE_DIMENSIONS = ("objectivity", "answer_leakage", "naturalness", "answer_relevance", "format_alignment",
                    "sql_correctness", "logical_reasoning", "gold_scope_match")
PHRASING_DIMENSIONS = {"naturalness", "answer_leakage", "format_alignment"}
JUDGE_PROMPT_VERSION = "judge/2"


class DimensionVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    passed: bool
    reason: str


class JudgeVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    objectivity: DimensionVerdict
    answer_leakage: DimensionVerdict
    naturalness: DimensionVerdict
    answer_relevance: DimensionVerdict
    format_alignment: DimensionVerdict
    sql_correctness: DimensionVerdict
    logical_reasoning: DimensionVerdict
    gold_scope_match: DimensionVerdict

    def failed(self) -> list[str]:
        return [d for d in JUDGE_DIMENSIONS if not getattr(self, d).passed]


JUDGE_SYSTEM = (
    "You review one benchmark task for data agents. Score eight binary dimensions: " + ", ".join(JUDGE_DIMENSIONS)
    + ". For each give {\"passed\": true|false, \"reason\": one sentence}. Reply with one JSON object whose keys "
    "are exactly those eight dimensions."
)


def judge(llm: BaseChatModel, c: Candidate) -> JudgeVerdict:
    import json

    user = json.dumps({"question": c.question, "analysis_type": c.analysis_type, "gold_answer": c.gold_answer,
                       "gold_sql": c.gold_sql, "answer_format": c.answer_format}, default=str)
    return ask_structured(llm, JUDGE_SYSTEM, user, JudgeVerdict, where=f"judge {c.key}", stage="judge")
