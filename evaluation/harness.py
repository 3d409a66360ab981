"""The agent harness: give each task to an agent with its tools, record everything, score the run.

`evaluate` loads tasks from the graph, builds the knowledge base and schema prompt, runs one
agent per task with a fresh Toolbox, and writes `tasks.jsonl` (private records), `answers.jsonl`
(`{"task_id", "answer"}`, null = no answer), `trace.jsonl`, `score.json` and `summary.json`;
`dibench score out/tasks.jsonl out/answers.jsonl` reproduces `score.json`; `chance.json` holds
what the no-LLM reference agents score on the same tasks (evaluation/chance.py).
"""
from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from dibench.core.config import get_settings
from dibench.core.errors import ConfigError, NotFound
from dibench.evaluation.agents.base import MAX_TURNS, Agent, AgentRun, Budget, Named, run_one
from dibench.evaluation.agents.reference import REFERENCE_AGENTS
from dibench.evaluation.agents.tools import Toolbox, jsonable, schema_description
from dibench.evaluation.chance import ChanceLevels, chance_levels
from dibench.evaluation.kb import KnowledgeBase, load_knowledge_base
from dibench.evaluation.run_files import RunFiles
from dibench.evaluation.sandbox import Isolation, Sandbox, SandboxSpec, choose
from dibench.evaluation.scoring import Report, score_run
from dibench.evaluation.tasks import VARIANTS, TaskRecord, domain_schema, load_tasks, task_dicts
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse

if TYPE_CHECKING:  # imported for real only when a command agent or a chat model runs
    from langchain_core.language_models.chat_models import BaseChatModel

    from dibench.evaluation.agents.command import CommandAgent
    from dibench.evaluation.environment import TaskEnvironment

AGENT_NAMES: tuple[str, ...] = ("oracle", "no-rule", "featured-rule-only", "retrieval-only", "keyword-dump", "llm",
                                "hostile")


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
    trials: int = 1  # attempts per task; score.json has pass^k when more than one
    pass_hat_k: float | None = None  # pass^k (%) for k = trials, overall


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
    from dibench.evaluation.agents.llm import LlmAgent
    from dibench.stores.llm import configured_model

    model = chat_model if chat_model is not None else configured_model()
    if model is None:
        raise ConfigError("agent llm needs a chat model, and none is configured",
                          hint="set DIBENCH_LLM=openai with DIBENCH_LLM_BASE_URL and DIBENCH_LLM_MODEL, or "
                               "DIBENCH_LLM_PROVIDER=module:factory (a zero-argument callable returning a "
                               "langchain-core chat model with tool calling)")
    return LlmAgent(model, schema, max_turns=max_turns, budget=budget)


def evaluate(graph: Graph, wh: Warehouse, *, domain: str, agent_name: str, out_dir: Path, run: str | None = None,
             variants: Sequence[str] | None = None, limit: int | None = None, max_turns: int = MAX_TURNS,
             chat_model: BaseChatModel | None = None, budget: Budget | None = None,
             progress: Callable[[int, int, str], None] | None = None,
             task_ids: Sequence[str] | None = None, trials: int = 1, concurrency: int = 1,
             resume: bool = False, agent_cmd: str | None = None, chance: bool = True,
             isolation: Isolation = "auto", sandbox_spec: SandboxSpec | None = None,
             warn: Callable[[str], None] | None = None, name: str | None = None) -> EvalResult:
    """Load the domain's tasks and run one agent on them (see the module docstring); `task_ids`
    picks tasks by id, in that order; `name` is the agent's name in the run's files. `agent_cmd` runs a program per attempt instead
    (`agents.command`), each in a sandbox of its own under `isolation` (evaluation/sandbox.py),
    with the task environment served over MCP for the run's duration."""
    db_schema = domain_schema(graph, domain)
    schema = schema_description(wh, db_schema)
    tasks = select_tasks(load_tasks(graph, domain, run=run, variants=variants), task_ids, limit)
    kb = load_knowledge_base(graph, domain)
    domain_wh = wh.for_schema(db_schema)
    kwargs: dict[str, Any] = dict(domain=domain, run=run, variants=sorted(set(variants or VARIANTS)),
                                  max_turns=max_turns, progress=progress, db_schema=db_schema, trials=trials,
                                  concurrency=concurrency, resume=resume, chance=chance)
    if agent_cmd is None and agent_name != "hostile":
        agent = make_agent(agent_name, schema=schema, max_turns=max_turns, chat_model=chat_model, budget=budget)
        return run_tasks(tasks, Named(agent, name) if name else agent, domain_wh, kb, out_dir, **kwargs)
    from dibench.evaluation.environment import TaskEnvironment
    from dibench.evaluation.mcp_server import HttpServer, build_server

    spec = sandbox_spec or SandboxSpec()
    sandbox = choose(isolation, spec, private=(get_settings().state_dir, out_dir), warn=warn)
    env = TaskEnvironment(tasks, domain_wh, kb, schema, db_schema=db_schema, max_turns=max_turns, autostart=False)
    try:  # each attempt's own token (TaskEnvironment.open) is the only one the server takes
        server = HttpServer(build_server(env), token=env.live, uds=sandbox.socket_path if sandbox else None).start()
        try:
            if sandbox is not None:
                sandbox.verify()
            command = command_agent(agent_cmd, env, server.url, sandbox, spec, budget or Budget(turns=max_turns),
                                    out_dir, tasks)
            return run_tasks(tasks, Named(command, name) if name else command, domain_wh, kb, out_dir, **kwargs)
        finally:
            server.stop()
    finally:
        if sandbox is not None:
            sandbox.close()


