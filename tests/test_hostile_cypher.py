"""The hostile Cypher corpus, replayed against a real Neo4j holding a generated domain.

Every entry of REFUSED must raise CypherRefused with one bounded line that echoes no private
value, and leave the graph as it was (node and edge counts of the whole graph, every node and
edge of the domain with its properties, no probe node, no request to a loopback listener); user
Cypher runs for the private audience only, so REFUSED is replayed as a private query, and its
oracles are refused to a public export before anything runs (tests/test_public_surface.py has
the full oracle corpus). Every entry of HARMLESS runs (or is refused) and leaves the same
fingerprint. Writes, LOAD CSV, procedures and SHOW commands are also replayed with the text pass
switched off, to show that Neo4j's plan alone refuses them.
"""
from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dibench.core.pack import Pack
from dibench.service.export import ExportError, ExportQuery, PrivateOnly, filter_query, public_filter, \
    stream_records, task_keys
from dibench.service.queries import graph_stats
from dibench.stores import cypher_guard
from dibench.stores.cypher_guard import CypherRefused, run_user_query
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, snapshot
from tests.test_update import generated_domain

DOMAIN = "mini_hostile1"
URL = "http://127.0.0.1:{port}/x.csv"

# (name, query): refused for the public audience (the default of exports and the HTTP API).
REFUSED: dict[str, str] = {
    # LOAD CSV, hidden from a text scanner in every way we know.
    "load_csv_file": "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r[0] AS key",
    "load_csv_url": "LOAD CSV FROM '{url}' AS r RETURN r[0] AS key",
    "load_csv_after_cr_comment": "MATCH (t:Task) // note\rLOAD CSV FROM '{url}' AS r RETURN t.key AS key",
    "load_csv_after_u2028_comment": "MATCH (t:Task) // note\u2028LOAD CSV FROM '{url}' AS r RETURN t.key AS key",
    "load_csv_after_u2029_comment": "MATCH (t:Task) // note\u2029LOAD CSV FROM '{url}' AS r RETURN t.key AS key",
    "load_csv_after_block_comment": "MATCH (t:Task) /* x */ LOAD /**/ CSV FROM '{url}' AS r RETURN t.key AS key",
    "load_csv_lowercase_tabs": "match (t:Task)\tload\tcsv from '{url}' as r return t.key as key",
    "load_csv_headers": "LOAD CSV WITH HEADERS FROM '{url}' AS r RETURN r.k AS key",
    "load_csv_in_subquery": "MATCH (t:Task) CALL (t) { LOAD CSV FROM '{url}' AS r RETURN r } RETURN t.key AS key",
    "load_csv_unicode_escape_url": "LOAD CSV FROM 'http:\\u002f\\u002f127.0.0.1:{port}/x' AS r RETURN r[0] AS key",
    # Procedures, whatever the spelling.
    "call_dbms_listconfig": "CALL dbms.listConfig() YIELD name RETURN name AS key",
    "call_backticked_dbms": "CALL `dbms`.listConfig() YIELD name RETURN name AS key",
    "call_backticked_whole": "CALL `dbms.listConfig`() YIELD name RETURN name AS key",
    "call_kill_connection": "CALL `dbms`.killConnection('bolt-1')",
    "call_kill_queries": "CALL dbms.killQueries(['query-1'])",
    "call_db_create_label": "CALL db.createLabel('ExportProbe') RETURN 1 AS key",
    "call_db_labels": "CALL db.labels() YIELD label RETURN label AS key",
    "call_apoc_like": "CALL apoc.cypher.runFile('x') YIELD row RETURN row AS key",
    "apoc_function_like": "RETURN apoc.text.join(['a'], '') AS key",
    "call_in_comment_newline": "// x\rCALL dbms.listConfig() YIELD name RETURN name AS key",
    "call_dbms_components_backticks": "CALL `dbms`.`components`() YIELD name RETURN name AS key",
    # Administration and SHOW commands.
    "show_users": "SHOW USERS",
    "show_settings": "SHOW SETTINGS YIELD name RETURN name AS key",
    "show_transactions": "SHOW TRANSACTIONS",
    "show_procedures": "SHOW PROCEDURES YIELD name RETURN name AS key",
    "show_databases": "SHOW DATABASES",
    "terminate_transactions": "TERMINATE TRANSACTIONS 'neo4j-transaction-1'",
    "create_user": "CREATE USER mallory SET PASSWORD 'secret-secret'",
    "use_system": "USE system SHOW USERS",
    "use_system_match": "USE system MATCH (n) RETURN n.name AS key",
    "use_backticked": "USE `system` MATCH (n) RETURN n.name AS key",
    "drop_index": "DROP INDEX task_status IF EXISTS",
    # Writes: plain, lowercase, hidden after comments, in subqueries and FOREACH.
    "create": "CREATE (:ExportProbe {domain: 'x'}) RETURN 1 AS key",
    "merge": "MERGE (p:ExportProbe {domain: 'x'}) RETURN p.domain AS key",
    "set": "MATCH (t:Task) SET t.question = 'x' RETURN t.key AS key",
    "detach_delete": "MATCH (t:Task) DETACH DELETE t",
    "remove": "MATCH (t:Task) REMOVE t.question RETURN t.key AS key",
    "foreach_set": "MATCH (t:Task) FOREACH (x IN [1] | SET t.flag = x) RETURN t.key AS key",
    "create_after_cr_comment": "MATCH (t:Task) // x\rCREATE (:ExportProbe) RETURN t.key AS key",
    "create_after_u2028": "MATCH (t:Task) // x\u2028CREATE (:ExportProbe) RETURN t.key AS key",
    "create_in_subquery": "MATCH (t:Task) CALL (t) { CREATE (:ExportProbe) } RETURN t.key AS key",
    "create_in_old_subquery": "MATCH (t:Task) CALL { WITH t CREATE (:ExportProbe) RETURN 1 AS one } RETURN t.key AS key",
    "merge_in_exists": "MATCH (t:Task) WHERE EXISTS { MATCH (t) } MERGE (:ExportProbe) RETURN t.key AS key",
    "in_transactions": "MATCH (t:Task) CALL (t) { RETURN t.key AS k } IN TRANSACTIONS RETURN k AS key",
    "set_lowercase": "match (t:Task) with t limit 1 set t.x = 1 return t.key as key",
    "set_label": "MATCH (t:Task) SET t:Probe RETURN t.key AS key",
    "create_index": "CREATE INDEX probe IF NOT EXISTS FOR (n:ExportProbe) ON (n.x)",
    # Private properties: oracles and leaks through values and errors.
    "oracle_starts_with": "MATCH (t:Task) WHERE t.gold_answer STARTS WITH '{{' RETURN t.key AS key",
    "oracle_backticked": "MATCH (t:Task) WHERE t.`gold_answer` STARTS WITH '{{' RETURN t.key AS key",
    "oracle_gold_sql": "MATCH (t:Task) WHERE t.gold_sql CONTAINS 'WHERE' RETURN t.key AS key",
    "oracle_pattern_map": "MATCH (t:Task {gold_sql: 'x'}) RETURN t.key AS key",
    "oracle_properties": "MATCH (t:Task) WHERE properties(t).gold_answer > '' RETURN t.key AS key",
    "oracle_properties_subscript": "MATCH (t:Task) WHERE properties(t)['gold' + '_answer'] > '' RETURN t.key AS key",
    "oracle_dynamic_subscript": "MATCH (t:Task) WHERE t['gold_answer'] > '' RETURN t.key AS key",
    "oracle_param_subscript": "MATCH (t:Task) WHERE t[$p] > '' RETURN t.key AS key",
    "oracle_keys_loop": "MATCH (t:Task) WHERE any(k IN keys(t) WHERE t[k] STARTS WITH '{{') RETURN t.key AS key",
    "oracle_map_projection": "MATCH (t:Task) WITH t {.*} AS m WHERE m.facts > '' RETURN m.key AS key",
    "oracle_all_projection_compare": "MATCH (t:Task) WHERE t {.*} = {{}} RETURN t.key AS key",
    "oracle_judge": "MATCH (t:Task) WHERE t.judge CONTAINS 'pass' RETURN t.key AS key",
    "oracle_base_answer": "MATCH (t:Task) WHERE t.base_answer IS NOT NULL RETURN t.key AS key",
    "oracle_params": "MATCH (t:Task) WHERE t.gold_params CONTAINS '2024' RETURN t.key AS key",
    "oracle_after_cr_comment": "MATCH (t:Task) // x\rWHERE t.gold_answer > '' RETURN t.key AS key",
    "oracle_in_order_by": "MATCH (t:Task) RETURN t.key AS key ORDER BY t.gold_answer",
    "leak_date_error": "MATCH (t:Task) RETURN date(t.gold_answer + ' SQL=' + t.gold_sql) AS key",
    "leak_as_key": "MATCH (t:Task) RETURN t.gold_sql AS key",
    # Resource exhaustion: bounded by the server-side timeout.
    "huge_unwind": "UNWIND range(1, 2000000000) AS x WITH x WHERE x < 0 RETURN toString(x) AS key",
    # Not Cypher the server accepts.
    "syntax_error": "MATCH (t:Task RETURN t.key AS key",
    "two_statements": "MATCH (t:Task) RETURN t.key AS key; CREATE (:ExportProbe)",
    "profile_prefix": "PROFILE MATCH (t:Task) RETURN t.key AS key",
}
# (name, query): run, or are refused, without changing anything or revealing a private value.
HARMLESS: dict[str, str] = {
    "create_in_string": "MATCH (t:Task) WHERE t.question CONTAINS 'CREATE (n) // LOAD CSV' RETURN t.key AS key",
    "keywords_in_comment": "// SET this, then MERGE\nMATCH (t:Task) /* DETACH DELETE */ RETURN t.key AS key",
    "keywords_as_names": "MATCH (t:Task) RETURN t.key AS key, {set: 1, create: 2} AS m, t.`remove` AS r",
    "read_subquery": "MATCH (t:Task) CALL (t) { RETURN t.key AS k } RETURN k AS key",
    "exists_subquery": "MATCH (t:Task) WHERE EXISTS { (t)-[:ON_METRIC]->(:Metric) } RETURN t.key AS key",
    "public_filters": "MATCH (t:Task {status: 'admitted'}) WHERE t.tier IN ['K', 'K+A+R'] AND t.question <> '' "
                      "RETURN DISTINCT t.key AS key ORDER BY key SKIP 1 LIMIT 3",
    "rule_edge": "MATCH (t:Task)-[:USES_RULE]->(r:Rule) WHERE r.id STARTS WITH 'MINI' RETURN t.key AS key",
    "list_index": "MATCH (t:Task) WITH collect(t.key) AS ks RETURN ks[0] AS key",
    "non_task_keys": "MATCH (m:Metric) RETURN m.key AS key",
    "nulls": "MATCH (t:Task) OPTIONAL MATCH (t)-[:NO_SUCH]->(x) RETURN x.key AS key",
    "union": "MATCH (t:Task) RETURN t.key AS key UNION MATCH (t:Task) RETURN t.key AS key",
    "shortest_path": "MATCH (t:Task), (m:Metric) MATCH p = shortestPath((t)-[*..3]-(m)) RETURN t.key AS key LIMIT 5",
    "var_length": "MATCH (t:Task)-[*1..2]->(x) RETURN DISTINCT t.key AS key",
    "aggregation": "MATCH (t:Task) WITH t.domain AS d, collect(t.key) AS ks UNWIND ks AS key RETURN key",
    "case_of_public": "MATCH (t:Task) RETURN CASE WHEN t.tier = 'K' THEN t.key END AS key",
    "cartesian_product": "MATCH (a), (b), (c) WITH count(*) AS n WHERE n < 0 RETURN toString(n) AS key",
    "explain_prefix": "EXPLAIN MATCH (t:Task) CREATE (:ExportProbe) RETURN t.key AS key",
    "list_literals": "MATCH (t:Task) WHERE t.analysis_type IN ['trend', 'ranking'] "
                     "RETURN [x IN [t.key] | x][0] AS key",
    "unicode_in_string": "MATCH (t:Task) WHERE t.question <> '\u2028\r' RETURN t.key AS key",
}
# Harmless entries refused anyway (a write keyword the text pass sees); every other one must run.
REFUSED_HARMLESS = frozenset({"explain_prefix"})
# Refused by the plan alone: replayed with the text pass switched off.
PLAN_ONLY = [n for n in REFUSED if n.startswith(("load_csv", "call_", "show_", "create", "merge", "set", "detach",
                                                 "remove", "foreach", "in_transactions"))]


