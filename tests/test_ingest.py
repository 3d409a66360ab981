"""Ingest of a domain pack into the real Neo4j, from the real Postgres data of the mini pack.

Each test works on its own copy of the mini pack renamed to a test domain (`mini_ti_*`), and
deletes exactly those domains before and after, so the shared graph is left as it was.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from dibench.cli.main import main
from dibench.core.config import get_settings
from dibench.core.errors import ExtractionError, PackErrors
from dibench.core.pack import load_pack
from dibench.ingest.extract import extract_effects
from dibench.ingest.pipeline import IngestReport, ingest_pack
from dibench.ingest.schema import plan_schema
from dibench.service.queries import graph_stats, rules_for
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import (
    MINIPACK, copy_pack, delete_domain, diff_keys, edit_front, edit_metrics, ensure_mini_loaded, snapshot, write_front,
)

DOMAINS = ["mini_ti_shape", "mini_ti_edit", "mini_ti_bad", "mini_ti_bad2", "mini_ti_llm_a", "mini_ti_llm_b", "mini_ti_llm_c",
           "mini_ti_llm_d"]

# A metric read through a CTE only: `customers` never appears in its outer FROM, so a
# metric -> table edge to it proves the tables come from parsing the whole tree.
CTE_METRIC = {
    "id": "MINI-PREM-001", "name": "Premium orders", "tier": 1,
    "description": "Number of orders placed by premium customers.",
    "formula": "count of orders whose customer is on the premium plan",
    "sql": "WITH premium AS (SELECT customer_id FROM mini.customers WHERE plan = 'premium')\n"
           "SELECT COUNT(*) AS value FROM mini.orders o\n"
           "WHERE o.customer_id IN (SELECT customer_id FROM premium)\n"
           "  AND o.ordered_at >= :start_date AND o.ordered_at < :end_date\n",
    "time_column": "o.ordered_at", "dimensions": ["orders.channel"], "unit": "count",
}

LLM_RULE_FRONT = {
    "id": "MINI-R-LLM", "title": "Very large orders are left out of order value averages", "version": "1",
    "effective_date": "2023-01-01", "owner": "Finance", "rule_type": "exclusionary",
}
LLM_RULE_BODY = (
    "# Very large orders\n\n" + "Orders above two thousand are negotiated one by one by the key account team, "
    "so finance leaves them out when it reports the average value of an order to the board each month. " * 4
)
GOOD_REPLY = json.dumps({"effects": [{"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.amount > 2000"}]})
# A real metric, but an operation true of every order: the answer never changes.
WRONG_REPLY = json.dumps({"effects": [{"metric": "MINI-REV-001", "op": "where", "predicate": "o.amount >= 0"}]})


@pytest.fixture(scope="module", autouse=True)
def clean_domains(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    ensure_mini_loaded(warehouse)
    for d in DOMAINS:
        delete_domain(graph, d)
    yield
    for d in DOMAINS:
        delete_domain(graph, d)


@pytest.fixture(scope="module")
def shape_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_pack(tmp_path_factory.mktemp("shape") / "pack", "mini_ti_shape")
    edit_metrics(root, lambda ms: ms.append(CTE_METRIC))
    return root


@pytest.fixture(scope="module")
def shape_report(shape_pack: Path, graph: Graph, warehouse: Warehouse) -> IngestReport:
    return ingest_pack(load_pack(shape_pack), graph, warehouse)


def _ingest(path: Path, graph: Graph, wh: Warehouse, llm: FakeListChatModel | None = None) -> IngestReport:
    return ingest_pack(load_pack(path), graph, wh, llm)


def _llm_pack(tmp_path: Path, name: str) -> Path:
    root = copy_pack(tmp_path / "pack", name)
    write_front(root / "rules" / "llm.md", dict(LLM_RULE_FRONT), LLM_RULE_BODY)
    return root


# ----------------------------------------------------------------------------- graph shape
def test_graph_shape_has_the_six_edge_types_with_expected_counts(shape_report: IngestReport, graph: Graph) -> None:
    assert shape_report.failures == []
    assert shape_report.warnings == []
    assert (shape_report.verified, shape_report.unverified) == (5, 0)
    stats = graph_stats(graph, "mini_ti_shape")
    assert stats["nodes"] == {"Dimension": 4, "Metric": 5, "Rule": 4, "RuleVersion": 4, "Table": 2}
    assert stats["edges"] == {
        "READS": 10,  # 5 metrics x {orders, customers}
        "HAS_DIMENSION": 4, "JOINS": 1,
        "MODIFIES": 5,  # outliers: REV + AOV; phone, privacy, strict: SAT
        "USES": 2, "APPLIES_WHEN": 1,
        "SLICED_BY": 12, "HAS_VERSION": 4, "CURRENT_VERSION": 4,
    }


def test_edges_carry_what_the_spec_says(shape_report: IngestReport, graph: Graph, warehouse: Warehouse) -> None:
    nodes, edges = snapshot(graph, "mini_ti_shape")
    k = "mini_ti_shape"
    # metric -> table through a CTE: customers is read only inside `premium`.
    assert ("READS", f"metric:{k}/MINI-PREM-001", f"table:{k}/customers") in edges
    assert ("READS", f"metric:{k}/MINI-PREM-001", f"table:{k}/orders") in edges
    join = edges[("JOINS", f"table:{k}/orders", f"table:{k}/customers")]
    assert join["columns"] == "orders.customer_id=customers.customer_id"
    dims = {dst: e for (t, _, dst), e in edges.items() if t == "HAS_DIMENSION"}
    expected_card = {"customers.region": 5, "customers.plan": 3, "orders.channel": 3}
    for column, card in expected_card.items():
        assert dims[f"dim:{k}/{column}"]["cardinality"] == card
    days = warehouse.execute_readonly("SELECT COUNT(DISTINCT ordered_at) FROM mini.orders").rows[0][0]
    assert dims[f"dim:{k}/orders.ordered_at"] == {"type": "temporal", "cardinality": days}
    assert dims[f"dim:{k}/customers.region"]["type"] == "spatial"
    assert {(s, d) for (t, s, d) in edges if t == "USES"} == {
        (f"metric:{k}/MINI-HEALTH-001", f"metric:{k}/MINI-SAT-001"),
        (f"metric:{k}/MINI-HEALTH-001", f"metric:{k}/MINI-AOV-001"),
    }
    phone = edges[("MODIFIES", f"rule:{k}/MINI-R-PHONE", f"metric:{k}/MINI-SAT-001")]
    assert json.loads(phone["op"])["predicate"] == "o.channel = 'phone'"
    assert phone["verified"] is True
    assert "customers.plan=basic" in phone["changed_slices"]
    applies = edges[("APPLIES_WHEN", f"rule:{k}/MINI-R-PHONE", f"dim:{k}/customers.plan")]
    assert applies == {"value": "basic"}
    rule = nodes[f"rule:{k}/MINI-R-STRICT"]
    assert (rule["version"], rule["effects_source"], rule["labels"]) == ("1", "front_matter", ["Rule"])
    # READS lists the columns of the table the metric's SQL reads (extraction's candidates go by them).
    assert edges[("READS", f"metric:{k}/MINI-SAT-001", f"table:{k}/orders")] == {
        "columns": ["customer_id", "ordered_at", "rating"]}
    assert edges[("READS", f"metric:{k}/MINI-SAT-001", f"table:{k}/customers")] == {"columns": ["customer_id"]}


def test_second_ingest_writes_nothing(shape_report: IngestReport, shape_pack: Path, graph: Graph,
                                      warehouse: Warehouse) -> None:
    # 1 domain, 2 tables, 4 dimensions, 5 metrics, 4 rules, 4 rule versions
    assert shape_report.counters["nodes_created"] == 20
    before = snapshot(graph, "mini_ti_shape")
    again = _ingest(shape_pack, graph, warehouse)
    assert again.counters == {}
    assert snapshot(graph, "mini_ti_shape") == before


# ----------------------------------------------------------------------------- one-document edit
def test_one_document_edit_touches_only_that_rule(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    k = "mini_ti_edit"
    root = copy_pack(tmp_path / "pack", k)
    first = _ingest(root, graph, warehouse)
    assert first.failures == []
    nodes0, edges0 = snapshot(graph, k)
    rule = f"rule:{k}/MINI-R-STRICT"
    old_version = next(dst for (t, src, dst) in edges0 if t == "CURRENT_VERSION" and src == rule)

    def stricter(front: dict) -> None:
        front["version"] = "2"
        front["effects"][0]["value"] = 3  # good_rating 4 -> 3 from June 2024 (was 5)

    edit_front(root / "rules" / "strict.md", stricter)
    report = _ingest(root, graph, warehouse)
    assert report.failures == []
    assert (report.verified, report.unverified) == (5, 0)
    nodes1, edges1 = snapshot(graph, k)

    new_version = next(dst for (t, src, dst) in edges1 if t == "CURRENT_VERSION" and src == rule)
    assert new_version != old_version
    assert diff_keys(nodes0, nodes1) == {rule, new_version}
    assert diff_keys(edges0, edges1) == {
        ("HAS_VERSION", rule, new_version),
        ("CURRENT_VERSION", rule, old_version),  # moved ...
        ("CURRENT_VERSION", rule, new_version),  # ... to the new version
        ("MODIFIES", rule, f"metric:{k}/MINI-SAT-001"),
    }
    assert report.counters["nodes_created"] == 1
    assert report.counters["relationships_created"] == 2
    assert report.counters["relationships_deleted"] == 1
    assert "nodes_deleted" not in report.counters
    # The previous version stays retrievable, unchanged, through HAS_VERSION.
    assert ("HAS_VERSION", rule, old_version) in edges1
    assert nodes1[old_version] == nodes0[old_version]
    assert json.loads(nodes1[old_version]["effects_json"])[0]["value"] == 5
    assert json.loads(nodes1[new_version]["effects_json"])[0]["value"] == 3
    assert (nodes1[new_version]["version"], nodes1[rule]["version"]) == ("2", "2")
    assert json.loads(edges1[("MODIFIES", rule, f"metric:{k}/MINI-SAT-001")]["op"])["value"] == 3
    listed = {r["rule_id"]: r for r in rules_for(graph, "MINI-SAT-001", k)}
    assert listed["MINI-R-STRICT"]["version"] == "2"
    assert listed["MINI-R-STRICT"]["content_hash"] == nodes1[new_version]["hash"][:12]

    # Restoring the original text makes the old version current again, without a third version node.
    (root / "rules" / "strict.md").write_text((MINIPACK / "rules" / "strict.md").read_text())
    back = _ingest(root, graph, warehouse)
    assert "nodes_created" not in back.counters
    nodes2, edges2 = snapshot(graph, k)
    assert ("CURRENT_VERSION", rule, old_version) in edges2
    assert ("CURRENT_VERSION", rule, new_version) not in edges2
    assert {("HAS_VERSION", rule, old_version), ("HAS_VERSION", rule, new_version)} <= set(edges2)


# ----------------------------------------------------------------------------- all or nothing
def test_malformed_front_matter_names_file_and_field_and_changes_nothing(
        tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    k = "mini_ti_bad"
    root = copy_pack(tmp_path / "pack", k)
    _ingest(root, graph, warehouse)
    before = snapshot(graph, k)
    edit_front(root / "rules" / "strict.md", lambda f: f.update(effective_date="someday in June"))

    with pytest.raises(PackErrors) as info:
        load_pack(root)
    [err] = info.value.errors
    assert err.file.endswith("rules/strict.md")
    assert err.field == "effective_date"

    # ingest leaves the refused document out in one line and goes on; the graph keeps what it had of it
    result = CliRunner().invoke(main, ["ingest", str(root)])
    assert result.exit_code == 0, result.output
    assert "left out" in result.output and "rules/strict.md: effective_date:" in result.output
    assert snapshot(graph, k) == before


def test_document_with_a_bad_effect_is_left_out_whole(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    """A document that passes the front-matter schema but names an unknown metric in its second
    effect fails alone: its node and edges stay as they were, other documents still update."""
    k = "mini_ti_bad2"
    root = copy_pack(tmp_path / "pack", k)
    _ingest(root, graph, warehouse)
    nodes0, edges0 = snapshot(graph, k)

    edit_front(root / "rules" / "outliers.md", lambda f: f["effects"][1].update(metric="MINI-NOPE-001"))
    edit_front(root / "rules" / "phone.md", lambda f: f.update(version="2"))
    report = _ingest(root, graph, warehouse)

    [failure] = report.failures
    assert "rules/outliers.md: effects.1.metric: unknown metric 'MINI-NOPE-001'" in failure
    nodes1, edges1 = snapshot(graph, k)
    outliers = f"rule:{k}/MINI-R-OUTLIER"
    assert nodes1[outliers] == nodes0[outliers]
    assert {e: p for e, p in edges1.items() if e[1] == outliers} == {e: p for e, p in edges0.items() if e[1] == outliers}
    assert nodes1[f"rule:{k}/MINI-R-PHONE"]["version"] == "2"


# ----------------------------------------------------------------------------- LLM extraction
def test_llm_malformed_then_valid_reply_is_ingested_with_effects(tmp_path: Path, graph: Graph,
                                                                 warehouse: Warehouse) -> None:
    k = "mini_ti_llm_a"
    llm = FakeListChatModel(responses=["Sure! Here are the effects: {effects: [oops", GOOD_REPLY])
    report = _ingest(_llm_pack(tmp_path, k), graph, warehouse, llm)
    assert report.failures == []
    assert llm.i == 0  # both replies consumed: one retry
    assert (report.verified, report.unverified) == (6, 0)
    nodes, edges = snapshot(graph, k)
    assert nodes[f"rule:{k}/MINI-R-LLM"]["effects_source"] == "llm"
    edge = edges[("MODIFIES", f"rule:{k}/MINI-R-LLM", f"metric:{k}/MINI-AOV-001")]
    assert edge["verified"] is True
    assert json.loads(edge["op"]) == {"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.amount > 2000"}


def test_llm_always_malformed_fails_that_document_only(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    k = "mini_ti_llm_b"
    root = _llm_pack(tmp_path, k)
    llm = FakeListChatModel(responses=[f"not json, attempt {i}" for i in range(1, 7)])
    report = _ingest(root, graph, warehouse, llm)
    [failure] = report.failures
    assert "rules/llm.md: effects: LLM reply malformed after 3 attempts: no JSON object in the reply" in failure
    nodes, _ = snapshot(graph, k)
    assert f"rule:{k}/MINI-R-LLM" not in nodes
    assert {n for n in nodes if n.startswith("rule:")} == {
        f"rule:{k}/MINI-R-OUTLIER", f"rule:{k}/MINI-R-PHONE", f"rule:{k}/MINI-R-PRIVACY", f"rule:{k}/MINI-R-STRICT"}
    assert graph_stats(graph, k)["edges"]["MODIFIES"] == 5

    llm = FakeListChatModel(responses=[f"not json, attempt {i}" for i in range(1, 7)])
    with pytest.raises(ExtractionError, match=r"rules/llm\.md: effects: LLM reply malformed after 3 attempts"):
        extract_effects(load_pack(root).rule("MINI-R-LLM"), load_pack(root), llm, graph)
    assert llm.i == 3  # bounded: 1 call + 2 retries, then it stops asking


def test_llm_naming_a_wrong_metric_gives_an_unverified_edge(tmp_path: Path, graph: Graph,
                                                           warehouse: Warehouse) -> None:
    k = "mini_ti_llm_c"
    report = _ingest(_llm_pack(tmp_path, k), graph, warehouse, FakeListChatModel(responses=[WRONG_REPLY]))
    assert report.failures == []
    assert (report.verified, report.unverified) == (5, 1)
    assert report.unverified_edges == ["MINI-R-LLM -> MINI-REV-001"]
    _, edges = snapshot(graph, k)
    edge = edges[("MODIFIES", f"rule:{k}/MINI-R-LLM", f"metric:{k}/MINI-REV-001")]
    assert (edge["verified"], edge["changed_slices"]) == (False, [])
    assert edge["slices_checked"] == 8  # all, region, plan, channel, month, and the three by month
    [listed] = [r for r in rules_for(graph, "MINI-REV-001", k) if r["rule_id"] == "MINI-R-LLM"]
    assert listed["verified"] is False


def test_no_llm_and_no_effects_warns_and_ingests_the_rule_bare(tmp_path: Path, graph: Graph, warehouse: Warehouse,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    k = "mini_ti_llm_d"
    root = _llm_pack(tmp_path, k)
    report = _ingest(root, graph, warehouse, None)
    assert report.failures == []
    [warning] = report.warnings
    assert "rules/llm.md: no effects in front matter and no LLM configured" in warning
    nodes, edges = snapshot(graph, k)
    rule = f"rule:{k}/MINI-R-LLM"
    assert nodes[rule]["effects_source"] == "none"
    assert [e for e in edges if e[1] == rule and e[0] in {"MODIFIES", "APPLIES_WHEN"}] == []
    assert {e[0] for e in edges if e[1] == rule} == {"HAS_VERSION", "CURRENT_VERSION"}

    monkeypatch.setattr(get_settings(), "llm_provider", None)
    result = CliRunner().invoke(main, ["ingest", str(root)])
    assert result.exit_code == 0, result.output
    assert "rules/llm.md: no effects in front matter and no LLM configured" in result.output
    assert "graph writes: no changes" in result.output


def test_a_categorical_dimension_of_fractional_numbers_is_ingested_as_numeric(warehouse: Warehouse,
                                                                               tmp_path: Path) -> None:
    root = copy_pack(tmp_path / "pack", "mini_amounts")
    spec = yaml.safe_load((root / "pack.yaml").read_text())
    spec["dimensions"] += [{"column": "orders.amount", "type": "categorical", "label": "order amount"},
                           {"column": "orders.rating", "type": "categorical", "label": "order rating"}]
    (root / "pack.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    ensure_mini_loaded(warehouse)
    plan = plan_schema(load_pack(root), warehouse)
    kinds = {d["props"]["column"]: d["props"]["type"] for d in plan.dimensions}
    assert kinds["orders.amount"] == "numeric"  # numeric(10,2): "for the 18.02 order amount" is no slice
    assert kinds["orders.rating"] == kinds["orders.channel"] == "categorical"  # whole numbers stay as declared
    assert plan.warnings == [f"{root}/pack.yaml: dimension orders.amount is declared categorical but holds fractional "
                             "numbers: ingested as numeric (no task slices a metric by one of its values)"]
