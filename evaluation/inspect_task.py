"""An Inspect AI task over a dibench export: `inspect eval <this file>@dibench -T export=DIR --model M`.

The dataset is built from the export's private records (`DIR/data/private.jsonl`, or a tasks.jsonl
of `dibench eval`), but a sample holds the public view only (question, answer format; metadata:
tier and analysis type; no target), so no prompt template and no Inspect log sees a private field;
the scorer keeps the records. The system prompt carries the schema, inserted verbatim. Its tools are the harness's,
through the same `Toolbox` (one per sample): sql_query (read-only, as the domain's role),
search_knowledge, read_document. The model ends with its answer as one JSON object, which the
scorer judges with dibench's answer contracts (`evaluation.scoring.score_task`); metrics: accuracy
overall and by knowledge tier. Needs the `inspect` extra and the domain's graph and warehouse.
Offline, token counts fall back to ~4 characters a token (`offline_token_counts`). See docs/evaluation.md.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, grouped, scorer, stderr
from inspect_ai.model import ChatMessageSystem
from inspect_ai.solver import Generate, TaskState, generate, solver
from inspect_ai.tool import Tool, tool

from dibench.core.errors import ConfigError
from dibench.evaluation.agents.tools import Toolbox, schema_description
from dibench.evaluation.kb import KnowledgeBase, load_knowledge_base
from dibench.evaluation.scoring import read_jsonl, score_task, validate_task

PROMPT = """You are a data analyst answering a business question about the company's data.
Tools: `sql_query` runs one read-only SQL query on the database below; `search_knowledge` searches
the metric catalog and the company's policy documents and returns their opening lines;
`read_document` reads one of them whole. Company policies can change how a metric must be computed
(which rows count, thresholds, weights, suppression of small groups): look them up and apply them.
Dates in questions describe half-open windows of whole months. When you are done, reply with the
answer alone, as one JSON object in the task's answer format, and call no tool.

{schema}"""
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def from_working_dir(path: str) -> Path:
    """`path` as the person who typed it meant it. Inspect runs a task file from the file's own
    folder, so while that is the working directory a relative path resolves against the shell's
    (PWD), as every other path of `inspect eval` does."""
    given = Path(path)
    shell = os.environ.get("PWD")
    if given.is_absolute() or not shell or Path.cwd() != Path(__file__).resolve().parent:
        return given
    return Path(shell) / given


def records(export: Path) -> list[dict[str, Any]]:
    """The private records of an export folder (or of a JSONL file of task records)."""
    path = export
    if export.is_dir():
        path = next((p for p in (export / "data" / "private.jsonl", export / "private.jsonl",
                                 export / "tasks.jsonl") if p.is_file()), export / "data" / "private.jsonl")
    if not path.is_file():
        raise ConfigError(f"{export}: no private task records (data/private.jsonl of "
                          f"`dibench export --audience private`)")
    out = []
    for _n, rec in read_jsonl(path):
        validate_task(rec)
        out.append(rec)
    return out


PUBLIC_METADATA = ("tier", "analysis_type", "variant")


def sample(rec: dict[str, Any]) -> Sample:
    """The public view of one record: nothing the agent may not see (no target, no private field)."""
    return Sample(id=rec["task_id"], input=f"Question: {rec['question']}\n\nAnswer format: {rec['answer_format']}",
                  metadata={k: rec[k] for k in PUBLIC_METADATA if k in rec})


def parse_answer(text: str) -> Any:
    """The JSON object of the model's last message; text that holds none is kept (scored malformed)."""
    cleaned = _FENCE.sub("", text.strip()).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start >= 0 and end > start:
        try:
            return json.loads(cleaned[start:end + 1])
        except json.JSONDecodeError:
            pass
    return cleaned or None


@scorer(metrics=[accuracy(), stderr(), grouped(accuracy(), "tier")])
def contract_scorer(private: dict[str, dict[str, Any]]) -> Any:
    """Scores a sample against its private record, which only this closure holds (by sample id)."""
    async def score(state: TaskState, target: Target) -> Score:
        answer = parse_answer(state.output.completion)
        verdict = score_task(private[str(state.sample_id)], answer)
        return Score(value=CORRECT if verdict.passed else INCORRECT, answer=json.dumps(answer, default=str),
                     explanation=verdict.reason, metadata={"failure_class": verdict.failure_class})

    return score


