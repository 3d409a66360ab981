"""Reference agents that need no LLM: they read the private task record on purpose, to check the
scorer and to show the knowledge-to-computation gap (docs/evaluation.md).

`oracle` runs the gold SQL and derives the answer with `core.answers` (must score 100%);
`no-rule` runs the base SQL; `featured-rule-only` runs the task's SQL with its featured rule
alone; `retrieval-only` answers knowledge tasks with the top policy document and computes nothing;
`keyword-dump` answers every knowledge task with every number and date of every document.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dibench.core.facts import renderings, stated
from dibench.evaluation.agents.base import Agent, AgentRun
from dibench.evaluation.agents.tools import Toolbox
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.rederive import derive_answer, hypothetical_statement, needs_base_rows
from dibench.evaluation.tasks import TaskRecord

KNOWLEDGE = "knowledge_retrieval"


def _answered(answer: object, tools: Toolbox, detail: str) -> AgentRun:
    return AgentRun(answer=answer, stop_reason="answered", stop_detail=detail, turns=1, tool_calls=len(tools.events))


def _no_answer(tools: Toolbox, detail: str) -> AgentRun:
    return AgentRun(answer=None, stop_reason="no_answer", stop_detail=detail, turns=1, tool_calls=len(tools.events))


def knowledge_answer(gold: dict[str, Any]) -> dict[str, Any]:
    """The answer a gold knowledge answer asks for: the typed value (with its unit), or, for a task
    of the free-text format, its reference text with the facts it must include."""
    if "must_include" not in gold:
        return {k: v for k, v in gold.items() if k in ("value", "unit")}
    facts = gold.get("must_include") or []
    return {"text": f"{gold.get('text', '')}\nKey facts: {'; '.join(map(str, facts))}"}


@dataclass(frozen=True)
class OracleAgent:
    name: str = "oracle"
    model: str = "reference:oracle"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        if task.analysis_type == KNOWLEDGE:
            return _answered(knowledge_answer(task.gold_answer), tools, "gold knowledge answer")
        if task.gold_sql is None:
            return _no_answer(tools, "task has no gold SQL")
        rows = tools.sql(task.gold_sql, task.params, exact=True).rows
        base = None
        if needs_base_rows(task):
            sql, params = hypothetical_statement(task)
            base = tools.sql(sql, params, exact=True).rows if sql else None
        return _answered(derive_answer(task, rows, base), tools, "gold SQL executed")


@dataclass(frozen=True)
class NoRuleAgent:
    name: str = "no-rule"
    model: str = "reference:no-rule"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        if task.analysis_type == KNOWLEDGE or task.base_sql is None:
            return _no_answer(tools, "no base SQL: the no-rule agent only computes the plain metric")
        rows = tools.sql(task.base_sql, task.base_params, exact=True).rows
        # Without rules the counterfactual's "current" and "hypothetical" are the same rows.
        return _answered(derive_answer(task, rows, rows), tools, "base SQL executed")


@dataclass(frozen=True)
class FeaturedRuleOnlyAgent:
    name: str = "featured-rule-only"
    model: str = "reference:featured-rule-only"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        if task.analysis_type == KNOWLEDGE:
            return OracleAgent().run(task, tools)  # a knowledge task is about its featured document
        sql, params = (task.featured_sql, task.featured_params) if task.featured_sql else (task.base_sql,
                                                                                           task.base_params)
        if sql is None:
            return _no_answer(tools, "task has no SQL")
        rows = tools.sql(sql, params, exact=True).rows
        base = tools.sql(task.base_sql, task.base_params, exact=True).rows if needs_base_rows(task) and task.base_sql else None
        return _answered(derive_answer(task, rows, base), tools, "featured rule alone executed")


@dataclass(frozen=True)
class RetrievalOnlyAgent:
    name: str = "retrieval-only"
    model: str = "reference:retrieval-only"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        if task.analysis_type != KNOWLEDGE:
            return _no_answer(tools, "retrieval only: computes nothing")
        hits = tools.search(task.question, k=1, kind="rule")
        if not hits:
            return _no_answer(tools, "no policy document matches the question")
        return _answered({"text": hits[0].text, "value": hits[0].text}, tools, f"top policy document {hits[0].doc_id}")


def every_value(kb: KnowledgeBase) -> str:
    """Every number and date of every document of the knowledge base, each once, in one line."""
    return " ".join(renderings([v for d in kb.documents for v in stated(f"{d.title}\n{d.text}", words=False)]))


@dataclass(frozen=True)
class KeywordDumpAgent:
    """An adversary of the knowledge contract: it answers every knowledge task with every number
    and date found in every document, the same line for every task, and reads no question. A
    knowledge score it reaches is a score that guessing reaches."""

    name: str = "keyword-dump"
    model: str = "reference:keyword-dump"

    def run(self, task: TaskRecord, tools: Toolbox) -> AgentRun:
        if task.analysis_type != KNOWLEDGE:
            return _no_answer(tools, "keyword dump: answers knowledge tasks only")
        values = every_value(tools.kb)
        return _answered({"text": values, "value": values.split()}, tools, "every number and date of every document")


REFERENCE_AGENTS: dict[str, Callable[[], Agent]] = {
    "oracle": OracleAgent, "no-rule": NoRuleAgent, "featured-rule-only": FeaturedRuleOnlyAgent,
    "retrieval-only": RetrievalOnlyAgent, "keyword-dump": KeywordDumpAgent}
