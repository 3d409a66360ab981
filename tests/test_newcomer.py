"""A newcomer's first day on real Neo4j and Postgres (copies of the mini pack): dibench never
drops or replaces a schema it did not create; an ingest after `remove-rule` re-derives the tasks
the rule is back in; an export of 0 tasks and a drift that moved tasks exit non-zero; tables
piped to a file keep whole identifiers."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from psycopg import sql

from dibench.cli.main import main
from dibench.core.errors import NotFound
from dibench.core.pack import Pack, load_pack
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.service.queries import rules_for
from dibench.stores.graph import Graph
from dibench.stores.pack_data import schema_columns, schema_origin
from dibench.stores.warehouse import Warehouse, admin_cursor
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded, on_schema, snapshot

OWN, PRE, SYNC, DRIFT, RETIRE = "mini_new_own", "mini_new_pre", "mini_new_sync", "mini_new_drift", "mini_new_retire"
DOMAINS = (OWN, PRE, SYNC, DRIFT, RETIRE)
SCHEMAS = (OWN, PRE, DRIFT)  # each domain with its own schema reads a schema of its own name


def _drop(wh: Warehouse, schema: str) -> None:
    with admin_cursor(wh.admin()) as cur:
        cur.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(scope="module", autouse=True)
def clean(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    ensure_mini_loaded(warehouse)
    for d in DOMAINS:
        delete_domain(graph, d)
    for s in SCHEMAS:
        _drop(warehouse, s)
    yield
    for d in DOMAINS:
        delete_domain(graph, d)
    for s in SCHEMAS:
        _drop(warehouse, s)


def _users_copy_of_mini(wh: Warehouse, schema: str) -> None:
    """A schema a data team made by hand (no dibench loader): the mini tables, copied."""
    with admin_cursor(wh.admin()) as cur:
        cur.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        for table in ("customers", "orders"):
            cur.execute(sql.SQL("CREATE TABLE {}.{} AS TABLE mini.{}").format(
                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(table)))


def _origin(wh: Warehouse, schema: str) -> str:
    with admin_cursor(wh.admin()) as cur:
        return schema_origin(cur, schema)


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


# ------------------------------------------------------------------------------ never touch others' data
def test_remove_data_refuses_a_schema_dibench_did_not_create(tmp_path: Path, graph: Graph,
                                                             warehouse: Warehouse) -> None:
    _users_copy_of_mini(warehouse, OWN)
    pack = load_pack(on_schema(copy_pack(tmp_path / OWN, OWN), OWN, loader=False))
    assert ingest_pack(pack, graph, warehouse).failures == []
    nodes = snapshot(graph, OWN)[0]
    refused = _cli("domain", "remove", OWN, "--data", "--yes")
    assert refused.exit_code == 1, refused.output
    assert f"schema '{OWN}' of domain '{OWN}' was not created by `dibench domain load`" in refused.output
    assert len(refused.output.strip().splitlines()) <= 2, refused.output  # the error and its hint
    assert set(schema_columns(warehouse, OWN)) == {"customers", "orders"}, "the user's schema was touched"
    assert snapshot(graph, OWN)[0] == nodes, "a refused removal deleted graph nodes"
    graph_only = _cli("domain", "remove", OWN, "--yes")
    assert graph_only.exit_code == 0, graph_only.output
    assert snapshot(graph, OWN) == ({}, {})
    assert set(schema_columns(warehouse, OWN)) == {"customers", "orders"}
    assert _origin(warehouse, OWN) == "foreign"


def test_load_refuses_a_schema_that_existed_before(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    with admin_cursor(warehouse.admin()) as cur:
        cur.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(PRE)))
        cur.execute(sql.SQL("CREATE TABLE {}.keep_me (n int)").format(sql.Identifier(PRE)))
    root = on_schema(copy_pack(tmp_path / PRE, PRE), PRE)
    refused = _cli("domain", "load", str(root))
    assert refused.exit_code == 1, refused.output
    assert f"schema '{PRE}' already exists and was not created by `dibench domain load`" in refused.output
    assert set(schema_columns(warehouse, PRE)) == {"keep_me"}
    replaced = _cli("domain", "load", str(root), "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert set(schema_columns(warehouse, PRE)) == {"customers", "orders"}
    assert _origin(warehouse, PRE) == "dibench"
    # Loaded by dibench, it is dibench's: a second load needs no --replace, and remove --data drops it.
    assert _cli("domain", "load", str(root)).exit_code == 0
    assert ingest_pack(load_pack(root), graph, warehouse).failures == []
    dropped = _cli("domain", "remove", PRE, "--data", "--yes")
    assert dropped.exit_code == 0, dropped.output
    assert _origin(warehouse, PRE) == "absent"


# ------------------------------------------------------------------------------ ingest keeps tasks true
def _tasks(graph: Graph, domain: str) -> dict[str, dict[str, Any]]:
    return {k: n for k, n in snapshot(graph, domain)[0].items() if "Task" in n["labels"]}


def _state(tasks: dict[str, dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    return {k: (t["status"], json.loads(t["gold_answer"]) if t.get("gold_answer") else None)
            for k, t in tasks.items()}


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Pack:
    pack = load_pack(copy_pack(tmp_path_factory.mktemp("sync") / SYNC, SYNC))
    assert ingest_pack(pack, graph, warehouse).failures == []
    generate(pack, graph, target=16, seed=42, workers=1, min_per_type=0)
    return pack


def test_ingest_after_remove_rule_rederives_the_tasks(synced: Pack, graph: Graph) -> None:
    before = _state(_tasks(graph, SYNC))
    removed = _cli("remove-rule", "MINI-R-PHONE", "--domain", SYNC, "--pack", str(synced.root), "--json")
    assert removed.exit_code == 0, removed.output
    without = _state(_tasks(graph, SYNC))
    moved = {k for k in before if without.get(k) != before[k]}
    assert moved, "removing the rule changed no task: the test shows nothing"
    # The document is still in the pack: ingesting it puts the rule back into the policy ...
    res = _cli("ingest", str(synced.root), "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["rederived"]["rules"] == ["MINI-R-PHONE"], report["rederived"]
    assert report["rederived"]["counts"]["updated"] >= 1, report["rederived"]
    assert "MINI-R-PHONE" in {r["rule_id"] for r in rules_for(graph, "MINI-SAT-001", SYNC)}
    # ... and every task's gold is again the gold under the policy in force (as first generated).
    after = _state(_tasks(graph, SYNC))
    assert {k: after[k] for k in before} == before
    # A second ingest changes no rule's policy state: nothing is re-derived.
    again = _cli("ingest", str(synced.root), "--json")
    assert json.loads(again.output)["rederived"] == {}
    plain = _cli("ingest", str(synced.root))
    assert "re-derived" not in plain.output


def test_a_refused_document_is_left_out_and_retirements_are_said_before_the_write(
        tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    root = copy_pack(tmp_path / RETIRE, RETIRE)
    pack = load_pack(root)
    assert ingest_pack(pack, graph, warehouse).failures == []
    generate(pack, graph, target=16, seed=42, workers=1, min_per_type=0)
    # The team adds notes not yet structured, and the phone rule loses its effects.
    (root / "rules" / "notes.md").write_text("# Notes\n\nNothing structured yet.\n")
    phone = root / "rules" / "phone.md"
    phone.write_text(re.sub(r"effects:\n(?:  .*\n)+", "", phone.read_text()))
    before = snapshot(graph, RETIRE)
    dry = _cli("ingest", str(root), "--dry-run")
    assert dry.exit_code == 0, dry.output
    [left_out] = [line for line in dry.output.splitlines() if line.startswith("left out")]
    assert "notes.md: front matter: missing" in left_out
    retired = re.search(r"\(MINI-R-PHONE\): (\d+) retired", dry.output)
    assert retired is not None and int(retired.group(1)) >= 1, dry.output
    assert "retired tasks are on MINI-SAT-001" in dry.output
    assert "dry run, nothing written" in dry.output
    assert snapshot(graph, RETIRE) == before, "a dry run wrote to the graph"
    as_json = json.loads(_cli("ingest", str(root), "--dry-run", "--json").output)
    assert as_json["would_rederive"]["counts"]["retired"] == int(retired.group(1))
    assert len(as_json["left_out"]) == 1
    done = _cli("ingest", str(root), "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["rederived"]["counts"]["retired"] == int(retired.group(1))
    assert report["left_out"] == as_json["left_out"]


# ------------------------------------------------------------------------------ exit codes CI can use
def test_an_export_of_no_task_exits_1_with_the_nearest_names(synced: Pack, tmp_path: Path) -> None:
    query = "MATCH (t:Task {rule_id: 'MINI-R-PHONE'})-[:USES]->(r:Rul) WHERE t.varient = 'x' RETURN t.key AS key"
    args = ["export", "--cypher", query, "--domain", SYNC, "--audience", "private", "-o"]
    res = _cli(*args, str(tmp_path / "empty"))
    assert res.exit_code == 1, res.output
    assert "the query selected 0 tasks, so nothing was written" in res.output
    assert not (tmp_path / "empty").exists(), "a failed export left files behind"
    assert "the graph has no property 'rule_id' on Task (nearest: " in res.output, res.output
    assert "rule_ids" in res.output and "the graph has no property 'varient' on Task (nearest: variant" in res.output
    assert "the graph has no label 'Rul' (nearest: Rule" in res.output, res.output
    assert "'Task'" not in res.output and "'USES'" not in res.output
    allowed = _cli(*args, str(tmp_path / "allowed"), "--allow-empty")
    assert allowed.exit_code == 0, allowed.output
    assert (tmp_path / "allowed" / "manifest.json").is_file()


def test_drift_fail_on_drift(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    pack = load_pack(on_schema(copy_pack(tmp_path / DRIFT, DRIFT), DRIFT))
    load_database(pack, warehouse)
    assert ingest_pack(pack, graph, warehouse).failures == []
    generate(pack, graph, target=6, seed=42, workers=1, min_per_type=0)
    calm = _cli("drift", DRIFT, "--pack", str(pack.root), "--fail-on-drift")
    assert calm.exit_code == 0, calm.output
    with admin_cursor(warehouse.admin()) as cur:
        cur.execute(sql.SQL("UPDATE {}.orders SET amount = amount * 3 + 1").format(sql.Identifier(DRIFT)))
    moved = _cli("drift", DRIFT, "--pack", str(pack.root), "--fail-on-drift", "--json")
    assert moved.exit_code == 1, moved.output
    assert json.loads(moved.output)["counts"]["drifted"] > 0
    assert _cli("drift", DRIFT, "--pack", str(pack.root)).exit_code == 0  # without the flag: a report only


# ------------------------------------------------------------------------------ output for people
def test_piped_tables_are_plain_and_whole(synced: Pack) -> None:
    res = _cli("rules-for", "MINI-SAT-001", "--domain", SYNC)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "# rules affecting MINI-SAT-001"
    assert lines[1].split("\t")[:2] == ["rule", "type"]
    assert "MINI-R-PHONE" in {line.split("\t")[0] for line in lines[2:]}
    assert "…" not in res.output


def test_generate_before_ingest_says_to_ingest_and_opens_no_run(graph: Graph, tmp_path: Path) -> None:
    pack = load_pack(copy_pack(tmp_path / "pack", "never_ingested_x"))
    delete_domain(graph, pack.name)
    with pytest.raises(NotFound, match=r"^domain 'never_ingested_x' is not in the graph$") as caught:
        generate(pack, graph, target=5)
    assert caught.value.hint == "run `dibench ingest never_ingested_x` first"
    assert graph.read("eval_domain", domain=pack.name) == []
    assert not graph.read("test_domain_nodes", domain=pack.name)
