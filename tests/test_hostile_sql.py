"""A corpus of hostile SQL and hostile rule/metric expressions, replayed against the real warehouse.

Every known attack on the SQL side (and more) must end one of two ways:
- refused: a one-line error before anything runs (the checker, the size limits, validation);
- harmless: it runs as the domain's read-only role and fails (permission denied, timeout) or
  returns nothing secret.
Either way the fingerprint of the warehouse (every table, roles, large objects, locks) is the
same before and after, and no error message carries a secret. Every refused statement is also
replayed as the role WITHOUT the checker, to show the role is a wall of its own.

`CORPUS`, `PACK_CORPUS`, `REFUSED` and `HARMLESS` are the corpus and its counts (the lead reports them).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from dibench.core.config import get_settings
from dibench.core.errors import DibenchError, QueryTimeout, ReadOnlyViolation, RewriteError, WarehouseError
from dibench.core.models import WhereEffect
from dibench.core.pack import load_pack
from dibench.ingest.validate import validate_pack
from dibench.ingest.verify import verify_effect
from dibench.sqlops.dialect import parse
from dibench.sqlops.ops import Bound, apply_effect
from dibench.stores.graph import Graph
from dibench.stores.pack_data import replacing_schema
from dibench.stores.pgroles import readonly_role
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, edit_front, edit_metrics, ensure_mini_loaded

A, B = "hostile_a", "hostile_b"
SECRET = "gold-SECRET-4242"
NESTED_3000 = "(" * 3000 + "1" + ")" * 3000
OR_CHAIN = " OR ".join(f"t.id = {i}" for i in range(40_000))  # 629 KB (the issue had 450 KB)

Outcome = Literal["refused", "harmless"]


@dataclass(frozen=True)
class Attack:
    id: str
    sql: str
    expect: Outcome
    timeout_s: float = 2.0


CORPUS: list[Attack] = [
    # names PostgreSQL reads differently from sqlglot: Unicode escapes, where a comment or a
    # string constant ends (sqlops/pglex.py reads them as the server does)
    Attack("unicode-escaped-txid_current", 'SELECT U&"txid\\005fcurrent"()', "refused"),
    Attack("unicode-escaped-current_setting", "SELECT U&\"current\\005fsetting\"('server_version')", "refused"),
    Attack("unicode-escaped-pg_sleep_until", 'SELECT U&"pg\\005fsleep\\005funtil"(now())', "refused"),
    Attack("unicode-escape-with-uescape", "SELECT U&\"txid!005fcurrent\" UESCAPE '!' ()", "refused"),
    Attack("comment-ended-by-carriage-return", "SELECT 1 -- note\r, txid_current()", "refused"),
    Attack("backslash-in-a-standard-string", "SELECT 'a\\', txid_current(), '\\'", "refused"),
    Attack("quoted-function-name", 'SELECT "current_setting"(\'server_version\')', "refused"),
    # holes a blocklist once had
    Attack("ts_stat-runs-sql-in-a-string", f"SELECT * FROM ts_stat('SELECT to_tsvector(gold) FROM {B}.secret')", "refused"),
    Attack("ts_stat-pg_read_file-in-error",
           "SELECT * FROM ts_stat('SELECT pg_read_file(''/etc/passwd'')::tsvector')", "refused"),
    Attack("pg_read_file-cast-error", "SELECT CAST(pg_read_file('/etc/passwd') AS int)", "refused"),
    Attack("pg_cancel_backend", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity", "refused"),
    Attack("pg_terminate_backend", "SELECT pg_terminate_backend(pg_backend_pid())", "refused"),
    Attack("lo_import", "SELECT lo_import('/etc/passwd')", "refused"),
    Attack("lo_from_bytea", "SELECT lo_from_bytea(0, 'x'::bytea)", "refused"),
    Attack("loread", "SELECT loread(lo_open(1, 262144), 100)", "refused"),
    Attack("pg_shadow", "SELECT usename, passwd FROM pg_shadow", "refused"),
    Attack("pg_catalog.pg_shadow", "SELECT passwd FROM pg_catalog.pg_shadow", "refused"),
    Attack("pg_authid", "SELECT rolpassword FROM pg_authid", "refused"),
    Attack("pg_user_mappings", "SELECT umoptions FROM pg_user_mappings", "refused"),
    Attack("pg_hba_file_rules", "SELECT * FROM pg_hba_file_rules", "refused"),
    Attack("pg_file_settings", "SELECT * FROM pg_file_settings", "refused"),
    Attack("current_setting-data_directory", "SELECT current_setting('data_directory')", "refused"),
    Attack("pg_ls_logdir", "SELECT * FROM pg_ls_logdir()", "refused"),
    Attack("pg_ls_dir", "SELECT pg_ls_dir('.')", "refused"),
    Attack("pg_stat_file", "SELECT pg_stat_file('/etc/passwd')", "refused"),
    Attack("pg_try_advisory_lock", "SELECT pg_try_advisory_lock(42)", "refused"),
    Attack("pg_advisory_lock_shared", "SELECT pg_advisory_lock_shared(42)", "refused"),
    Attack("qualified-pg_read_file", "SELECT pg_catalog.pg_read_file('/etc/passwd')", "refused"),
    Attack("quoted-pg_read_file", "SELECT \"pg_read_file\"('/etc/passwd')", "refused"),
    # SQL text inside other functions
    Attack("query_to_xml", f"SELECT query_to_xml('SELECT * FROM {B}.secret', true, true, '')", "refused"),
    Attack("xpath-over-query_to_xml",
           f"SELECT xpath('//gold/text()', query_to_xml('SELECT gold FROM {B}.secret', true, true, ''))", "refused"),
    Attack("table_to_xml", f"SELECT table_to_xml('{B}.secret'::regclass, true, true, '')", "refused"),
    Attack("cursor_to_xml", "SELECT cursor_to_xml('c', 1, true, true, '')", "refused"),
    Attack("ts_rewrite-query-string",
           f"SELECT ts_rewrite('a'::tsquery, 'SELECT to_tsquery(gold), to_tsquery(''b'') FROM {B}.secret')", "refused"),
    Attack("dblink", "SELECT * FROM dblink('dbname=dibench', 'SELECT 1') AS r(a int)", "refused"),
    Attack("dblink_exec", "SELECT dblink_exec('dbname=dibench', 'DROP SCHEMA hostile_a CASCADE')", "refused"),
    # session and role changes
    Attack("set_config-role", "SELECT set_config('role', 'dibench', false)", "refused"),
    Attack("set_config-read-only-off", "SELECT set_config('default_transaction_read_only', 'off', false)", "refused"),
    Attack("set-role", "SET ROLE dibench", "refused"),
    Attack("reset-session-authorization", "RESET SESSION AUTHORIZATION", "refused"),
    Attack("set-statement_timeout", "SET statement_timeout = 0", "refused"),
    Attack("pg_notify", "SELECT pg_notify('c', 'x')", "refused"),
    Attack("pg_reload_conf", "SELECT pg_reload_conf()", "refused"),
    Attack("pg_stat_activity-queries", "SELECT query FROM pg_stat_activity", "refused"),
    Attack("pg_settings", "SELECT setting FROM pg_settings WHERE name = 'data_directory'", "refused"),
    # writes and programs
    Attack("copy-to-program", "COPY (SELECT 1) TO PROGRAM 'touch /tmp/dibench-pwned'", "refused"),
    Attack("copy-from-file", f"COPY {A}.t FROM '/etc/passwd'", "refused"),
    Attack("create-temp-table", "CREATE TEMP TABLE x AS SELECT 1", "refused"),
    Attack("do-block", "DO $$ BEGIN PERFORM 1; END $$", "refused"),
    Attack("explain-analyze-delete", f"EXPLAIN ANALYZE DELETE FROM {A}.t", "refused"),
    Attack("multi-statement", f"SELECT 1; DROP TABLE {A}.t", "refused"),
    Attack("cte-delete", f"WITH gone AS (DELETE FROM {A}.t RETURNING *) SELECT * FROM gone", "refused"),
    Attack("select-into", f"SELECT * INTO {A}.copy FROM {A}.t", "refused"),
    Attack("for-update", f"SELECT * FROM {A}.t FOR UPDATE", "refused"),
    Attack("nextval", f"SELECT nextval('{A}.seq')", "refused"),
    Attack("txid_current", "SELECT txid_current()", "refused"),
    Attack("prepare", "PREPARE p AS SELECT 1", "refused"),
    Attack("listen", "LISTEN c", "refused"),
    # hostile sizes
    Attack("3000-nested-parentheses", f"SELECT {NESTED_3000}", "refused"),
    Attack("450KB-or-chain", f"SELECT count(*) FROM {A}.t t WHERE {OR_CHAIN}", "refused"),
    # what the role itself stops (the checker lets these through on purpose)
    Attack("read-other-domain", f"SELECT gold FROM {B}.secret", "harmless"),
    Attack("read-other-domain-in-subquery", f"SELECT (SELECT max(gold) FROM {B}.secret) FROM {A}.t", "harmless"),
    Attack("unqualified-other-table", "SELECT gold FROM secret", "harmless"),
    Attack("value-in-cast-error", f"SELECT CAST(name AS int) FROM {A}.t", "harmless"),
    Attack("write-through-function", f"SELECT {A}.sneaky()", "harmless"),
    Attack("pg_sleep-timeout", "SELECT pg_sleep(5)", "harmless", timeout_s=0.3),
    Attack("generate_series-bomb", "SELECT count(*) FROM generate_series(1, 10000000000)", "harmless", timeout_s=0.5),
    Attack("repeat-memory-bomb", "SELECT length(string_agg(repeat('x', 1000000), '')) FROM generate_series(1, 100000)",
           "harmless", timeout_s=0.5),
    Attack("cross-join-bomb", f"SELECT count(*) FROM {A}.t a, {A}.t b, {A}.t c, {A}.t d, {A}.t e, {A}.t f",
           "harmless", timeout_s=0.5),
    Attack("temp-schema-probe", "SELECT * FROM pg_temp.nothing", "harmless"),
]


@dataclass(frozen=True)
class PackAttack:
    id: str
    field: str  # the field the one-line PackError names
    mutate: Any  # (pack root) -> None


def _effect_field(field: str, value: str) -> Any:
    """Set `field` of the first effect of rules/outliers.md (an exclude on MINI-REV-001)."""
    return lambda root: edit_front(root / "rules" / "outliers.md", lambda f: f["effects"][0].update({field: value}))


def _metric_sql(old: str, new: str) -> Any:
    def change(ms: list[dict[str, Any]]) -> None:
        ms[0]["sql"] = ms[0]["sql"].replace(old, new)
    return lambda root: edit_metrics(root, change)


PACK_CORPUS: list[PackAttack] = [
    PackAttack("rule-reads-other-domain", "effects.0.predicate",
               _effect_field("predicate", f"o.amount > (SELECT count(*) FROM {B}.secret)")),
    PackAttack("rule-calls-other-schema-function", "effects.0.predicate",
               _effect_field("predicate", f"{B}.leak(o.amount) > 0")),
    PackAttack("rule-3000-nested-parentheses", "effects.0.predicate", _effect_field("predicate", NESTED_3000)),
    PackAttack("rule-450KB-or-chain", "effects.0.predicate",
               _effect_field("predicate", OR_CHAIN.replace("t.id", "o.amount"))),
    PackAttack("metric-reads-other-schema", "metrics.0(MINI-REV-001).sql",
               _metric_sql("FROM mini.orders o", f"FROM mini.orders o CROSS JOIN {B}.secret s")),
    PackAttack("metric-three-part-name", "metrics.0(MINI-REV-001).sql",
               _metric_sql("FROM mini.orders o", "FROM otherdb.mini.orders o")),
    PackAttack("metric-calls-other-schema-function", "metrics.0(MINI-REV-001).sql",
               _metric_sql("SUM(o.amount)", f"SUM({B}.leak(o.amount))")),
    PackAttack("metric-3000-nested-parentheses", "metrics.0(MINI-REV-001).sql",
               _metric_sql("SUM(o.amount)", f"SUM(o.amount) + {NESTED_3000}")),
]

REFUSED = sum(a.expect == "refused" for a in CORPUS) + len(PACK_CORPUS)
HARMLESS = sum(a.expect == "harmless" for a in CORPUS)


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def domains(warehouse: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two domain schemas loaded through the loaders' path (which grants the read-only roles)."""
    ddl = tmp_path_factory.mktemp("hostile") / "schema.sql"
    ddl.write_text(
        "CREATE TABLE t (id int PRIMARY KEY, name text);"
        "INSERT INTO t SELECT g, 'n' || g FROM generate_series(1, 50) g;"
        "CREATE SEQUENCE seq;"
        "CREATE FUNCTION sneaky() RETURNS int LANGUAGE sql AS 'INSERT INTO t VALUES (1000, ''x'') RETURNING 1';")
    for schema in (A, B):
        with replacing_schema(warehouse.admin(), schema, ddl) as cur:
            if schema == B:
                cur.execute("CREATE TABLE secret (gold text)")
                cur.execute("INSERT INTO secret VALUES (%s)", (SECRET,))
    yield
    with warehouse.admin().begin() as c:
        for schema in (A, B):
            c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


