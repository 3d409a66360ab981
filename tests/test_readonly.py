"""The read-only path refuses or rolls back everything that could change the warehouse."""
from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from dibench.core.errors import QueryTimeout, ReadOnlyViolation, WarehouseError
from dibench.stores.warehouse import ResultCap, Warehouse, check_readonly, forbidden_function

SCHEMA = "ro_test"

REFUSED = [
    "INSERT INTO ro_test.t VALUES (99, 'x')",
    "UPDATE ro_test.t SET name = 'y'",
    "DELETE FROM ro_test.t",
    "DROP TABLE ro_test.t",
    "CREATE TABLE ro_test.u (a int)",
    "COPY ro_test.t TO STDOUT",
    "SELECT 1; DROP TABLE ro_test.t",
    "SELECT * FROM ro_test.t FOR UPDATE",
    "SELECT * FROM ro_test.t FOR SHARE",
    "SELECT setval('ro_test.seq', 100)",
    "SELECT nextval('ro_test.seq')",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SELECT * FROM dblink('dbname=x', 'DELETE FROM ro_test.t') AS r(a int)",
    "WITH gone AS (DELETE FROM ro_test.t RETURNING *) SELECT * FROM gone",
    "SELECT * INTO ro_test.copy FROM ro_test.t",
    "TRUNCATE ro_test.t",
    "VACUUM ro_test.t",
    "SET statement_timeout = 0",
    "GRANT ALL ON ro_test.t TO PUBLIC",
]


@pytest.fixture(scope="module")
def scratch(warehouse: Warehouse):
    with warehouse.admin().begin() as c:
        c.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        c.execute(text(f"CREATE SCHEMA {SCHEMA}"))
        c.execute(text(f"CREATE TABLE {SCHEMA}.t (id int PRIMARY KEY, name text)"))
        c.execute(text(f"INSERT INTO {SCHEMA}.t SELECT g, 'n' || g FROM generate_series(1, 50) g"))
        c.execute(text(f"CREATE SEQUENCE {SCHEMA}.seq"))
        c.execute(text(f"CREATE FUNCTION {SCHEMA}.sneaky() RETURNS int LANGUAGE sql AS "
                       f"'INSERT INTO {SCHEMA}.t VALUES (1000, ''x'') RETURNING 1'"))
    yield
    with warehouse.admin().begin() as c:
        c.execute(text(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))


def _checksum(warehouse: Warehouse) -> tuple[str, int]:
    with warehouse.admin().connect() as c:
        digest = c.execute(text(f"SELECT md5(string_agg(id || ':' || name, ',' ORDER BY id)) FROM {SCHEMA}.t")).scalar()
        seq = c.execute(text(f"SELECT last_value FROM {SCHEMA}.seq")).scalar()
    return str(digest), int(seq)


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_and_unchanged(warehouse: Warehouse, scratch: None, sql: str) -> None:
    before = _checksum(warehouse)
    with pytest.raises(ReadOnlyViolation):
        warehouse.execute_readonly(sql)
    assert _checksum(warehouse) == before


def test_side_effecting_function_is_rolled_back(warehouse: Warehouse, scratch: None) -> None:
    before = _checksum(warehouse)
    with pytest.raises((ReadOnlyViolation, WarehouseError)):
        warehouse.execute_readonly(f"SELECT {SCHEMA}.sneaky()")
    assert _checksum(warehouse) == before


def test_timeout(warehouse: Warehouse) -> None:
    with pytest.raises(QueryTimeout):
        warehouse.execute_readonly("SELECT pg_sleep(5)", timeout_s=0.3)


def test_select_returns_columns_rows_and_time(warehouse: Warehouse, scratch: None) -> None:
    res = warehouse.execute_readonly(f"SELECT COUNT(*) AS n FROM {SCHEMA}.t WHERE id <= :k", {"k": 10})
    assert res.columns == ["n"]
    assert res.rows == [(10,)]
    assert res.elapsed_s >= 0


BLOCKLIST = [
    "SELECT * FROM ts_stat('SELECT to_tsvector(name) FROM ro_test.t')",
    "SELECT ts_rewrite('a'::tsquery, 'SELECT 1')",
    "SELECT query_to_xml('SELECT 1', true, true, '')",
    "SELECT cursor_to_xml('c', 1, true, true, '')",
    "SELECT table_to_xml('ro_test.t'::regclass, true, true, '')",
    "SELECT * FROM pg_ls_logdir()",
    "SELECT * FROM pg_ls_waldir()",
    "SELECT current_setting('data_directory')",
    "SELECT lo_creat(-1)",
    "SELECT lo_get(1)",
    "SELECT pg_try_advisory_lock(1)",
    "SELECT pg_advisory_unlock_all()",
    "SELECT pg_cancel_backend(1)",
    "SELECT dblink_connect('x')",
    "SELECT passwd FROM pg_shadow",
    "SELECT rolpassword FROM pg_catalog.pg_authid",
    "SELECT * FROM pg_user_mappings",
    "SELECT * FROM pg_hba_file_rules",
    "SELECT * FROM pg_file_settings",
    "SELECT pg_catalog.pg_read_file('/etc/passwd')",
]


