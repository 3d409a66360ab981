"""Chance levels: what trivial strategies score on the same tasks, next to every printed score.

`chance_levels` runs the reference agents `no-rule` (the plain metric), `featured-rule-only`
(one rule at a time) and `keyword-dump` (every number and date of every document) on the tasks
an agent was scored on, in the same process and without an LLM, and scores them with the same
contracts. `chance_rows` lays an agent's accuracy by tier or analysis type, with its 95% Wilson
interval and task count, beside theirs (docs/evaluation.md, "Chance levels").
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dibench.evaluation.agents.base import run_one
from dibench.evaluation.agents.reference import REFERENCE_AGENTS
from dibench.evaluation.agents.tools import Toolbox
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.reporting_tables import Bucket, interval_text
from dibench.evaluation.scoring import Report, score_run
from dibench.evaluation.tasks import TaskRecord, task_dicts
from dibench.stores.warehouse import Warehouse

CHANCE_AGENTS: tuple[str, ...] = ("no-rule", "featured-rule-only", "keyword-dump")
Grouping = Literal["tier", "analysis_type"]


class Aggregates(BaseModel):
    """A reference agent's accuracy on the tasks, grouped as a Report groups them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    overall: Bucket
    by_tier: dict[str, Bucket]
    by_analysis_type: dict[str, Bucket]
    by_variant: dict[str, Bucket]

    @staticmethod
    def of(report: Report) -> "Aggregates":
        return Aggregates(overall=report.overall, by_tier=report.by_tier, by_analysis_type=report.by_analysis_type,
                          by_variant=report.by_variant)


class ChanceLevels(BaseModel):
    """{reference agent: its aggregates} on one set of tasks (`chance.json` of `dibench eval`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int
    agents: dict[str, Aggregates]


def chance_levels(tasks: Sequence[TaskRecord], wh: Warehouse, kb: KnowledgeBase, *,
                  db_schema: str | None = None, agents: Sequence[str] = CHANCE_AGENTS,
                  scored: Sequence[Mapping[str, Any]] | None = None) -> ChanceLevels:
    """Run each reference agent of `agents` on `tasks` (a fresh toolbox per task, as the harness
    does) and score it: read-only SQL and the knowledge base, no model. `scored`: the records to
    score the answers against (default: `tasks` themselves), e.g. the file an agent was scored on."""
    out: dict[str, Aggregates] = {}
    memo: dict[tuple[str, str], Any] = {}  # one statement's result, whichever agent runs it first
    for name in agents:
        agent = REFERENCE_AGENTS[name]()
        answers = {t.task_id: run_one(agent, t, Toolbox(wh, kb, schema=db_schema, memo=memo)).answer for t in tasks}
        out[name] = Aggregates.of(score_run(scored if scored is not None else task_dicts(tasks), answers))
    return ChanceLevels(tasks=len(tasks), agents=out)


def chance_columns(chance: ChanceLevels | None) -> list[str]:
    return ["tasks", "passed", "accuracy %", "95% CI"] + [f"{a} %" for a in (chance.agents if chance else ())]


def chance_rows(report: Report, chance: ChanceLevels | None, by: Grouping) -> list[list[str]]:
    """One row per group of `report` (tiers or analysis types): the group, its task count,
    passes, accuracy and 95% interval, then each reference agent's accuracy on the same group."""
    groups = report.by_tier if by == "tier" else report.by_analysis_type
    rows = []
    for group, b in groups.items():
        row = [group, str(b.total), str(b.passed), f"{b.accuracy_pct:.1f}", interval_text(b)]
        for agg in (chance.agents.values() if chance else ()):
            other = (agg.by_tier if by == "tier" else agg.by_analysis_type).get(group)
            row.append(f"{other.accuracy_pct:.1f}" if other is not None else "-")
        rows.append(row)
    return rows
