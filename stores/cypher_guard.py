"""Run user Cypher only when Neo4j itself says it reads, and say nothing about the data when it fails.

A query is compiled with EXPLAIN in the READ transaction that then runs it, and refused unless
its query type is `r` and every plan operator is in READ_OPERATORS; a tokenizer first gives clear
messages for the obvious cases. It runs within a time limit (server-side, and a deadline here)
and the server's per-transaction memory limit. Only the private audience runs user Cypher (see
docs/public-surface.md). Errors carry only Neo4j's status code (and line and column of a syntax
error), never its message.
"""
from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from dibench.core.config import Settings
from dibench.core.errors import DibenchError, ServiceError
from dibench.stores.bolt import READ_ACCESS, AsyncGraphDatabase, Neo4jError, ServiceUnavailable
from dibench.stores.graph import Graph

WRITE_CLAUSES = frozenset({
    "create", "merge", "set", "delete", "detach", "remove", "foreach", "drop", "alter", "grant", "deny",
    "revoke", "terminate", "start", "stop", "use", "rename", "enable", "load", "show", "finish",
})
# Operators of read-only plans (Neo4j 5.26, slotted and pipelined runtimes). Anything else,
# e.g. ProcedureCall, LoadCSV, Create, SetProperty, TransactionApply, Show*, is refused.
READ_OPERATORS = frozenset({
    "ProduceResults", "AllNodesScan", "NodeByLabelScan", "NodeByIdSeek", "NodeByElementIdSeek",
    "UnionNodeByLabelsScan", "IntersectionNodeByLabelsScan", "SubtractionNodeByLabelsScan",
    "Expand(All)", "Expand(Into)", "OptionalExpand(All)", "OptionalExpand(Into)", "VarLengthExpand(All)",
    "VarLengthExpand(Into)", "VarLengthExpand(Pruning)", "VarLengthExpand(Pruning,BFS)", "BFSPruningVarExpand",
    "Filter", "Projection", "Distinct", "OrderedDistinct", "Sort", "PartialSort", "Top", "PartialTop", "Limit",
    "Skip", "ExhaustiveLimit", "EagerAggregation", "OrderedAggregation", "NodeCountFromCountStore",
    "RelationshipCountFromCountStore", "Unwind", "Apply", "SemiApply", "AntiSemiApply", "SelectOrSemiApply",
    "SelectOrAntiSemiApply", "LetSemiApply", "LetAntiSemiApply", "LetSelectOrSemiApply", "LetSelectOrAntiSemiApply",
    "RollUpApply", "ConditionalApply", "AntiConditionalApply", "Optional", "Argument", "CartesianProduct",
    "NodeHashJoin", "ValueHashJoin", "NodeLeftOuterHashJoin", "NodeRightOuterHashJoin", "Union", "OrderedUnion",
    "Eager", "CacheProperties", "ProjectEndpoints", "ShortestPath", "StatefulShortestPath(All)",
    "StatefulShortestPath(Into)", "Trail", "TriadicSelection", "TriadicBuild", "TriadicFilter", "AssertSameNode",
    "AssertSameRelationship", "EmptyResult", "NullifyMetadata", "PreserveOrder", "Anti", "DirectedAllRelationshipsScan",
    "UndirectedAllRelationshipsScan", "DirectedRelationshipByIdSeek", "UndirectedRelationshipByIdSeek",
    "DirectedRelationshipByElementIdSeek", "UndirectedRelationshipByElementIdSeek",
})
# Index seeks and scans come in many spellings (NodeIndexSeekByRange, NodeUniqueIndexSeek(Locking)
# is NOT read-only: it takes locks for MERGE, so `Locking` variants are excluded).
_READ_OPERATOR_FAMILY = re.compile(
    r"^(Node|MultiNode|Directed|Undirected)(Unique)?(Relationship)?(Type)?Index\w*(Seek|Scan)\w*$"
    r"|^(Directed|Undirected)RelationshipTypeScan$|^PartitionedAllNodesScan$"
    r"|^(Expand|OptionalExpand|VarLengthExpand|StatefulShortestPath)\([A-Za-z,]+\)$")