def fingerprint(wh: Warehouse) -> dict[str, Any]:
    """Every table of the warehouse (rows of the small ones, size of all), sequences, roles and
    their settings, large objects, advisory locks and databases."""
    with wh.admin().connect() as c:
        tables = c.execute(text(
            # An unpopulated materialized view (Pagila's) cannot be read: its size stands for it.
            "SELECT n.nspname, c.relname, CASE WHEN c.relkind = 'm' AND NOT c.relispopulated THEN 'M' "
            "ELSE c.relkind::text END, pg_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p', 'm', 'S') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2")).all()
        rows = {}
        for schema, table, kind, size in tables:
            if kind not in ("S", "M") and size < 1_000_000:
                rows[f"{schema}.{table}"] = c.execute(text(
                    f'SELECT md5(coalesce(string_agg(x::text, \',\' ORDER BY x::text), \'\')) FROM "{schema}"."{table}" x'
                )).scalar()
            elif kind == "S":
                rows[f"{schema}.{table}"] = c.execute(text(f'SELECT last_value FROM "{schema}"."{table}"')).scalar()
        return {
            "tables": [tuple(r) for r in tables], "rows": rows,
            "roles": c.execute(text("SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolcanlogin, rolbypassrls "
                                    "FROM pg_roles ORDER BY 1")).all(),
            "role_settings": c.execute(text("SELECT setrole::regrole::text, setconfig FROM pg_db_role_setting "
                                            "ORDER BY 1")).all(),
            "large_objects": c.execute(text("SELECT count(*) FROM pg_largeobject_metadata")).scalar(),
            "advisory_locks": c.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar(),
            "databases": c.execute(text("SELECT datname FROM pg_database ORDER BY 1")).scalars().all(),
        }


