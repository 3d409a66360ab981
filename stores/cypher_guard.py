"""Run user Cypher only when Neo4j itself says it reads, and say nothing about the data when it fails.

A query is compiled with EXPLAIN in the READ transaction that then runs it, and refused unless
its query type is `r` and every plan operator is in READ_OPERATORS; a tokenizer first gives clear
messages for the obvious cases and, for the public audience, refuses private task properties.
Errors carry only Neo4j's status code (and line and column of a syntax error), never its message.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from neo4j import READ_ACCESS, ManagedTransaction, unit_of_work
from neo4j.exceptions import Neo4jError, ServiceUnavailable

from dibench.core.errors import DibenchError, ServiceError

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
# Task properties only the private audience may read, filter on or return (gold, SQL, judge...).
PRIVATE_PROPERTIES = frozenset({
    "gold_answer", "base_answer", "gold_sql", "base_sql", "gold_params", "base_params", "judge", "facts",
    "rejections", "rule_versions", "contract", "skeleton_key", "params",
})
_PRIVATE_NAME = re.compile(r"^(gold|base)_|^(" + "|".join(sorted(PRIVATE_PROPERTIES)) + r")$", re.IGNORECASE)
# Ways to reach a property without naming it: whole-map projections and dynamic access.
_DYNAMIC = frozenset({"properties", "keys"})
# Words after which `[` opens a list literal or comprehension, not a subscript.
_KEYWORDS_BEFORE_LIST = frozenset({
    "in", "return", "with", "unwind", "and", "or", "xor", "not", "where", "then", "else", "when", "case",
    "contains", "starts", "ends", "distinct", "by", "as", "is", "yield", "skip", "limit",
})
# In plan details integer literals show as `$autoint_N` and cached property reads as `cache[t.x]`;
# any other subscript, `properties(...)`, `keys(...)` or `.*` could reach a private property.
_PLAN_INDEX = r"(?:\$autoint_\d+|-?\d+)?(?:\.\.(?:\$autoint_\d+|-?\d+)?)?\]"
_DYNAMIC_IN_PLAN = re.compile(r"\b(?:properties|keys)\(|\.\*|\b(?!cache\[)\w+\[(?!" + _PLAN_INDEX + r")|[)\]]\[(?!"
                              + _PLAN_INDEX + r")")
USER_QUERY_TIMEOUT_S = 10.0
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


def check_public(query: str) -> None:
    """Refuse, for the public audience, every way this text names or reaches a private property:
    `t.gold_answer`, `{gold_answer: ...}` pattern predicates, `t{.*}`, `properties(t)`, `t[k]`."""
    toks = tokens(query)
    for i, t in enumerate(toks):
        prev = toks[i - 1].text if i > 0 else ""
        nxt = toks[i + 1].text if i + 1 < len(toks) else ""
        if t.kind == "word" and _PRIVATE_NAME.search(t.text) and (prev == "." or nxt == ":"):
            raise CypherRefused("private task properties are only for the private audience", *_where(query, t.pos))
        if t.kind == "word" and t.text.lower() in _DYNAMIC and nxt == "(" and prev != ".":
            raise CypherRefused(f"{t.text.lower()}() is only for the private audience", *_where(query, t.pos))
        if t.text == "*" and prev == ".":
            raise CypherRefused("map projections with .* are only for the private audience", *_where(query, t.pos))
        if t.text == "[" and _is_subscript(toks, i) and not _integer_subscript(query, toks, i):
            raise CypherRefused("dynamic property or map access is only for the private audience",
                                *_where(query, t.pos))


def _is_subscript(toks: list[Token], i: int) -> bool:
    """`[` indexing a value (`t[...]`, `f(x)[...]`, `$p[...]`), not a list after a keyword (`IN [...]`)."""
    if i == 0:
        return False
    prev = toks[i - 1]
    if prev.kind == "word":
        return prev.text.lower() not in _KEYWORDS_BEFORE_LIST
    return prev.kind == "param" or prev.text in (")", "]", "}")


def _integer_subscript(query: str, toks: list[Token], i: int) -> bool:
    """`xs[0]`, `xs[-1]`, `xs[1..3]`: list indexing with integer literals only (checked on the
    raw text, since the tokenizer drops string literals such as `t['gold_answer']`)."""
    close = next((t for t in toks[i + 1:] if t.text == "]"), None)
    return close is not None and bool(_INTEGER_INDEX.fullmatch(query[toks[i].pos + 1:close.pos]))


_INTEGER_INDEX = re.compile(r"\s*-?\d+\s*|\s*-?\d*\s*\.\.\s*-?\d*\s*")


def check_text(query: str, public: bool) -> None:
    """Both text passes: cheap, for a clear message before anything reaches the server."""
    check_read_only(query)
    if public:
        check_public(query)


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


def check_plan(query_type: str | None, plan: dict[str, Any] | None, public: bool) -> None:
    """Refuse unless Neo4j compiled a read query made of read operators only (and, for the public
    audience, no operator's details mention a private property)."""
    if query_type != "r":
        raise CypherRefused(f"Neo4j classifies this query as {query_type!r}, not read-only ('r')")
    if not plan:
        raise CypherRefused("Neo4j returned no plan for this query")
    for op in operators(plan):
        name = _operator_name(op)
        if name not in READ_OPERATORS and not _READ_OPERATOR_FAMILY.match(name):
            raise CypherRefused(f"plan operator {name[:60]} is not allowed in a read-only query")
        details = str((op.get("args") or op.get("arguments") or {}).get("Details", ""))
        if public and (any(_PRIVATE_NAME.search(w) for w in re.findall(r"\w+", details))
                       or _DYNAMIC_IN_PLAN.search(details)):
            raise CypherRefused("private task properties are only for the private audience")


# ------------------------------------------------------------------------------ running
_POSITION = re.compile(r"line (\d+), column (\d+)")


def sanitized(exc: Neo4jError, timeout_s: float = USER_QUERY_TIMEOUT_S) -> CypherRefused:
    """A one-line error with the status code; the server's text is dropped (it can hold data),
    except line and column of a syntax error, which are numbers about the caller's own text."""
    code = str(exc.code or "Neo.Unknown")[:120]
    if code.endswith("TransactionTimedOutClientConfiguration") or "TransactionTimedOut" in code:
        return CypherRefused(f"the query ran longer than the {timeout_s:g} s limit ({code})")
    pos = _POSITION.search(str(exc.message or "")) if code.endswith("SyntaxError") else None
    if pos:
        return CypherRefused(f"Neo4j error {code}", int(pos.group(1)), int(pos.group(2)))
    return CypherRefused(f"Neo4j error {code} (the server's message is withheld: it can contain data)")


def run_user_query(driver: Any, database: str, text: str, params: dict[str, Any], *, public: bool,
                   timeout_s: float = USER_QUERY_TIMEOUT_S, max_rows: int = MAX_ROWS) -> list[dict[str, Any]]:
    """Rows of user Cypher, run only after Neo4j's EXPLAIN of the same text and parameters shows a
    read plan; one READ transaction with a server-side timeout, at most `max_rows` rows."""
    check_text(text, public)

    @unit_of_work(timeout=timeout_s)
    def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
        summary = tx.run("EXPLAIN " + text, params).consume()
        check_plan(summary.query_type, summary.plan, public)
        rows: list[dict[str, Any]] = []
        for record in tx.run(text, params):
            if len(rows) >= max_rows:
                raise CypherRefused(f"the query returned more than {max_rows} rows")
            rows.append(record.data())
        return rows

    try:
        with driver.session(database=database, default_access_mode=READ_ACCESS) as session:
            return list(session.execute_read(work))
    except ServiceUnavailable as exc:
        raise ServiceError("Neo4j is not reachable", hint="run `dibench services up`") from exc
    except Neo4jError as exc:
        raise sanitized(exc, timeout_s) from None