class _Listener(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Listener.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"a,b\n")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture(scope="module")
def listener() -> Iterator[int]:
    """A loopback HTTP server (127.0.0.1 only) that records any request LOAD CSV would make."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    server.timeout = 1
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    pk = generated_domain(tmp_path_factory.mktemp("hostile") / "pack", DOMAIN, graph, warehouse, target=6)
    yield pk
    delete_domain(graph, DOMAIN)


def fingerprint(graph: Graph) -> dict[str, Any]:
    """Whole-graph counts and a checksum of every node and edge of the domain with its properties."""
    nodes, edges = snapshot(graph, DOMAIN)
    blob = json.dumps([sorted(nodes.items()), sorted((list(k), v) for k, v in edges.items())], sort_keys=True,
                      default=str)
    stats = graph_stats(graph, None)
    probes = graph.run_raw_read("MATCH (p:ExportProbe) RETURN count(p) AS n", {})[0]["n"]
    return {"stats": stats, "domain_sha256": hashlib.sha256(blob.encode()).hexdigest(), "probes": probes}


def private_values(graph: Graph) -> list[str]:
    """Substrings of gold answers and SQL that must never appear in an error."""
    rows = graph.run_raw_read("MATCH (t:Task {domain: $d}) RETURN t.gold_answer AS a, t.gold_sql AS s", {"d": DOMAIN})
    return [v[:40] for r in rows for v in (r["a"], r["s"]) if isinstance(v, str) and len(v) >= 12]


def _query(text: str, port: int) -> str:
    return text.replace("{url}", URL.format(port=port)).replace("{port}", str(port)).replace("{{", "{") \
        .replace("}}", "}")


def _assert_one_line(exc: BaseException, secrets: list[str]) -> None:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg and len(msg) < 300, msg
    assert not [s for s in secrets if s in msg], msg


def test_corpus_size() -> None:
    """The figures for the issue's closing note."""
    assert len(REFUSED) >= 60 and len(HARMLESS) >= 15 and len(PLAN_ONLY) >= 30
    assert not set(REFUSED) & set(HARMLESS)