def command_agent(agent_cmd: str | None, env: TaskEnvironment, url: str, sandbox: Sandbox | None,
                  spec: SandboxSpec, budget: Budget, out_dir: Path, tasks: Sequence[TaskRecord]) -> CommandAgent:
    """The program `agent_cmd` as the agent, or (None) the hostile reference agent, told the targets."""
    from dibench.evaluation.agents import hostile
    from dibench.evaluation.agents.command import CommandAgent

    if agent_cmd is not None:
        return CommandAgent(agent_cmd, env, url, max_seconds=budget.seconds, max_tokens=budget.tokens,
                            sandbox=sandbox, spec=spec)
    command = CommandAgent(hostile.hostile_command(sandbox), env, url, max_seconds=budget.seconds, sandbox=sandbox,
                           spec=spec, extra_env=hostile.hostile_targets(out_dir, [t.task_id for t in tasks]))
    command.name, command.model = hostile.NAME, hostile.MODEL
    return command


def select_tasks(tasks: Sequence[TaskRecord], task_ids: Sequence[str] | None, limit: int | None) -> list[TaskRecord]:
    """The tasks named by `task_ids` (in that order; an unknown id is an error), else all; at most `limit`."""
    if task_ids is not None:
        by_id = {t.task_id: t for t in tasks}
        unknown = [i for i in task_ids if i not in by_id]
        if unknown:
            raise NotFound(f"{len(unknown)} task id(s) not among the selected tasks, e.g. {unknown[0]}",
                           hint="check --domain, --run and --variant")
        tasks = [by_id[i] for i in dict.fromkeys(task_ids)]
    return list(tasks[:limit] if limit is not None else tasks)


def run_tasks(tasks: Sequence[TaskRecord], agent: Agent, wh: Warehouse, kb: KnowledgeBase, out_dir: Path, *,
              domain: str, run: str | None = None, variants: Sequence[str] = (), max_turns: int = MAX_TURNS,
              progress: Callable[[int, int, str], None] | None = None, db_schema: str | None = None,
              trials: int = 1, concurrency: int = 1, resume: bool = False, chance: bool = True) -> EvalResult:
    """Run `agent` on each task `trials` times, write answers and traces attempt by attempt, then
    score. A task whose agent fails (a provider error, a failing tool, a crashed command) is
    recorded with the reason and no answer; if the run itself stops early (Ctrl-C), the attempts
    finished so far are still scored, and `resume` continues it in the same folder. With
    `concurrency` > 1, that many tasks run at once (a task's trials one after another). With
    `chance`, the reference agents of evaluation/chance.py then run once on the same tasks
    (chance.json)."""
    if trials < 1 or concurrency < 1:
        raise ConfigError(f"--trials and --concurrency must be at least 1 (got {trials} and {concurrency})")
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    manifest = {"agent": agent.name, "model": agent.model, "domain": domain, "run": run, "trials": trials,
                "task_ids": [t.task_id for t in tasks], "max_turns": max_turns}
    files = RunFiles(out_dir, manifest, resume=resume)
    from dibench.stores.llm import session  # the model calls' accounting (langchain-core)

    llm_before = session().snapshot()
    todo = [t for t in tasks if any((t.task_id, i) not in files.done for i in range(1, trials + 1))]
    finished = [len(tasks) - len(todo)]
    lock = threading.Lock()

    def work(task: TaskRecord) -> None:
        for trial in range(1, trials + 1):
            if (task.task_id, trial) in files.done:
                continue
            tools = Toolbox(wh, kb, schema=db_schema)
            t0 = time.perf_counter()
            result = run_one(agent, task, tools)
            row = trace_row(task, agent, result, tools, time.perf_counter() - t0)
            files.record(task.task_id, trial, jsonable(result.answer), row)
        with lock:
            finished[0] += 1
            if progress:
                progress(finished[0], len(tasks), task.task_id)

    try:
        if concurrency == 1:
            for task in todo:
                work(task)
        else:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="eval") as pool:
                for future in as_completed([pool.submit(work, t) for t in todo]):
                    future.result()
    finally:
        # The files describe the attempts that finished: a stopped run is scored on what it finished.
        result = finish_run(files, tasks, agent, domain=domain, run=run, variants=variants, max_turns=max_turns,
                            trials=trials, started_at=started_at, wall=time.perf_counter() - started,
                            llm=session().since(llm_before))
    if chance:  # on the tasks that ran: a stopped run is compared on what it finished
        ran = {v.verdict.task_id for v in result.report.tasks}  # the report scores exactly those
        levels = chance_levels([t for t in tasks if t.task_id in ran], wh, kb, db_schema=db_schema)
        files.write_json("chance", levels.model_dump(mode="json"))
        result = replace(result, chance=levels)
    return result


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


