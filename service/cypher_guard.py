"""Refuse user Cypher that could write, before it runs.

A tokenizer skips string literals, comments, backticked names, parameters, property keys and
labels, so `WHERE t.question CONTAINS 'create'` passes and `MATCH (n) SET n.x = 1` does not.
The READ access-mode session the export runs in is the second fence: this check exists to
give a clear error first and to refuse what a read session would still allow (procedures).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from service.errors import DibenchError

WRITE_CLAUSES = frozenset({
    "create", "merge", "set", "delete", "detach", "remove", "foreach", "drop", "alter", "grant", "deny",
    "revoke", "terminate", "start", "stop", "use", "rename", "enable", "load",
})
# Read-only catalogue procedures a task query may reasonably call; everything else is refused.
ALLOWED_PROCEDURES = frozenset({"db.labels", "db.relationshiptypes", "db.propertykeys"})

_TOKEN = re.compile(
    r"(?P<skip>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|//[^\n]*|/\*.*?\*/)"
    r"|(?P<param>\$`?[A-Za-z_][A-Za-z0-9_]*`?|\$[0-9]+)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>[{}()\[\].:,;=<>+\-*/%^|!]|\S)",
    re.DOTALL,
)


class CypherWriteRefused(DibenchError):
    """User Cypher with a write clause or a procedure call outside the allow-list."""

    hint = "an export query may only read: MATCH ... RETURN t.key AS key (or RETURN t)"

    def __init__(self, what: str, line: int, column: int, query: str) -> None:
        self.what = what
        self.query = query
        super().__init__(f"refused Cypher: {what} at line {line}, column {column}; "
                         f"export queries run read-only and are checked before they run")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    pos: int


def tokens(query: str) -> list[Token]:
    out = []
    for m in _TOKEN.finditer(query):
        kind = m.lastgroup or "punct"
        if kind != "skip":
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


def _procedure(toks: list[Token], i: int) -> tuple[str, int]:
    """The dotted name after CALL at i (empty when CALL opens a subquery)."""
    parts, j = [], i + 1
    while j < len(toks) and toks[j].kind == "word":
        parts.append(toks[j].text)
        if j + 1 < len(toks) and toks[j + 1].text == ".":
            j += 2
            continue
        break
    return ".".join(parts).lower(), j


def check_read_only(query: str) -> None:
    """Raise CypherWriteRefused at the first write clause, `IN TRANSACTIONS`, or disallowed procedure."""
    toks = tokens(query)
    for i, t in enumerate(toks):
        if t.kind != "word" or _is_name(toks, i):
            continue
        word = t.text.lower()
        if word in WRITE_CLAUSES:
            label = "LOAD CSV" if word == "load" else "DETACH DELETE" if word == "detach" else word.upper()
            raise CypherWriteRefused(f"write clause {label}", *_where(query, t.pos), query)
        if word == "in" and i + 1 < len(toks) and toks[i + 1].text.lower() == "transactions":
            raise CypherWriteRefused("CALL ... IN TRANSACTIONS", *_where(query, t.pos), query)
        if word.startswith("apoc") and i + 1 < len(toks) and toks[i + 1].text == ".":
            raise CypherWriteRefused("APOC procedure or function", *_where(query, t.pos), query)
        if word == "call":
            name, _ = _procedure(toks, i)
            if name and name not in ALLOWED_PROCEDURES:
                raise CypherWriteRefused(f"procedure call {name}", *_where(query, t.pos), query)