ORACLES = [n for n in REFUSED if n.startswith(("oracle", "leak"))]


@pytest.mark.parametrize("name", sorted(set(REFUSED) - set(ORACLES) - {"leak_date_error"}))
def test_refused_and_harmless_to_the_graph(pack: Pack, graph: Graph, listener: int, name: str) -> None:
    before, secrets = fingerprint(graph), private_values(graph)
    hits = len(_Listener.hits)
    with pytest.raises(CypherRefused) as caught:
        run_user_query(graph, _query(REFUSED[name], listener), {"p": "gold_answer"}, timeout_s=3)
    _assert_one_line(caught.value, secrets)
    assert fingerprint(graph) == before
    assert len(_Listener.hits) == hits


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_public_export_runs_none_of_them(pack: Pack, graph: Graph, listener: int, name: str) -> None:
    """The public audience runs no user Cypher at all: every entry, oracles included, is refused
    before the text reaches Neo4j."""
    before, secrets, hits = fingerprint(graph), private_values(graph), len(_Listener.hits)
    with pytest.raises((PrivateOnly, CypherRefused)) as caught:
        task_keys(graph, ExportQuery(_query(REFUSED[name], listener), {"p": "gold_answer"}), "public")
    _assert_one_line(caught.value, secrets)
    with pytest.raises((PrivateOnly, CypherRefused)):
        list(stream_records(graph, ExportQuery(_query(REFUSED[name], listener)), "public", DOMAIN))
    assert fingerprint(graph) == before
    assert len(_Listener.hits) == hits