class _Environment:
    """The domain's warehouse, knowledge base and schema prompt, loaded once per process."""

    def __init__(self, domain: str) -> None:
        from dibench.evaluation.tasks import domain_schema
        from dibench.stores.graph import get_graph
        from dibench.stores.warehouse import get_warehouse

        graph, wh = get_graph(), get_warehouse()
        self.db_schema = domain_schema(graph, domain)
        self.wh = wh.for_schema(self.db_schema)
        self.kb: KnowledgeBase = load_knowledge_base(graph, domain)
        self.schema_text = schema_description(wh, self.db_schema)

    def toolbox(self) -> Toolbox:
        return Toolbox(self.wh, self.kb, schema=self.db_schema)


def _tools(box: Toolbox) -> list[Tool]:
    @tool
    def sql_query() -> Tool:
        async def execute(sql: str, params: dict[str, Any] | None = None) -> str:
            return str(await anyio.to_thread.run_sync(lambda: box.sql_tool({"sql": sql, "params": params or {}})))

        # Inspect reads a tool's description and arguments from its docstring: the engine is the
        # warehouse's (the engine seam), so the docstring is written here.
        execute.__doc__ = (f"Run ONE read-only SELECT or WITH query on the {box.wh.display_name} database.\n\n"
                           "Args:\n    sql: the query; bind values as :name placeholders.\n"
                           "    params: values of the :name placeholders, e.g. {\"start\": \"2024-01-01\"}.\n")
        return execute

    @tool
    def search_knowledge() -> Tool:
        async def execute(query: str, k: int = 5, kind: str | None = None) -> str:
            """Search the metric catalog and the policy documents; returns ids, titles and opening lines.

            Args:
                query: what to look for.
                k: documents to return (1-10).
                kind: only "metric" definitions or only "rule" policies.
            """
            args: dict[str, Any] = {"query": query, "k": k} | ({"kind": kind} if kind else {})
            return str(await anyio.to_thread.run_sync(lambda: box.search_tool(args)))

        return execute

    @tool
    def read_document() -> Tool:
        async def execute(doc_id: str) -> str:
            """Read one knowledge-base document whole.

            Args:
                doc_id: an id that search_knowledge returned.
            """
            return str(await anyio.to_thread.run_sync(lambda: box.read_tool({"doc_id": doc_id})))

        return execute

    return [sql_query(), search_knowledge(), read_document()]


@solver
def schema_prompt(text: str) -> Any:
    """The system prompt as given: no template filled from sample metadata or the store."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages.insert(0, ChatMessageSystem(content=text))
        return state

    return solve


@solver
def dibench_tools(env: _Environment) -> Any:
    """A fresh Toolbox per sample, as the harness gives each task."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = _tools(env.toolbox())
        state.tool_choice = "auto"
        return state

    return solve


def offline_token_counts() -> None:
    """Inspect's token estimate without tiktoken's downloadable encoding (offline machines)."""
    import tiktoken

    try:
        tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - any failure to load the encoding (no network, no cache)
        import inspect_ai.model._model as inspect_model

        from dibench.stores.llm_request import estimate_tokens

        inspect_model.count_text_tokens = lambda text: max(1, int(estimate_tokens(text) * 1.1))  # type: ignore[attr-defined]


@task
def dibench(export: str, max_messages: int = 40) -> Task:
    """The tasks of a dibench export, with the harness's tools and dibench's answer contracts."""
    offline_token_counts()
    recs = records(from_working_dir(export))
    domains = sorted({r["domain"] for r in recs})
    if len(domains) != 1:
        raise ConfigError(f"{export}: records of {len(domains)} domains; export one domain")
    env = _Environment(domains[0])
    return Task(dataset=MemoryDataset([sample(r) for r in recs], name=f"dibench-{domains[0]}"),
                solver=[schema_prompt(PROMPT.replace("{schema}", env.schema_text)),
                        dibench_tools(env), generate(tool_calls="loop")],
                scorer=contract_scorer({r["task_id"]: r for r in recs}), message_limit=max_messages)
