"""The agent's tools: read-only SQL on the domain database and knowledge-base search.

A `Toolbox` is made per task. It runs every call through the one read-only path
(`Warehouse.execute_readonly`) and the BM25 knowledge base, and records each call (arguments,
a bounded summary of the result, error, time) as an event of the task's trace. The `*_tool`
methods are the model-facing forms: they return text, and an error (refused or failing SQL,
a bad argument) is returned to the model as text too, because reacting to it is part of the
agent's work; the event records it either way.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.exc import StatementError

from dibench.core.errors import DibenchError, WarehouseError
from dibench.evaluation.kb import KINDS, Hit, KnowledgeBase
from dibench.stores.warehouse import QueryResult, Warehouse

ROW_LIMIT = 50          # rows a model sees per query; row_count still tells it the full size
TRACE_ROWS = 5          # rows kept per query in the trace
MAX_SEARCH_K = 10


@dataclass
class Toolbox:
    wh: Warehouse
    kb: KnowledgeBase
    row_limit: int = ROW_LIMIT
    schema: str | None = None  # the domain schema: unqualified table names in the agent's SQL resolve to it
    events: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0

    # -- direct forms (reference agents): results as objects, errors raised ---------------
    def sql(self, sql: str, params: dict[str, Any] | None = None, *, exact: bool = False) -> QueryResult:
        """`exact`: NUMERIC values stay Decimal (reference agents round them as generation does)."""
        started = time.perf_counter()
        event: dict[str, Any] = {"turn": self.turn, "tool": "sql_query", "args": {"sql": sql, "params": params or {}}}
        try:
            result = self.wh.execute_readonly(sql, params or {}, schema=self.schema, exact=exact)
        except DibenchError as exc:
            event.update(ok=False, error=str(exc))
            raise
        except StatementError as exc:
            # SQLAlchemy refuses before the database sees the query (e.g. a :name without a value);
            # for the agent that is a failed query like any other.
            problem = f"query not sent: {str(exc).splitlines()[0]}"
            event.update(ok=False, error=problem)
            raise WarehouseError(problem) from exc
        else:
            event.update(ok=True, result={"columns": result.columns, "row_count": len(result.rows),
                                          "rows": jsonable(result.rows[:TRACE_ROWS])})
            return result
        finally:
            event["elapsed_s"] = round(time.perf_counter() - started, 4)
            self.events.append(event)

    def search(self, query: str, k: int = 5, kind: str | None = None) -> list[Hit]:
        started = time.perf_counter()
        hits = self.kb.search(query, k, kind)
        self.events.append({"turn": self.turn, "tool": "search_knowledge",
                            "args": {"query": query, "k": k, "kind": kind}, "ok": True,
                            "result": [{"doc_id": h.doc_id, "score": round(h.score, 4)} for h in hits],
                            "elapsed_s": round(time.perf_counter() - started, 4)})
        return hits

    # -- model-facing forms: text in, text out ------------------------------------------
    def sql_tool(self, args: dict[str, Any]) -> str:
        sql, params = args.get("sql"), args.get("params") or {}
        if not isinstance(sql, str) or not sql.strip():
            return self.refuse("sql_query", args, "argument `sql` must be a non-empty string")
        if not isinstance(params, dict):
            return self.refuse("sql_query", args, "argument `params` must be an object of named values")
        try:
            result = self.sql(sql, params)
        except DibenchError as exc:
            return f"error: {exc}"
        shown = result.rows[: self.row_limit]
        return json.dumps({"columns": result.columns, "rows": jsonable(shown), "row_count": len(result.rows),
                           "truncated": len(result.rows) > len(shown)}, default=str)

    def search_tool(self, args: dict[str, Any]) -> str:
        query, k, kind = args.get("query"), args.get("k", 5), args.get("kind")
        if not isinstance(query, str) or not query.strip():
            return self.refuse("search_knowledge", args, "argument `query` must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
            return self.refuse("search_knowledge", args, f"argument `k` must be an integer 1..{MAX_SEARCH_K}")
        if kind is not None and kind not in KINDS:
            return self.refuse("search_knowledge", args, f"argument `kind` must be one of {', '.join(KINDS)}")
        hits = self.search(query, k, kind)
        return json.dumps([h.as_dict() for h in hits]) if hits else "no matching document"

    def refuse(self, tool: str, args: dict[str, Any], problem: str) -> str:
        self.events.append({"turn": self.turn, "tool": tool, "args": jsonable(args), "ok": False, "error": problem,
                            "elapsed_s": 0.0})
        return f"error: {problem}"


def jsonable(value: Any) -> Any:
    """Rows and arguments as plain JSON values (dates and decimals as text)."""
    return json.loads(json.dumps(value, default=str))


def schema_description(wh: Warehouse, schema: str) -> str:
    """The domain schema as the agent's system prompt shows it: tables, typed columns, keys."""
    insp = inspect(wh.admin())
    if schema not in insp.get_schema_names():
        raise DibenchError(f"schema {schema!r} is not loaded in PostgreSQL",
                           hint="run `dibench domain load <pack>` first")
    lines = [f"PostgreSQL schema `{schema}` (qualify tables as {schema}.<table>):"]
    for table in sorted(insp.get_table_names(schema=schema)):
        cols = ", ".join(f"{c['name']} {c['type']}" for c in insp.get_columns(table, schema=schema))
        lines.append(f"- {table}({cols})")
        pk = insp.get_pk_constraint(table, schema=schema).get("constrained_columns") or []
        if pk:
            lines.append(f"    primary key: {', '.join(pk)}")
        for fk in insp.get_foreign_keys(table, schema=schema):
            lines.append(f"    foreign key: ({', '.join(fk['constrained_columns'])}) -> "
                         f"{fk['referred_table']}({', '.join(fk['referred_columns'])})")
    return "\n".join(lines)


SQL_TOOL = {
    "type": "function",
    "function": {
        "name": "sql_query",
        "description": (f"Run ONE read-only SELECT or WITH query on the PostgreSQL database. Bind values as "
                        f":name placeholders given in `params`. Returns JSON with columns, at most {ROW_LIMIT} "
                        f"rows, the full row_count, or an error message."),
        "parameters": {"type": "object", "properties": {
            "sql": {"type": "string", "description": "the query"},
            "params": {"type": "object", "description": "values of :name placeholders, e.g. {\"start\": \"2024-01-01\"}"},
        }, "required": ["sql"]},
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_knowledge",
        "description": ("Search the company knowledge base: the metric catalog (definitions, formulas, SQL "
                        "templates) and the policy documents that say how figures must be reported."),
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_K, "description": "documents to return (default 5)"},
            "kind": {"type": "string", "enum": list(KINDS), "description": "only metric definitions or only policies"},
        }, "required": ["query"]},
    },
}


def final_answer_tool(answer_format: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "final_answer",
            "description": f"Submit the final answer (once; it ends the task). Format: {answer_format}",
            "parameters": {"type": "object", "properties": {
                "answer": {"type": "object", "description": f"the answer object: {answer_format}"},
            }, "required": ["answer"]},
        },
    }