@pytest.mark.parametrize("name", sorted(PLAN_ONLY))
def test_the_plan_alone_refuses(pack: Pack, graph: Graph, listener: int, monkeypatch: pytest.MonkeyPatch,
                                name: str) -> None:
    """With the text pass switched off, Neo4j's EXPLAIN plan still refuses (private audience: no
    property rule helps either)."""
    monkeypatch.setattr(cypher_guard, "check_read_only", lambda _q: None)
    before = fingerprint(graph)
    hits = len(_Listener.hits)
    with pytest.raises(CypherRefused) as caught:
        run_user_query(graph, _query(REFUSED[name], listener), {}, timeout_s=3)
    _assert_one_line(caught.value, private_values(graph))
    assert fingerprint(graph) == before
    assert len(_Listener.hits) == hits


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_harmless(pack: Pack, graph: Graph, listener: int, name: str) -> None:
    before, secrets = fingerprint(graph), private_values(graph)
    try:
        rows = run_user_query(graph, _query(HARMLESS[name], listener), {}, timeout_s=3)
        assert name not in REFUSED_HARMLESS
        assert isinstance(rows, list)
    except CypherRefused as exc:
        assert name in REFUSED_HARMLESS, exc
        _assert_one_line(exc, secrets)
    assert fingerprint(graph) == before