def graph_counts(graph: Graph) -> tuple[dict[str, int], dict[str, int]]:
    return ({r["label"]: r["count"] for r in graph.read("graph_stats_nodes", domain=None)},
            {r["type"]: r["count"] for r in graph.read("graph_stats_edges", domain=None)})


def _secrets(wh: Warehouse) -> list[str]:
    with wh.admin().connect() as c:
        data_dir = c.execute(text("SHOW data_directory")).scalar()
    return [SECRET, "root:x:0:0", str(data_dir), "SCRAM-SHA-256$"]


def assert_clean_message(message: str, secrets: list[str]) -> None:
    assert "\n" not in message.strip(), f"not one line: {message[:300]!r}"
    assert len(message) < 600, f"unbounded message ({len(message)} chars)"
    for s in secrets:
        assert s not in message, "a secret leaked into the message"


# ------------------------------------------------------------------------------ the SQL corpus
def test_corpus_size_is_reported() -> None:
    print(f"\nhostile corpus: {len(CORPUS) + len(PACK_CORPUS)} attacks, {REFUSED} refused, {HARMLESS} harmless")
    assert (REFUSED, HARMLESS) == (sum(a.expect == "refused" for a in CORPUS) + len(PACK_CORPUS),
                                   len(CORPUS) + len(PACK_CORPUS) - REFUSED)