USER_QUERY_TIMEOUT_S = 10.0
# How long after the server-side timeout the caller stops waiting.
DEADLINE_GRACE_S = 1.0
# User queries of one process on the server at a time, how long a query waits for a slot, and how
# long a query given up at its deadline may keep its slot. One: a string the memory pools do not
# track (doubled in a `reduce`) fills the JVM's heap, and several at once stall every reader.
USER_QUERY_SLOTS = 1
SLOT_WAIT_S = 1.0
LINGER_MAX_S = 600.0
_SLOTS = threading.BoundedSemaphore(USER_QUERY_SLOTS)
MAX_ROWS = 1_000_000
_LINE_END = "\n\r\u2028\u2029\u0085\x0b\x0c"

_TOKEN = re.compile(
    # A `//` comment is closed at ANY line terminator: ending it too early only shows us more
    # text, ending it too late would hide a clause the server does parse.
    r"(?P<skip>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|//[^" + _LINE_END + r"]*|/\*.*?\*/)"
    r"|(?P<quoted>`(?:[^`]|``)*`)"
    r"|(?P<param>\$`?[A-Za-z_][A-Za-z0-9_]*`?|\$[0-9]+)"
    r"|(?P<word>[^\W\d]\w*)"
    r"|(?P<punct>[{}()\[\].:,;=<>+\-*/%^|!]|\S)",
    re.DOTALL,
)


class CypherRefused(DibenchError):
    """User Cypher that Neo4j's plan (or the first text pass) shows is not a plain read, that
    touches private properties, or that the server refused or could not finish."""

    hint = "an export query may only read and return task keys: MATCH (t:Task) ... RETURN t.key AS key"

    def __init__(self, what: str, line: int | None = None, column: int | None = None) -> None:
        self.what = what
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"refused Cypher: {what}{where}")


# The old name: callers and the HTTP status table catch this one.
CypherWriteRefused = CypherRefused


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    pos: int


def tokens(query: str) -> list[Token]:
    out = []
    for m in _TOKEN.finditer(query):
        kind = m.lastgroup or "punct"
        if kind == "quoted":
            out.append(Token("word", m.group()[1:-1].replace("``", "`"), m.start()))
        elif kind != "skip":
            out.append(Token(kind, m.group(), m.start()))
    return out


def _where(query: str, pos: int) -> tuple[int, int]:
    line = query.count("\n", 0, pos) + 1
    return line, pos - (query.rfind("\n", 0, pos) + 1) + 1


def _is_name(toks: list[Token], i: int) -> bool:
    """A word used as a property key (after `.`), label/type (after `:`) or map key (before `:`)."""
    prev = toks[i - 1].text if i > 0 else ""
    nxt = toks[i + 1].text if i + 1 < len(toks) else ""
    return prev in (".", ":") or (nxt == ":" and prev in ("{", ","))


def _procedure(toks: list[Token], i: int) -> str:
    """The dotted name after CALL at i (empty when CALL opens a subquery)."""
    parts, j = [], i + 1
    while j < len(toks) and toks[j].kind == "word":
        parts.append(toks[j].text)
        if j + 1 < len(toks) and toks[j + 1].text == ".":
            j += 2
            continue
        break
    return ".".join(parts).lower()


def check_read_only(query: str) -> None:
    """First pass on the text: refuse at the first write clause, `USE`, `SHOW`, procedure call or
    APOC name. Only for a clear message: `run_user_query` decides on the server's plan."""
    toks = tokens(query)
    for i, t in enumerate(toks):
        if t.kind != "word" or _is_name(toks, i):
            continue
        word = t.text.lower()
        if word in WRITE_CLAUSES:
            label = "LOAD CSV" if word == "load" else "DETACH DELETE" if word == "detach" else word.upper()
            raise CypherRefused(f"clause {label} is not allowed", *_where(query, t.pos))
        if word == "in" and i + 1 < len(toks) and toks[i + 1].text.lower() == "transactions":
            raise CypherRefused("CALL ... IN TRANSACTIONS is not allowed", *_where(query, t.pos))
        if word.startswith("apoc") and i + 1 < len(toks) and toks[i + 1].text == ".":
            raise CypherRefused("APOC procedures and functions are not allowed", *_where(query, t.pos))
        if word == "call" and _procedure(toks, i):
            raise CypherRefused("procedure calls are not allowed", *_where(query, t.pos))


