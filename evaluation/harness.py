"""The agent harness: give each task to an agent with its tools, record everything, score the run.

`evaluate` loads tasks from the graph, builds the knowledge base and schema prompt, runs one
agent per task with a fresh Toolbox, and writes `tasks.jsonl` (private records), `answers.jsonl`
(`{"task_id", "answer"}`, null = no answer), `trace.jsonl`, `score.json` and `summary.json`;
`dibench score out/tasks.jsonl out/answers.jsonl` reproduces `score.json`; `chance.json` holds
what the no-LLM reference agents score on the same tasks (evaluation/chance.py).
"""
from __future__ import annotations

import datetime as dt
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ConfigDict

from dibench.core.errors import ConfigError, NotFound
from dibench.evaluation.agents.base import Agent, AgentRun, run_one
from dibench.evaluation.agents.llm import MAX_TURNS, Budget, LlmAgent
from dibench.evaluation.agents.reference import REFERENCE_AGENTS
from dibench.evaluation.agents.tools import Toolbox, jsonable, schema_description
from dibench.evaluation.chance import ChanceLevels, chance_levels
from dibench.evaluation.kb import KnowledgeBase, load_knowledge_base
from dibench.evaluation.scoring import Report, score_run
from dibench.evaluation.tasks import TaskRecord, load_tasks, task_dicts, write_tasks_jsonl
from dibench.stores.graph import Graph
from dibench.stores.llm import configured_model, session
from dibench.stores.warehouse import Warehouse

AGENT_NAMES: tuple[str, ...] = ("oracle", "no-rule", "featured-rule-only", "retrieval-only", "keyword-dump", "llm")


class EvalSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    model: str
    domain: str
    run: str | None
    variants: list[str]
    tasks: int
    answered: int
    passed: int
    accuracy_pct: float
    max_turns: int
    temperature: float | None
    prompt_version: str | None = None  # the llm agent's system prompt version
    tokens: dict[str, int] | None
    started_at: str
    wall_seconds: float
    files: dict[str, str]
    planned: int | None = None  # tasks selected; `tasks` is how many ran (fewer if the run was stopped)
    stop_reasons: dict[str, int] | None = None  # answered / no_answer / error / budget
    llm: dict[str, Any] | None = None  # LLM calls, cache hits, failures, prompt tokens of this run


@dataclass(frozen=True)
class EvalResult:
    summary: EvalSummary
    report: Report
    chance: ChanceLevels | None = None  # the reference agents on the same tasks (chance.json)


def make_agent(name: str, *, schema: str, max_turns: int = MAX_TURNS,
               chat_model: BaseChatModel | None = None, budget: Budget | None = None) -> Agent:
    """A reference agent by name, or `llm`: the given chat model, else the configured one."""
    if name in REFERENCE_AGENTS:
        return REFERENCE_AGENTS[name]()
    if name != "llm":
        raise ConfigError(f"unknown agent {name!r}; expected one of {', '.join(AGENT_NAMES)}")
    model = chat_model if chat_model is not None else configured_model()
    if model is None:
        raise ConfigError("agent llm needs a chat model, and none is configured",
                          hint="set DIBENCH_LLM=openai with DIBENCH_LLM_BASE_URL and DIBENCH_LLM_MODEL, or "
                               "DIBENCH_LLM_PROVIDER=module:factory (a zero-argument callable returning a "
                               "langchain-core chat model with tool calling)")
    return LlmAgent(model, schema, max_turns=max_turns, budget=budget)


def domain_schema(graph: Graph, domain: str) -> str:
    rows = graph.read("eval_domain", domain=domain)
    if not rows or not rows[0]["schema"]:
        raise NotFound(f"domain {domain!r} is not in the graph", hint=f"run `dibench ingest {domain}` first")
    return str(rows[0]["schema"])


def evaluate(graph: Graph, wh: Warehouse, *, domain: str, agent_name: str, out_dir: Path, run: str | None = None,
             variants: Sequence[str] | None = None, limit: int | None = None, max_turns: int = MAX_TURNS,
             chat_model: BaseChatModel | None = None, budget: Budget | None = None,
             progress: Callable[[int, int, str], None] | None = None, chance: bool = True) -> EvalResult:
    """Load the domain's tasks and run one agent on them (see the module docstring)."""
    db_schema = domain_schema(graph, domain)
    schema = schema_description(wh, db_schema)
    agent = make_agent(agent_name, schema=schema, max_turns=max_turns, chat_model=chat_model, budget=budget)
    tasks = load_tasks(graph, domain, run=run, variants=variants, limit=limit)
    kb = load_knowledge_base(graph, domain)
    return run_tasks(tasks, agent, wh.for_schema(domain_schema(graph, domain)), kb, out_dir, domain=domain, run=run,
                     variants=sorted(set(variants or ("standard", "oracle", "no_rule"))), max_turns=max_turns,
                     progress=progress, db_schema=db_schema, chance=chance)


