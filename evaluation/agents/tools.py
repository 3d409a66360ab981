"""The agent's tools: read-only SQL on the domain database, knowledge-base search and reading.

A `Toolbox` is made per task. It runs every call through the one read-only path
(`Warehouse.execute_readonly`) and the BM25 knowledge base, and records each call (arguments,
a bounded summary of the result, error, time) as an event of the task's trace. The `*_tool`
methods are the model-facing forms (the built-in agent and the MCP server call the same ones):
they return text, and an error (refused or failing SQL, a bad argument) is returned to the model
as text too, because reacting to it is part of the agent's work; the event records it either way.
A search returns each hit's opening lines; `read_document` gives one document whole, so a search
never floods a small model's context with k full documents.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import StatementError

from dibench.core.errors import DibenchError, WarehouseError
from dibench.evaluation.answer_values import storable
from dibench.evaluation.kb import KINDS, Document, Hit, KnowledgeBase
from dibench.evaluation.tool_contract import ROW_LIMIT, sql_tool_text
from dibench.stores.warehouse import QueryResult, ResultCap, Warehouse

TRACE_ROWS = 5          # rows kept per query in the trace
MAX_SEARCH_K = 10
EXCERPT_CHARS = 400     # of each search hit's text; read_document gives the whole document


@dataclass
class Toolbox:
    wh: Warehouse
    kb: KnowledgeBase
    row_limit: int = ROW_LIMIT
    schema: str | None = None  # the domain schema: unqualified table names in the agent's SQL resolve to it
    events: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0
    cap: ResultCap = field(default_factory=ResultCap)  # rows and bytes read of one result, at most
    # results of exact statements shared by the toolboxes of one chance-level run: the reference
    # agents run the same base and variant statements of a task many times over
    memo: dict[tuple[str, str], QueryResult] | None = None

    # -- direct forms (reference agents): results as objects, errors raised ---------------
    def sql(self, sql: str, params: dict[str, Any] | None = None, *, exact: bool = False) -> QueryResult:
        """`exact`: NUMERIC values stay Decimal (reference agents round them as generation does)."""
        started = time.perf_counter()
        event: dict[str, Any] = {"turn": self.turn, "tool": "sql_query", "args": {"sql": sql, "params": params or {}}}
        memo = self.memo if exact else None
        key = (sql, json.dumps(params or {}, sort_keys=True, default=repr)) if memo is not None else ("", "")
        try:
            if memo is not None and key in memo:
                result = memo[key]
            else:
                result = self.wh.execute_readonly(sql, params or {}, schema=self.schema, exact=exact, cap=self.cap,
                                                  agent=True)
                if memo is not None:
                    memo[key] = result
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
                                          "rows": jsonable(result.rows[:TRACE_ROWS]),
                                          **({"cut": result.cut} if result.cut else {})})
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
        reply = {"columns": result.columns, "rows": jsonable(shown), "row_count": len(result.rows),
                 "truncated": len(result.rows) > len(shown) or result.cut is not None}
        if result.cut:  # row_count is then the rows read, not the result's size
            reply["note"] = f"the tool read part of the result only: {result.cut}"
        return json.dumps(reply, default=str)

    def search_tool(self, args: dict[str, Any]) -> str:
        query, k, kind = args.get("query"), args.get("k", 5), args.get("kind")
        if not isinstance(query, str) or not query.strip():
            return self.refuse("search_knowledge", args, "argument `query` must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
            return self.refuse("search_knowledge", args, f"argument `k` must be an integer 1..{MAX_SEARCH_K}")
        if kind is not None and kind not in KINDS:
            return self.refuse("search_knowledge", args, f"argument `kind` must be one of {', '.join(KINDS)}")
        hits = self.search(query, k, kind)
        return json.dumps([excerpt(h) for h in hits]) if hits else "no matching document"

    def read(self, doc_id: str) -> Document | None:
        started = time.perf_counter()
        doc = self.kb.get(doc_id)
        self.events.append({"turn": self.turn, "tool": "read_document", "args": {"doc_id": doc_id},
                            "ok": doc is not None, **({} if doc else {"error": "no such document"}),
                            "elapsed_s": round(time.perf_counter() - started, 4)})
        return doc

    def read_tool(self, args: dict[str, Any]) -> str:
        doc_id = args.get("doc_id")
        if not isinstance(doc_id, str) or not doc_id.strip():
            return self.refuse("read_document", args, "argument `doc_id` must be a document id from search_knowledge")
        doc = self.read(doc_id.strip())
        if doc is None:
            return f"error: no document {doc_id.strip()!r}; use a doc_id that search_knowledge returned"
        return json.dumps({"doc_id": doc.doc_id, "kind": doc.kind, "title": doc.title, "text": doc.text})

    def call_tool(self, name: str, args: dict[str, Any]) -> str:
        """A model's call of a tool by name (final_answer is the agent's own: it ends the task)."""
        if name == "sql_query":
            return self.sql_tool(args)
        if name == "search_knowledge":
            return self.search_tool(args)
        if name == "read_document":
            return self.read_tool(args)
        if name == "final_answer":
            return self.refuse(name, args, "final_answer needs an `answer` object")
        return self.refuse(name, args, f"unknown tool {name!r}; use sql_query, search_knowledge, read_document "
                                       f"or final_answer")

    def refuse(self, tool: str, args: dict[str, Any], problem: str) -> str:
        self.events.append({"turn": self.turn, "tool": tool, "args": jsonable(args), "ok": False, "error": problem,
                            "elapsed_s": 0.0})
        return f"error: {problem}"


def excerpt(hit: Hit) -> dict[str, Any]:
    """A search hit as the model sees it: the text's opening, and whether there is more to read."""
    item = hit.as_dict()
    text = item.pop("text")
    cut = len(text) > EXCERPT_CHARS
    item["excerpt"] = text[:EXCERPT_CHARS].rstrip() + (" [...]" if cut else "")
    if cut:
        item["more"] = f"read_document(doc_id={hit.doc_id!r}) returns the whole text"
    return item