@pytest.mark.parametrize("attack", CORPUS, ids=[a.id for a in CORPUS])
def test_attack_is_refused_or_harmless(attack: Attack, warehouse: Warehouse, domains: None) -> None:
    secrets = _secrets(warehouse)
    before = fingerprint(warehouse)
    started = time.perf_counter()
    if attack.expect == "refused":
        with pytest.raises(ReadOnlyViolation) as info:
            warehouse.execute_readonly(attack.sql, timeout_s=attack.timeout_s, schema=A)
        assert time.perf_counter() - started < 1.0, "refusal must not parse a hostile input at length"
        assert_clean_message(str(info.value), secrets)
    else:
        try:
            res = warehouse.execute_readonly(attack.sql, timeout_s=attack.timeout_s, schema=A)
        except (WarehouseError, QueryTimeout) as exc:
            assert_clean_message(str(exc), secrets)
        else:
            for s in secrets:
                assert s not in repr(res.rows)
        assert time.perf_counter() - started < attack.timeout_s + 2.0, "the statement timeout did not bound it"
    assert fingerprint(warehouse) == before


@pytest.mark.parametrize("attack", [a for a in CORPUS if a.expect == "refused" and len(a.sql) < 10_000],
                         ids=[a.id for a in CORPUS if a.expect == "refused" and len(a.sql) < 10_000])