@pytest.mark.parametrize("sql", BLOCKLIST)
def test_blocklist_refuses_with_one_line(sql: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_readonly(sql)
    assert "\n" not in str(info.value)
    assert "refused" in str(info.value)


def test_read_only_transaction_is_real(warehouse: Warehouse, scratch: None) -> None:
    """The transaction is READ ONLY even on the admin path (no schema): a write hidden in a
    function fails with PostgreSQL's read-only error, not only by the rollback."""
    with pytest.raises(ReadOnlyViolation, match="write in read-only transaction"):
        warehouse.execute_readonly(f"SELECT {SCHEMA}.sneaky()")


def test_sql_error_is_reduced_to_sqlstate_and_class(warehouse: Warehouse, scratch: None) -> None:
    with pytest.raises(WarehouseError) as info:
        warehouse.execute_readonly(f"SELECT CAST(name AS int) FROM {SCHEMA}.t")
    assert str(info.value) == "SQL failed: SQLSTATE 22P02 (invalid text representation)"


# ------------------------------------------------------------------------------ activity and statistics
# The class as the server names it: every session's activity, locks, prepared statements, cursors,
# snapshots and transaction ids, WAL and replication state, memory, and the statistics counters.
ACTIVITY_CLASS = (r"^(pg_stat|pg_lock|pg_prepared|pg_cursor|pg_backend|pg_control|txid_)|activity|snapshot|blocking"
                  r"|memory_context|shmem|replication|multixact|logfile|_xact|xact_|wal")
CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")


def _catalog(warehouse: Warehouse, sql: str) -> list[tuple[str, ...]]:
    with warehouse.admin().connect() as c:
        return [tuple(r) for r in c.execute(text(sql), {"cls": ACTIVITY_CLASS})]


def test_every_activity_and_statistics_function_of_the_server_is_refused(warehouse: Warehouse) -> None:
    names = [n for (n,) in _catalog(warehouse, "SELECT DISTINCT proname FROM pg_proc WHERE proname ~ :cls")]
    assert len(names) > 150  # the server's own list, not ours
    assert [n for n in names if not forbidden_function(n, agent=True)] == []
    for name in ("pg_stat_get_activity", "pg_stat_get_backend_activity", "pg_stat_statements", "pg_lock_status",
                 "pg_prepared_statement", "pg_blocking_pids"):
        with pytest.raises(ReadOnlyViolation, match=f"call to {name}"):
            check_readonly(f"SELECT * FROM {name}(NULL)", agent=True)


def test_every_view_that_shows_activity_or_statistics_is_refused(warehouse: Warehouse) -> None:
    """A pg_catalog view is in the class when its name is, or when its definition calls a
    function the read-only path refuses (pg_locks calls pg_lock_status, and so on)."""
    views = _catalog(warehouse, "SELECT viewname, viewname ~ :cls, pg_get_viewdef(('pg_catalog.' || viewname)::regclass)"
                                " FROM pg_views WHERE schemaname = 'pg_catalog'")
    in_class = sorted(v for v, named, body in views
                      if named or any(forbidden_function(f, agent=True) for f in CALL.findall(body.lower())))
    assert {"pg_stat_activity", "pg_locks", "pg_prepared_statements", "pg_prepared_xacts", "pg_cursors",
            "pg_stats", "pg_backend_memory_contexts", "pg_replication_slots"} <= set(in_class)
    allowed = []
    for view in in_class:
        try:
            check_readonly(f"SELECT * FROM pg_catalog.{view}", agent=True)
            allowed.append(view)
        except ReadOnlyViolation:
            pass
    assert allowed == []


def test_the_class_leaves_the_domains_own_sql_and_our_planner_alone() -> None:
    for sql in ("SELECT status, count(*) FROM ro_test.t GROUP BY status",
                "SELECT date_trunc('month', created_at) AS m, avg(total) FROM orders GROUP BY 1",
                "SELECT activity_id, stats FROM user_activity"):
        check_readonly(sql, agent=True)
    check_readonly("SELECT n_distinct FROM pg_catalog.pg_stats")  # our planner's own statistics query


def test_a_capped_result_is_read_through_a_cursor_and_says_where_it_stopped(warehouse: Warehouse) -> None:
    rows = warehouse.execute_readonly("SELECT generate_series(1, 100000) AS n", cap=ResultCap(rows=500))
    assert (len(rows.rows), rows.cut) == (500, "stopped after 500 rows (the result has more)")
    wide = warehouse.execute_readonly("SELECT repeat('x', 1000000) AS blob FROM generate_series(1, 1000)",
                                      cap=ResultCap(bytes=4 << 20))
    assert len(wide.rows) == 4
    assert wide.cut == f"stopped after 4 rows: the result exceeds {4 << 20} bytes"
    whole = warehouse.execute_readonly("SELECT generate_series(1, 10) AS n", cap=ResultCap())
    assert (len(whole.rows), whole.cut) == (10, None)


def test_the_sql_tool_caps_a_huge_result_without_materialising_it(warehouse: Warehouse) -> None:
    """320 MB asked for: the tool reads at most its cap, in bounded memory, and says so."""
    import json
    import tracemalloc

    from dibench.evaluation.agents.tools import Toolbox
    from dibench.evaluation.kb import KnowledgeBase

    tools = Toolbox(warehouse, KnowledgeBase([]))
    tracemalloc.start()
    reply = json.loads(tools.sql_tool({"sql": "SELECT repeat('x', 32000) AS blob FROM generate_series(1, 10000)"}))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert reply["truncated"] is True
    assert reply["note"].startswith("the tool read part of the result only: stopped after 262 rows")
    assert peak < 64 << 20