def finish_run(files: RunFiles, tasks: Sequence[TaskRecord], agent: Agent | AgentInfo, *, domain: str,
               run: str | None, variants: Sequence[str], max_turns: int, trials: int, started_at: str, wall: float,
               llm: dict[str, Any] | None = None) -> EvalResult:
    """Score the attempts the run's files hold and write tasks.jsonl, score.json and summary.json."""
    attempts, traces = files.attempts()
    ran = {task for task, _trial in attempts}
    done = [t for t in tasks if t.task_id in ran]
    files.write_tasks(done)
    answers = {task: answer for (task, trial), answer in attempts.items() if trial == 1}
    reasons = {str(r["task_id"]): str(r.get("stop_detail") or r.get("stop_reason"))
               for r in traces if int(r.get("trial") or 1) == 1 and r.get("stop_reason") != "answered"}
    report = score_run(task_dicts(done), answers, reasons, trials=attempts if trials > 1 else None)
    files.write_json("score", report.model_dump(mode="json"))
    tokens: dict[str, int] = {}
    for r in traces:
        for k, v in (r.get("usage") or {}).items():
            tokens[k] = tokens.get(k, 0) + int(v)
    summary = EvalSummary(
        agent=agent.name, model=agent.model, domain=domain, run=run, variants=list(variants), tasks=len(done),
        answered=sum(1 for a in answers.values() if a is not None), passed=report.overall.passed,
        accuracy_pct=report.overall.accuracy_pct, max_turns=max_turns,
        temperature=getattr(agent, "temperature", None), prompt_version=getattr(agent, "prompt_version", None),
        tokens=tokens or None, started_at=started_at, wall_seconds=round(wall, 2),
        files={k: str(p) for k, p in files.paths.items()}, planned=len(tasks),
        stop_reasons=dict(sorted(Counter(str(r.get("stop_reason")) for r in traces).items())), llm=llm,
        trials=trials, pass_hat_k=report.reliability.overall.by_k[-1].pass_hat_k if report.reliability else None,
    )
    files.write_json("summary", summary.model_dump(mode="json"))
    return EvalResult(summary, report)


@dataclass(frozen=True)
class AgentInfo:
    """What a run's summary says of an agent that is not a harness Agent (an outside agent over MCP)."""

    name: str
    model: str


def trace_row(task: TaskRecord, agent: Agent | AgentInfo, result: AgentRun, tools: Toolbox, elapsed: float) -> dict[str, Any]:
    return {
        "task_id": task.task_id, "agent": agent.name, "model": agent.model, "analysis_type": task.analysis_type,
        "tier": task.tier, "variant": task.variant, "stop_reason": result.stop_reason,
        "stop_detail": result.stop_detail, "turns": result.turns, "tool_calls": result.tool_calls,
        "usage": result.usage.as_dict(), "elapsed_s": round(elapsed, 4), "events": tools.events,
        "messages": result.messages, "notes": result.notes,
    }


def read_summary(path: Path) -> EvalSummary:
    return EvalSummary.model_validate_json(path.read_text(encoding="utf-8"))