def test_refused_attack_is_harmless_as_the_role_without_the_checker(
        attack: Attack, warehouse: Warehouse, domains: None) -> None:
    """The second wall alone: the statement goes straight to the role's connection."""
    secrets = _secrets(warehouse)
    before = fingerprint(warehouse)
    with warehouse.role_engine(A).connect() as conn:
        try:
            conn.exec_driver_sql("SET LOCAL statement_timeout = 2000")
            result = conn.exec_driver_sql(attack.sql)
            rows = result.all() if result.returns_rows else []
        except DBAPIError:
            rows = []  # refused by PostgreSQL: permission denied, read-only transaction, ...
        finally:
            conn.rollback()
    for s in secrets:
        assert s not in repr(rows), "the role read a secret"
    assert fingerprint(warehouse) == before


def test_role_is_least_privilege(warehouse: Warehouse, domains: None) -> None:
    role = readonly_role(A)
    with warehouse.admin().connect() as c:
        attrs = c.execute(text("SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin "
                               "FROM pg_roles WHERE rolname = :r"), {"r": role}).one()
        owns = c.execute(text("SELECT count(*) FROM pg_class WHERE relowner = CAST(:r AS regrole)"), {"r": role}).scalar()
        privileges = c.execute(text(
            "SELECT has_schema_privilege(:r, :a, 'USAGE'), has_schema_privilege(:r, :b, 'USAGE'), "
            "has_schema_privilege(:r, :a, 'CREATE'), has_schema_privilege(:r, 'public', 'CREATE'), "
            "has_table_privilege(:r, :a || '.t', 'SELECT'), has_table_privilege(:r, :a || '.t', 'INSERT'), "
            "has_function_privilege(:r, 'pg_try_advisory_lock(bigint)', 'EXECUTE'), "
            "has_function_privilege(:r, 'pg_cancel_backend(integer)', 'EXECUTE'), "
            "has_function_privilege(:r, 'ts_stat(text)', 'EXECUTE'), "
            "has_database_privilege(:r, current_database(), 'TEMP')"), {"r": role, "a": A, "b": B}).one()
    assert tuple(attrs) == (False, False, False, False, False, True)
    assert owns == 0
    assert tuple(privileges) == (True, False, False, False, True, False, False, False, False, False)
    res = warehouse.execute_readonly("SELECT current_user, usesuper FROM pg_user WHERE usename = current_user",
                                     schema=A)
    assert res.rows == [(role, False)]


def test_role_cannot_read_another_domain_with_sql_the_checker_passes(warehouse: Warehouse, domains: None) -> None:
    with pytest.raises(WarehouseError) as info:
        warehouse.execute_readonly(f"SELECT gold FROM {B}.secret", schema=A)
    assert "42501" in str(info.value)
    assert SECRET not in str(info.value)
    assert warehouse.execute_readonly(f"SELECT gold FROM {B}.secret", schema=B).rows == [(SECRET,)]