def run_tasks(tasks: Sequence[TaskRecord], agent: Agent, wh: Warehouse, kb: KnowledgeBase, out_dir: Path, *,
              domain: str, run: str | None = None, variants: Sequence[str] = (), max_turns: int = MAX_TURNS,
              progress: Callable[[int, int, str], None] | None = None, db_schema: str | None = None,
              chance: bool = True) -> EvalResult:
    """Run `agent` on each task, write answers and traces line by line, then score. A task whose
    agent fails (a provider error, a failing tool) is recorded with the reason and no answer; if
    the run itself stops early (Ctrl-C), the tasks finished so far are still scored. With `chance`,
    the reference agents of evaluation/chance.py then run on the same tasks (chance.json)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: out_dir / f"{name}.{ext}" for name, ext in
             (("tasks", "jsonl"), ("answers", "jsonl"), ("trace", "jsonl"), ("score", "json"), ("summary", "json"))}
    if chance:
        files["chance"] = out_dir / "chance.json"
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    answers: dict[str, Any] = {}
    tokens: dict[str, int] = {}
    done: list[TaskRecord] = []
    stops: Counter[str] = Counter()
    llm_before = session().snapshot()
    try:
        with files["answers"].open("w", encoding="utf-8") as ans_fh, \
                files["trace"].open("w", encoding="utf-8") as tr_fh:
            for i, task in enumerate(tasks, start=1):
                tools = Toolbox(wh, kb, schema=db_schema)
                t0 = time.perf_counter()
                result = run_one(agent, task, tools)
                elapsed = time.perf_counter() - t0
                answers[task.task_id] = result.answer
                ans_fh.write(json.dumps({"task_id": task.task_id, "answer": jsonable(result.answer)},
                                        sort_keys=True) + "\n")
                tr_fh.write(json.dumps(trace_row(task, agent, result, tools, elapsed), sort_keys=True,
                                       default=str) + "\n")
                ans_fh.flush()
                tr_fh.flush()
                done.append(task)
                stops[result.stop_reason] += 1
                for k, v in (result.usage.as_dict() or {}).items():
                    tokens[k] = tokens.get(k, 0) + v
                if progress:
                    progress(i, len(tasks), task.task_id)
    finally:
        # The files describe the tasks that ran: a stopped run is scored on what it finished.
        write_tasks_jsonl(done, files["tasks"])
        report = score_run(task_dicts(done), answers)
        files["score"].write_text(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
                                  encoding="utf-8")
        summary = EvalSummary(
            agent=agent.name, model=agent.model, domain=domain, run=run, variants=list(variants), tasks=len(done),
            answered=sum(1 for a in answers.values() if a is not None), passed=report.overall.passed,
            accuracy_pct=report.overall.accuracy_pct, max_turns=max_turns,
            temperature=getattr(agent, "temperature", None), prompt_version=getattr(agent, "prompt_version", None),
            tokens=tokens or None, started_at=started_at, wall_seconds=round(time.perf_counter() - started, 2),
            files={k: str(p) for k, p in files.items()}, planned=len(tasks), stop_reasons=dict(sorted(stops.items())),
            llm=session().since(llm_before),
        )
        files["summary"].write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    levels = None
    if chance:
        levels = chance_levels(done, wh, kb, db_schema=db_schema)
        files["chance"].write_text(levels.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return EvalResult(summary, report, levels)


def chance_for_records(graph: Graph, wh: Warehouse, records: Sequence[dict[str, Any]]) -> ChanceLevels:
    """Chance levels for the task records of a scored file (one domain): the reference agents
    run on each record (an evaluation's private record as it is; an export's, as the graph holds
    the task) and are scored against the file's own records."""
    domains = sorted({str(r.get("domain")) for r in records})
    if len(domains) != 1:
        raise ConfigError(f"chance levels are computed for one domain at a time; the tasks hold {', '.join(domains)}")
    db_schema = domain_schema(graph, domains[0])
    try:
        tasks = [TaskRecord.model_validate(r) for r in records]
    except ValueError:
        stored = {t.task_id: t for t in load_tasks(graph, domains[0], statuses=("admitted", "retired"))}
        missing = [r["task_id"] for r in records if r["task_id"] not in stored]
        if missing:
            raise NotFound(f"{len(missing)} of the {len(records)} tasks are not in the graph (e.g. {missing[0]})",
                           hint="chance levels run the reference agents on the tasks' SQL") from None
        tasks = [stored[r["task_id"]] for r in records]
    return chance_levels(tasks, wh.for_schema(db_schema), load_knowledge_base(graph, domains[0]),
                         db_schema=db_schema, scored=records)


def trace_row(task: TaskRecord, agent: Agent, result: AgentRun, tools: Toolbox, elapsed: float) -> dict[str, Any]:
    return {
        "task_id": task.task_id, "agent": agent.name, "model": agent.model, "analysis_type": task.analysis_type,
        "tier": task.tier, "variant": task.variant, "stop_reason": result.stop_reason,
        "stop_detail": result.stop_detail, "turns": result.turns, "tool_calls": result.tool_calls,
        "usage": result.usage.as_dict(), "elapsed_s": round(elapsed, 4), "events": tools.events,
        "messages": result.messages, "notes": result.notes,
    }


def read_summary(path: Path) -> EvalSummary:
    return EvalSummary.model_validate_json(path.read_text(encoding="utf-8"))
