"""The names in a SQL text as PostgreSQL's own scanner reads them (src/backend/parser/scan.l).

sqlglot and PostgreSQL can read one text differently: `U&"txid\\005fcurrent"()` is, to sqlglot, a
column `U` AND-ed with a function named `txid\\005fcurrent`; to PostgreSQL, a call of
`txid_current`. A check of names must therefore see the names PostgreSQL sees: this scanner
skips comments (`/* */` nest), string constants (standard, `E''` with backslash escapes, `B''`,
`X''`, `N''`, `U&''`) and dollar quotes (`$tag$...$tag$`) as PostgreSQL does, folds unquoted
identifiers to lower case (ASCII only, as for a UTF8 database) and keeps quoted ones as written.
It refuses Unicode-escaped identifiers (`U&"..."`) and `UESCAPE` outright rather than decode
them: no metric or agent needs them, and a second decoder is a second chance to differ.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from dibench.core.errors import RewriteError

_SPACE = " \t\n\r\f\v"
_IDENT_START = re.compile(r"[A-Za-z_\u0080-\U0010ffff]")
_IDENT = re.compile(r"[A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9$\u0080-\U0010ffff]*")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\U0010ffff][A-Za-z_0-9\u0080-\U0010ffff]*)?\$")
_NUMBER = re.compile(r"(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?|0[xXoObB][0-9A-Fa-f_]+")
_PARAM = re.compile(r"\$\d+")


class SqlScanError(RewriteError):
    """A text PostgreSQL would read differently from our parser, or not at all."""


@dataclass(frozen=True)
class Name:
    """An identifier as PostgreSQL resolves it, and whether a `(` follows it (a call)."""

    text: str
    quoted: bool
    called: bool


def _skip_block_comment(sql: str, i: int) -> int:
    depth, i = 1, i + 2
    while i < len(sql):
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise SqlScanError("unterminated /* comment")


def _skip_quoted(sql: str, i: int, quote: str, backslash: bool) -> int:
    """Index after the constant or identifier opened by `quote` at i (doubled quotes inside)."""
    i += 1
    while i < len(sql):
        ch = sql[i]
        if backslash and ch == "\\":
            i += 2
        elif ch == quote:
            if sql.startswith(quote * 2, i):
                i += 2
            else:
                return i + 1
        else:
            i += 1
    raise SqlScanError("unterminated quoted identifier" if quote == '"' else "unterminated string constant")


def _skip_space(sql: str, i: int) -> int:
    while i < len(sql):
        if sql[i] in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            while i < len(sql) and sql[i] not in "\n\r":
                i += 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        else:
            return i
    return i


def names(sql: str) -> Iterator[Name]:
    """Every identifier of `sql` outside comments and constants, in order; raises SqlScanError
    for Unicode-escaped identifiers, UESCAPE and unterminated constants or comments."""
    i = 0
    while True:
        i = _skip_space(sql, i)
        if i >= len(sql):
            return
        ch, rest = sql[i], sql[i:i + 3]
        if rest[:3].lower() == 'u&"':
            raise SqlScanError('Unicode-escaped identifiers (U&"...") are not accepted: write the name plainly')
        if rest[:3].lower() == "u&'":
            i = _skip_quoted(sql, i + 2, "'", False)
        elif ch in "eE" and sql.startswith("'", i + 1):
            i = _skip_quoted(sql, i + 1, "'", True)
        elif ch in "bBxXnN" and sql.startswith("'", i + 1):
            i = _skip_quoted(sql, i + 1, "'", False)
        elif ch == "'":
            i = _skip_quoted(sql, i, "'", False)
        elif ch == '"':
            end = _skip_quoted(sql, i, '"', False)
            yield Name(sql[i + 1:end - 1].replace('""', '"'), True, _calls(sql, end))
            i = end
        elif ch == "$" and (m := _DOLLAR_TAG.match(sql, i)):
            close = sql.find(m.group(), m.end())
            if close < 0:
                raise SqlScanError(f"unterminated dollar-quoted string {m.group()[:40]}")
            i = close + len(m.group())
        elif _IDENT_START.match(ch):
            m = _IDENT.match(sql, i)
            assert m is not None
            word = m.group()
            if word.lower() == "uescape":
                raise SqlScanError("UESCAPE is not accepted: write the name or string plainly")
            yield Name(_fold(word), False, _calls(sql, m.end()))
            i = m.end()
        elif m := (_PARAM.match(sql, i) or _NUMBER.match(sql, i)):
            i = m.end()
        else:
            i += 1


def _calls(sql: str, i: int) -> bool:
    j = _skip_space(sql, i)
    return j < len(sql) and sql[j] == "("


def _fold(word: str) -> str:
    """PostgreSQL's downcase_identifier for a multi-byte encoding: ASCII letters only."""
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in word)