def test_search_path_is_the_domain_schema(warehouse: Warehouse, domains: None) -> None:
    assert warehouse.execute_readonly("SELECT count(*) FROM t", schema=A).rows == [(50,)]


def test_a_generation_worker_sets_statement_parallelism_in_its_transaction_only(
        warehouse: Warehouse, domains: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import dibench.stores.warehouse as wh_module
    from dibench.generation.workers import statement_parallelism
    # current_setting() is refused on the read-only path: read it below the checker, as the admin.
    setting = "SELECT current_setting('max_parallel_workers_per_gather') AS n"
    server = wh_module._run_readonly(warehouse.engine, setting, {}, 1000)[1]
    assert wh_module._run_readonly(warehouse.engine, setting, {}, 1000, parallel=0)[1] == [("0",)]
    assert wh_module._run_readonly(warehouse.engine, setting, {}, 1000)[1] == server  # SET LOCAL: the pooled session is as before
    seen: list[int | None] = []
    real = wh_module._run_readonly
    monkeypatch.setattr(wh_module, "_run_readonly", lambda *a: seen.append(a[5]) or real(*a))
    wh = Warehouse(warehouse.settings, warehouse.engine)
    wh.parallel_workers = 0
    assert wh.execute_readonly("SELECT count(*) FROM t", schema=A).rows == [(50,)] and seen == [0]
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert [statement_parallelism(n) for n in (1, 2, 4, None)] == [1, 0, 0, None]
    monkeypatch.setenv("DIBENCH_SQL_PARALLEL_WORKERS", "3")
    get_settings.cache_clear()
    try:
        assert [statement_parallelism(n) for n in (2, None)] == [3, 3]
    finally:
        monkeypatch.delenv("DIBENCH_SQL_PARALLEL_WORKERS")
        get_settings.cache_clear()


def test_advisory_lock_never_outlives_the_query(warehouse: Warehouse, domains: None) -> None:
    """Even run as the role without the checker, a lock cannot be taken; and whatever a session
    sets is discarded when the connection goes back to the pool."""
    engine = warehouse.role_engine(A)
    with engine.connect() as conn:
        with pytest.raises(DBAPIError) as info:
            conn.exec_driver_sql("SELECT pg_try_advisory_lock(42)")
        assert getattr(info.value.orig, "sqlstate", None) == "42501"
        conn.rollback()
        conn.exec_driver_sql("SET work_mem = '1234kB'")
        conn.commit()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW work_mem").scalar() != "1234kB"
        conn.rollback()
    with warehouse.admin().connect() as c:
        assert c.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar() == 0


def test_cancel_cannot_reach_a_sibling_session(warehouse: Warehouse, domains: None) -> None:
    """Two pooled connections of one role: neither may signal the other."""
    engine = warehouse.role_engine(A)
    with engine.connect() as one, engine.connect() as two:
        pid = one.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with pytest.raises(DBAPIError) as info:
            two.exec_driver_sql(f"SELECT pg_cancel_backend({int(pid):d})")
        assert getattr(info.value.orig, "sqlstate", None) == "42501"
        two.rollback()
        assert one.exec_driver_sql("SELECT 1").scalar() == 1
        one.rollback()


def test_roles_are_made_idempotently_for_schemas_loaded_by_hand(warehouse: Warehouse) -> None:
    schema = "hostile_byhand"
    with warehouse.admin().begin() as c:
        c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        c.execute(text(f"CREATE SCHEMA {schema}"))
        c.execute(text(f"CREATE TABLE {schema}.t AS SELECT 1 AS a"))
    try:
        assert readonly_role(schema) in warehouse.ensure_all_roles()
        assert readonly_role(schema) in warehouse.ensure_all_roles()
        assert warehouse.execute_readonly("SELECT a FROM t", schema=schema).rows == [(1,)]
        with warehouse.admin().begin() as c:  # recreated behind our back: the grants are gone
            c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
            c.execute(text(f"CREATE SCHEMA {schema}"))
            c.execute(text(f"CREATE TABLE {schema}.t AS SELECT 2 AS a"))
        assert warehouse.execute_readonly("SELECT a FROM t", schema=schema).rows == [(2,)]
    finally:
        with warehouse.admin().begin() as c:
            c.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


# ------------------------------------------------------------------------------ documents and metrics
@pytest.mark.parametrize("attack", PACK_CORPUS, ids=[a.id for a in PACK_CORPUS])
def test_pack_attack_is_one_line_naming_file_and_field(attack: PackAttack, tmp_path: Path, warehouse: Warehouse,
                                                       graph: Graph, domains: None) -> None:
    ensure_mini_loaded(warehouse)
    root = copy_pack(tmp_path / "pack", "mini_hostile")
    attack.mutate(root)
    secrets = _secrets(warehouse)
    before, counts = fingerprint(warehouse), graph_counts(graph)
    started = time.perf_counter()
    _, problems = validate_pack(root, warehouse)
    # Reading a 450 KB front matter with PyYAML takes seconds by itself; the refusal is immediate.
    assert time.perf_counter() - started < 20.0
    hits = [p for p in problems if p.field == attack.field]
    assert hits, "\n".join(str(p) for p in problems) or "no problem reported"
    for p in problems:
        assert_clean_message(str(p), secrets)
        assert len(str(p)) < 400
    assert fingerprint(warehouse) == before
    assert graph_counts(graph) == counts


@pytest.mark.parametrize("predicate", [
    f"o.amount > (SELECT count(*) FROM {B}.secret)",
    f"{B}.leak(o.amount) > 0",
    NESTED_3000,
    OR_CHAIN.replace("t.id", "o.amount"),
], ids=["other-schema", "other-schema-function", "3000-nested-parentheses", "450KB-or-chain"])
def test_ingest_and_grounding_refuse_at_apply_time(predicate: str, warehouse: Warehouse, domains: None) -> None:
    """A document that never went through validation: the shared rewrite refuses it in
    milliseconds, and ingest's verification keeps a one-line, secret-free error on the edge."""
    ensure_mini_loaded(warehouse)
    pack = load_pack(Path(__file__).parent / "fixtures" / "minipack")
    metric = pack.metric_by_id["MINI-REV-001"]
    eff = WhereEffect(metric=metric.id, op="where", predicate=predicate)
    before = fingerprint(warehouse)
    started = time.perf_counter()
    with pytest.raises(RewriteError) as info:
        apply_effect(Bound(parse(metric.sql)), eff, metric, "RULE-X")
    assert time.perf_counter() - started < 1.0
    assert_clean_message(str(info.value), _secrets(warehouse))
    check = verify_effect(warehouse, metric, "RULE-X", eff, schema=pack.schema)
    assert not check.verified
    assert check.error is not None
    assert_clean_message(check.error, _secrets(warehouse))
    assert fingerprint(warehouse) == before


def test_verification_error_is_sanitised(warehouse: Warehouse, domains: None) -> None:
    """An error raised by PostgreSQL while verifying keeps SQLSTATE and class, never the value."""
    ensure_mini_loaded(warehouse)
    pack = load_pack(Path(__file__).parent / "fixtures" / "minipack")
    metric = pack.metric_by_id["MINI-REV-001"]
    eff = WhereEffect(metric=metric.id, op="where", predicate=f"CAST('{SECRET}' AS int) > 0")
    check = verify_effect(warehouse, metric, "RULE-X", eff, schema=pack.schema)
    assert check.error is not None
    assert "22P02" in check.error
    assert SECRET not in check.error


def test_size_limits_keep_real_expressions() -> None:
    """The limits are far above what real documents use: 150 OR terms still parse quickly."""
    started = time.perf_counter()
    tree = parse("SELECT 1 FROM t WHERE " + " OR ".join(f"t.id = {i}" for i in range(150)))
    assert tree is not None
    assert time.perf_counter() - started < 1.0
    with pytest.raises(DibenchError, match="too deeply nested"):
        parse("SELECT " + "(" * 60 + "1" + ")" * 60)