# ------------------------------------------------------------------------------ the plan
def operators(plan: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """Every operator of a ResultSummary plan, depth first."""
    if not plan:
        return
    yield plan
    for child in plan.get("children") or []:
        yield from operators(child)


def _operator_name(op: dict[str, Any]) -> str:
    return str(op.get("operatorType", "")).split("@", 1)[0]


def check_plan(query_type: str | None, plan: dict[str, Any] | None) -> None:
    """Refuse unless Neo4j compiled a read query made of read operators only."""
    if query_type != "r":
        raise CypherRefused(f"Neo4j classifies this query as {query_type!r}, not read-only ('r')")
    if not plan:
        raise CypherRefused("Neo4j returned no plan for this query")
    for op in operators(plan):
        name = _operator_name(op)
        if name not in READ_OPERATORS and not _READ_OPERATOR_FAMILY.match(name):
            raise CypherRefused(f"plan operator {name[:60]} is not allowed in a read-only query")


# ------------------------------------------------------------------------------ running
_POSITION = re.compile(r"line (\d+), column (\d+)")
# What the server says when a value outgrows the heap or the largest array: a string doubled past
# 2^31 characters, before a 2 GiB heap is full, fails with just its overflowed length ("-2147483648").
_OUT_OF_MEMORY = re.compile(r"memory|heap space|GC overhead|array (?:size|length)|is too large|^\s*-\d+\s*$", re.I)


def sanitized(exc: Neo4jError, timeout_s: float = USER_QUERY_TIMEOUT_S) -> CypherRefused:
    """A one-line error with the status code; the server's text is dropped (it can hold data),
    except line and column of a syntax error, which are numbers about the caller's own text."""
    code = str(exc.code or "Neo.Unknown")[:120]
    if code.endswith("TransactionTimedOutClientConfiguration") or "TransactionTimedOut" in code:
        return CypherRefused(f"the query ran longer than the {timeout_s:g} s limit ({code})")
    if "MemoryPoolOutOfMemoryError" in code:
        return CypherRefused(f"the query needed more memory than one transaction may use ({code})")
    if code.endswith("OutOfMemoryError") or (code.endswith("ExecutionFailed") and _OUT_OF_MEMORY.search(
            str(exc.message or ""))):
        # A JVM heap exhausted mid-operator surfaces as ExecutionFailed; its text is only matched, never shown.
        return CypherRefused(f"the query built more than the server's memory can hold ({code})")
    pos = _POSITION.search(str(exc.message or "")) if code.endswith("SyntaxError") else None
    if pos:
        return CypherRefused(f"Neo4j error {code}", int(pos.group(1)), int(pos.group(2)))
    return CypherRefused(f"Neo4j error {code} (the server's message is withheld: it can contain data)")


def run_user_query(graph: Graph, text: str, params: dict[str, Any], *, timeout_s: float = USER_QUERY_TIMEOUT_S,
                   max_rows: int = MAX_ROWS) -> list[dict[str, Any]]:
    """Rows of user Cypher, run only after Neo4j's EXPLAIN of the same text and parameters shows a
    read plan: one READ transaction with a server-side timeout of `timeout_s`, never retried, at
    most `max_rows` rows, and at most USER_QUERY_SLOTS such queries of this process on the server
    at a time (else one line after SLOT_WAIT_S). The caller has its answer (rows or one line)
    within `timeout_s` + DEADLINE_GRACE_S: Neo4j checks its timeout between rows, so a query busy
    inside one expression (a `reduce` over a huge range) would hold the caller long past it; at
    the deadline its connection is dropped instead, and its slot stays taken until the server
    has finished it (`_release_when_done`)."""
    check_read_only(text)
    if not _SLOTS.acquire(timeout=SLOT_WAIT_S):
        raise CypherRefused("another user query of this process is still running on the server; "
                            "retry when it has finished")
    tag = uuid.uuid4().hex
    try:
        rows = _wait(_run(graph.settings, graph.database, text, params, timeout_s, max_rows, tag), timeout_s)
    except Deadline:
        threading.Thread(target=_release_when_done, args=(graph, tag), daemon=True,
                         name=f"user-cypher-{tag[:8]}").start()
        raise
    except ServiceUnavailable as exc:
        _SLOTS.release()
        raise ServiceError("Neo4j is not reachable", hint="run `dibench services up`") from exc
    except Neo4jError as exc:
        _SLOTS.release()
        raise sanitized(exc, timeout_s) from None
    except BaseException:
        _SLOTS.release()
        raise
    _SLOTS.release()
    return rows


class Deadline(CypherRefused):
    """The caller stopped waiting for a user query at its deadline; the server may still run it."""


def _release_when_done(graph: Graph, tag: str) -> None:
    """Free the slot of a query given up at its deadline once the server no longer runs it (or
    after LINGER_MAX_S, or when the server cannot say)."""
    try:
        deadline = time.monotonic() + LINGER_MAX_S
        while time.monotonic() < deadline and graph.read("user_query_running", tag=tag)[0]["running"]:
            time.sleep(1.0)
    except DibenchError:
        pass  # the server is gone or refuses to say: it runs nothing of ours any more either way
    finally:
        _SLOTS.release()


def slots_free(wait_s: float = 0.0) -> bool:
    """Whether every user query slot is free (waiting up to `wait_s` for the lingering ones)."""
    deadline = time.monotonic() + wait_s
    while True:
        taken = [_SLOTS.acquire(blocking=False) for _ in range(USER_QUERY_SLOTS)]
        for got in taken:
            if got:
                _SLOTS.release()
        if all(taken):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def _wait(job: Coroutine[Any, Any, list[dict[str, Any]]], timeout_s: float) -> list[dict[str, Any]]:
    """Run `job` to its end or to the deadline, on a loop of its own (in a helper thread when this
    thread already runs one, as an async web handler does)."""
    async def bounded() -> list[dict[str, Any]]:
        try:
            return await asyncio.wait_for(job, timeout_s + DEADLINE_GRACE_S)
        except TimeoutError:
            raise Deadline(f"the query ran longer than the {timeout_s:g} s limit (stopped by dibench)") from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="user-cypher") as pool:
        return pool.submit(asyncio.run, bounded()).result()


async def _run(settings: Settings, database: str, text: str, params: dict[str, Any], timeout_s: float,
               max_rows: int, tag: str) -> list[dict[str, Any]]:
    # A driver of its own: cancelling a query at the deadline closes its connection, which must
    # not be one of the process's pooled ones.
    driver = AsyncGraphDatabase.driver(settings.neo4j_uri, auth=(settings.neo4j_user, settings.neo4j_password),
                                       notifications_min_severity="OFF")
    try:
        async with driver.session(database=database, default_access_mode=READ_ACCESS) as session:
            # An explicit transaction: the managed ones retry transient errors, and a query that
            # ran out of memory would run out of it again, several times over.
            tx = await session.begin_transaction(timeout=timeout_s, metadata={"dibench_user_query": tag})
            summary = await (await tx.run("EXPLAIN " + text, params)).consume()
            check_plan(summary.query_type, summary.plan)
            rows: list[dict[str, Any]] = []
            async for record in await tx.run(text, params):
                if len(rows) >= max_rows:
                    raise CypherRefused(f"the query returned more than {max_rows} rows")
                rows.append(record.data())
            return rows
    finally:
        await driver.close()