def jsonable(value: Any) -> Any:
    """Rows, arguments and answers as plain JSON values (dates and decimals as text); what JSON
    cannot write (a 5,000-digit integer, nesting past the recursion limit) as a marker string."""
    return storable(value)


def schema_description(wh: Warehouse, schema: str) -> str:
    """The domain schema as the agent's system prompt shows it: tables, typed columns, keys."""
    shapes = wh.inspect_schema(schema)
    if shapes is None:
        raise DibenchError(f"schema {schema!r} is not loaded in the {wh.display_name} warehouse",
                           hint="run `dibench domain load <pack>` first")
    lines = [f"{wh.display_name} schema `{schema}` (qualify tables as {schema}.<table>):"]
    for table in sorted(shapes):
        shape = shapes[table]
        cols = ", ".join(f"{name} {type_}" for name, type_ in shape.columns)
        lines.append(f"- {table}({cols})")
        if shape.primary_key:
            lines.append(f"    primary key: {', '.join(shape.primary_key)}")
        for fk in shape.foreign_keys:
            lines.append(f"    foreign key: ({', '.join(fk.columns)}) -> "
                         f"{fk.referred_table}({', '.join(fk.referred_columns)})")
    return "\n".join(lines)


def sql_tool_description(wh: Warehouse) -> str:
    """What the agents' SQL tool says it runs on: the warehouse's engine, from the engine seam."""
    return sql_tool_text(wh.display_name)


def sql_tool_spec(wh: Warehouse) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "sql_query",
            "description": sql_tool_description(wh),
            "parameters": {"type": "object", "properties": {
                "sql": {"type": "string", "description": "the query"},
                "params": {"type": "object",
                           "description": "values of :name placeholders, e.g. {\"start\": \"2024-01-01\"}"},
            }, "required": ["sql"]},
        },
    }


SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_knowledge",
        "description": ("Search the company knowledge base: the metric catalog (definitions, formulas, SQL "
                        "templates) and the policy documents that say how figures must be reported. Returns "
                        "the best documents' ids, titles and opening lines; read_document gives a whole one."),
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_K, "description": "documents to return (default 5)"},
            "kind": {"type": "string", "enum": list(KINDS), "description": "only metric definitions or only policies"},
        }, "required": ["query"]},
    },
}


READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_document",
        "description": "Read one knowledge-base document (a metric definition or a policy) whole, by its doc_id.",
        "parameters": {"type": "object", "properties": {
            "doc_id": {"type": "string", "description": "an id search_knowledge returned, e.g. \"rule:POL-7\""},
        }, "required": ["doc_id"]},
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
