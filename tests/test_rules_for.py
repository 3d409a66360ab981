"""`rules_for` and `graph stats` on a real ingested copy of the mini pack, through the library
and through the CLI (click's CliRunner on the real `dibench` group).

The copy adds a second-level composite (MINI-TOP-001 uses MINI-HEALTH-001, which uses
MINI-SAT-001 and MINI-AOV-001) and a rule whose operation changes nothing (its edge is
unverified), so paths of two and three metrics and both verified flags are exercised.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.errors import NotFound
from dibench.core.pack import Pack, load_pack
from dibench.ingest.pipeline import ingest_pack
from dibench.service.queries import graph_stats, rules_for
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, edit_metrics, ensure_mini_loaded, write_front

DOMAIN = "mini_trf"
TWIN = "mini_trf_twin"  # a second domain holding the same metric ids

TOP_METRIC = {
    "id": "MINI-TOP-001", "name": "Board scorecard", "tier": 3,
    "description": "The commercial health index as reported to the board.",
    "formula": "the commercial health index, unchanged",
    "sql": "SELECT 0.5 * (100.0 * COUNT(*) FILTER (WHERE o.rating >= :good_rating) / NULLIF(COUNT(o.rating), 0))"
           " + 0.1 * AVG(o.amount) AS value\n"
           "FROM mini.orders o JOIN mini.customers c ON c.customer_id = o.customer_id\n"
           "WHERE o.ordered_at >= :start_date AND o.ordered_at < :end_date\n",
    "time_column": "o.ordered_at", "dimensions": ["customers.region"], "params": {"good_rating": 4},
    "components": ["MINI-HEALTH-001"], "unit": "score",
}
NOOP_FRONT = {
    "id": "MINI-R-NOOP", "title": "Orders have a non-negative amount", "version": "3",
    "effective_date": "2023-01-01", "owner": "Finance", "rule_type": "definitional",
    "effects": [{"metric": "MINI-AOV-001", "op": "where", "predicate": "o.amount >= 0"}],
}
NOOP_BODY = "# Order amounts\n\n" + (
    "An order amount is recorded in the currency of the shop and can never be negative, because refunds are "
    "booked as separate documents by the finance team rather than as orders with a negative amount. ") * 3


def _pack(root: Path, name: str) -> Path:
    copy_pack(root, name)
    edit_metrics(root, lambda ms: ms.append(TOP_METRIC))
    write_front(root / "rules" / "noop.md", NOOP_FRONT, NOOP_BODY)
    return root


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    ensure_mini_loaded(warehouse)
    for d in (DOMAIN, TWIN):
        delete_domain(graph, d)
    pk = load_pack(_pack(tmp_path_factory.mktemp("rules_for") / "pack", DOMAIN))
    report = ingest_pack(pk, graph, warehouse)
    assert report.failures == []
    assert report.unverified_edges == ["MINI-R-NOOP -> MINI-AOV-001"]
    twin = load_pack(_pack(tmp_path_factory.mktemp("rules_for_twin") / "pack", TWIN))
    ingest_pack(twin, graph, warehouse, verify=False)
    yield pk
    for d in (DOMAIN, TWIN):
        delete_domain(graph, d)


def _by_rule(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {r["rule_id"]: r for r in rows}
    assert len(out) == len(rows), f"a rule is listed twice: {[r['rule_id'] for r in rows]}"
    return out


def test_composite_reaches_the_rules_of_its_components_with_the_path(pack: Pack, graph: Graph) -> None:
    rows = _by_rule(rules_for(graph, "MINI-HEALTH-001", DOMAIN))
    assert {rid: (r["via"], r["path"]) for rid, r in rows.items()} == {
        "MINI-R-OUTLIER": ("composite", ["MINI-HEALTH-001", "MINI-AOV-001"]),
        "MINI-R-NOOP": ("composite", ["MINI-HEALTH-001", "MINI-AOV-001"]),
        "MINI-R-PHONE": ("composite", ["MINI-HEALTH-001", "MINI-SAT-001"]),
        "MINI-R-PRIVACY": ("composite", ["MINI-HEALTH-001", "MINI-SAT-001"]),
        "MINI-R-STRICT": ("composite", ["MINI-HEALTH-001", "MINI-SAT-001"]),
    }
    assert rows["MINI-R-OUTLIER"]["operation"] == {"metric": "MINI-AOV-001", "op": "exclude",
                                                   "predicate": "o.amount > 2000"}


def test_two_level_composite_paths(pack: Pack, graph: Graph) -> None:
    rows = rules_for(graph, "MINI-TOP-001", DOMAIN)
    assert {(r["rule_id"], tuple(r["path"])) for r in rows} == {
        ("MINI-R-OUTLIER", ("MINI-TOP-001", "MINI-HEALTH-001", "MINI-AOV-001")),
        ("MINI-R-NOOP", ("MINI-TOP-001", "MINI-HEALTH-001", "MINI-AOV-001")),
        ("MINI-R-PHONE", ("MINI-TOP-001", "MINI-HEALTH-001", "MINI-SAT-001")),
        ("MINI-R-PRIVACY", ("MINI-TOP-001", "MINI-HEALTH-001", "MINI-SAT-001")),
        ("MINI-R-STRICT", ("MINI-TOP-001", "MINI-HEALTH-001", "MINI-SAT-001")),
    }
    assert all(r["via"] == "composite" for r in rows)


def test_direct_rules_with_conditional_applicability(pack: Pack, graph: Graph) -> None:
    rows = _by_rule(rules_for(graph, "MINI-SAT-001", DOMAIN))
    assert set(rows) == {"MINI-R-PHONE", "MINI-R-PRIVACY", "MINI-R-STRICT"}
    assert all(r["via"] == "direct" and r["path"] == ["MINI-SAT-001"] for r in rows.values())
    assert rows["MINI-R-PHONE"]["applies_when"] == [{"dimension": "customers.plan", "value": "basic"}]
    assert rows["MINI-R-PHONE"]["rule_type"] == "conditional"
    assert rows["MINI-R-STRICT"]["applies_when"] == []
    assert rows["MINI-R-STRICT"]["operation"]["from_date"] == "2024-06-01"
    # Under 100 orders: the islands over the whole range, then groups of single months.
    changed = rows["MINI-R-PRIVACY"]["changed_slices"]
    assert changed[0] == "customers.region=islands"
    assert {s.split("=")[0] for s in changed[1:]} <= {"customers.region by month", "customers.plan by month",
                                                      "orders.channel by month"}


def test_verified_flag_and_version(pack: Pack, graph: Graph) -> None:
    rows = _by_rule(rules_for(graph, "MINI-AOV-001", DOMAIN))
    assert {rid: r["verified"] for rid, r in rows.items()} == {"MINI-R-OUTLIER": True, "MINI-R-NOOP": False}
    assert rows["MINI-R-NOOP"]["changed_slices"] == []
    for rid, r in rows.items():
        doc = pack.rule(rid)
        assert r["version"] == doc.front.version
        assert r["content_hash"] == doc.content_hash[:12]
        assert r["title"] == doc.front.title
    assert rows["MINI-R-NOOP"]["version"] == "3"


def test_metric_lookup_errors(pack: Pack, graph: Graph) -> None:
    with pytest.raises(NotFound, match="no metric 'MINI-NOPE-001' in the graph for domain 'mini_trf'"):
        rules_for(graph, "MINI-NOPE-001", DOMAIN)
    # MINI-TOP-001 exists only in this module's two domains: without --domain it is ambiguous.
    with pytest.raises(NotFound, match=r"exists in several domains \['mini_trf', 'mini_trf_twin'\]"):
        rules_for(graph, "MINI-TOP-001")
    assert len(rules_for(graph, "MINI-TOP-001", TWIN)) == 5


def test_graph_stats_of_the_domain(pack: Pack, graph: Graph) -> None:
    assert graph_stats(graph, DOMAIN) == {
        "nodes": {"Dimension": 4, "Metric": 5, "Rule": 5, "RuleVersion": 5, "Table": 2},
        "edges": {"APPLIES_WHEN": 1, "CURRENT_VERSION": 5, "HAS_DIMENSION": 4, "HAS_VERSION": 5, "JOINS": 1,
                  "MODIFIES": 6, "READS": 10, "SLICED_BY": 12, "USES": 3},
        "tasks": {"admitted_standard": 0, "admitted_with_variants": 0, "with_rejected_candidates": 0},
    }


# ----------------------------------------------------------------------------- CLI
def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_cli_rules_for_json_matches_the_library(pack: Pack, graph: Graph) -> None:
    out = json.loads(_invoke("rules-for", "MINI-HEALTH-001", "--domain", DOMAIN, "--json").output)
    assert out == rules_for(graph, "MINI-HEALTH-001", DOMAIN)
    noop = next(r for r in out if r["rule_id"] == "MINI-R-NOOP")
    assert (noop["verified"], noop["version"], noop["path"]) == (False, "3", ["MINI-HEALTH-001", "MINI-AOV-001"])
    phone = next(r for r in out if r["rule_id"] == "MINI-R-PHONE")
    assert phone["applies_when"] == [{"dimension": "customers.plan", "value": "basic"}]


def test_cli_rules_for_table_and_tasks(pack: Pack) -> None:
    _invoke("rules-for", "MINI-SAT-001", "--domain", DOMAIN)
    out = json.loads(_invoke("rules-for", "MINI-SAT-001", "--domain", DOMAIN, "--tasks", "--json").output)
    assert {r["rule_id"]: r["tasks"] for r in out} == {"MINI-R-PHONE": [], "MINI-R-PRIVACY": [], "MINI-R-STRICT": []}


def test_cli_rules_for_unknown_metric_is_one_error_line(pack: Pack) -> None:
    result = CliRunner().invoke(main, ["rules-for", "MINI-NOPE-001", "--domain", DOMAIN])
    assert result.exit_code == 1
    assert "no metric 'MINI-NOPE-001' in the graph" in result.output
    assert "Traceback" not in result.output


def test_cli_graph_stats_json(pack: Pack, graph: Graph) -> None:
    out = json.loads(_invoke("graph", "stats", "--domain", DOMAIN, "--json").output)
    assert out == graph_stats(graph, DOMAIN)
    assert set(out["edges"]) >= {"READS", "HAS_DIMENSION", "JOINS", "MODIFIES", "USES", "APPLIES_WHEN"}
    everything = json.loads(_invoke("graph", "stats", "--json").output)
    for kind in ("nodes", "edges"):
        for label, n in out[kind].items():
            assert everything[kind][label] >= n
    _invoke("graph", "stats", "--domain", DOMAIN)


@pytest.mark.parametrize("command", [["rules-for"], ["graph", "stats"], ["ingest"], ["domain", "validate"]])
def test_commands_have_help(command: list[str]) -> None:
    result = _invoke(*command, "--help")
    assert len(result.output.split("\n\n")[1].strip()) > 10  # the docstring paragraph