def test_the_server_refuses_load_csv_itself(pack: Pack, graph: Graph, listener: int) -> None:
    """Neo4j's settings are the last wall: LOAD CSV run directly (no guard) fetches nothing."""
    from neo4j import READ_ACCESS
    from neo4j.exceptions import Neo4jError

    hits = len(_Listener.hits)
    for text in (f"LOAD CSV FROM '{URL.format(port=listener)}' AS r RETURN count(r) AS n",
                 "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN count(r) AS n"):
        with graph.driver.session(database=graph.database, default_access_mode=READ_ACCESS) as s:
            with pytest.raises(Neo4jError):
                s.run(text).consume()
    assert len(_Listener.hits) == hits


def test_private_properties_need_the_private_audience(pack: Pack, graph: Graph) -> None:
    q = ExportQuery("MATCH (t:Task {domain: $d}) WHERE t.gold_answer <> '' RETURN t.key AS key", {"d": DOMAIN})
    with pytest.raises(PrivateOnly, match="public export cannot run arbitrary Cypher"):
        task_keys(graph, q, "public")
    assert task_keys(graph, q, "private")


def test_private_errors_carry_no_data(pack: Pack, graph: Graph) -> None:
    """`date(t.gold_answer + ...)` fails on the server; its message (with the value) is dropped."""
    q = ExportQuery("MATCH (t:Task {domain: $d}) RETURN date(t.gold_answer + ' SQL=' + t.gold_sql) AS key",
                    {"d": DOMAIN})
    with pytest.raises(CypherRefused, match=r"Neo\.ClientError") as caught:
        task_keys(graph, q, "private")
    _assert_one_line(caught.value, private_values(graph))


def test_export_records_are_whitelisted_and_scoped(pack: Pack, graph: Graph) -> None:
    q = filter_query(public_filter({"status": ["admitted", "rejected"]}))
    public = [json.loads(x) for x in stream_records(graph, q, "public", DOMAIN)]
    assert public and {r["domain"] for r in public} == {DOMAIN}
    assert set().union(*public) == {"task_id", "domain", "analysis_type", "tier", "variant", "question",
                                    "answer_format", "metadata"}
    assert len({r["task_id"] for r in public}) == len(public)
    with pytest.raises(ExportError, match="no domain"):
        list(stream_records(graph, q, "public", "no_such_domain"))
