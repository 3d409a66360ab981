"""The names PostgreSQL reads in a SQL text (sqlops/pglex.py), pure: comments, constants, dollar
quotes and identifier folding as the server's scanner treats them, and the refusals."""
from __future__ import annotations

import pytest

from dibench.core.errors import ReadOnlyViolation
from dibench.sqlops.pglex import Name, SqlScanError, names
from dibench.stores.warehouse import check_readonly


@pytest.mark.parametrize("sql,want", [
    ("SELECT Count(*) FROM Mini.Orders o", [Name("select", False, False), Name("count", False, True),
                                            Name("from", False, False), Name("mini", False, False),
                                            Name("orders", False, False), Name("o", False, False)]),
    ('SELECT "MixedCase" FROM "a""b"', [Name("select", False, False), Name("MixedCase", True, False),
                                        Name("from", False, False), Name('a"b', True, False)]),
    ("SELECT $$ f() $$, $q$ $$ g() $$ $q$, 'h()', E'\\' i()', x$y", ["select", "x$y"]),
    ("SELECT 1 /* a /* nested */ g() */ -- h()\n", ["select"]),
    ("SELECT 1 -- h()\r, g()", ["select", "g"]),
    ("SELECT 'a\\', g(), '\\'", ["select", "g"]),
    ("SELECT U&'\\0041' AS a", ["select", "as", "a"]),
    ("SELECT f ( 1 ), $1", [Name("select", False, False), Name("f", False, True)]),
])
def test_names_as_postgresql_reads_them(sql: str, want: list[Name | str]) -> None:
    got = list(names(sql))
    assert [n if isinstance(w, Name) else n.text for n, w in zip(got, want)] == want and len(got) == len(want)


@pytest.mark.parametrize("sql", ['SELECT U&"a"', 'SELECT u&"txid\\005fcurrent"()', "SELECT U&'x!0041' UESCAPE '!'",
                                 "SELECT 'open", 'SELECT "open', "SELECT $a$ open", "SELECT /* open"])
def test_what_the_scanner_refuses(sql: str) -> None:
    with pytest.raises(SqlScanError):
        list(names(sql))


@pytest.mark.parametrize("sql,why", [
    ('SELECT U&"txid\\005fcurrent"()', "Unicode-escaped identifiers"),
    ("SELECT U&\"current\\005fsetting\"('server_version')", "Unicode-escaped identifiers"),
    ('SELECT U&"pg\\005fsleep\\005funtil"(now())', "Unicode-escaped identifiers"),
    ("SELECT 1 -- x\r, txid_current()", "call to txid_current()"),
    ("SELECT pg_catalog . txid_current ( )", "call to txid_current()"),
])
def test_the_read_only_check_refuses_what_the_server_would_call(sql: str, why: str) -> None:
    with pytest.raises(ReadOnlyViolation) as caught:
        check_readonly(sql)
    assert why in caught.value.kind


@pytest.mark.parametrize("sql", ["SELECT $$txid_current()$$ AS a", "SELECT 'current_setting(x)' AS a",
                                 "SELECT 1 /* /* */ , txid_current() */", "SELECT E'\\' , txid_current(), ' AS a"])
def test_names_inside_constants_and_comments_are_no_calls(sql: str) -> None:
    check_readonly(sql)
