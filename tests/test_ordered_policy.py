"""Ordered composition: the freight pack's US freight is first taken net of a 10% surcharge (a
row-level `adjust` on the USA slice), then capped at 500 (a second `adjust` of the same column,
with `after:` the surcharge rule). On real Neo4j and PostgreSQL: the policy is complete and
ordered, its gold equals the test's own SQL (written here, rounded with Decimal half up), rules-for,
impact, the export manifest and update-rule follow the same order, and the same pack without
`after:` is a policy conflict that `domain validate` refuses."""
from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.models import AdjustEffect
from dibench.core.pack import Pack, load_pack
from dibench.evaluation.tasks import TaskRecord, load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.database import load_database
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.validate import validate_pack
from dibench.service.export import ExportQuery, export, preset_query
from dibench.service.impact import impact
from dibench.service.queries import rules_for
from dibench.service.update import load_document, plan_update
from dibench.service.update_write import run_update
from dibench.sqlops.ops import policy_order, tree_order
from dibench.sqlops.policy import conflicts
from dibench.stores.graph import Graph
from dibench.stores.pack_data import schema_columns
from dibench.stores.policies import policy_of
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, edit_front

FREIGHTPACK = Path(__file__).resolve().parent / "fixtures" / "freightpack"
DOMAIN = "freight_order_t"
SURCHARGE, CAP = "FR-R-US-SURCHARGE", "FR-R-CAP"
METRIC = "FR-TOTAL-001"

# The policy as its two documents state it, written by hand: net of the surcharge first, then the cap.
FREIGHT_SQL = """
SELECT {group} AS grp,
       SUM(LEAST(CASE WHEN c.country = 'USA' THEN o.freight / 1.1 ELSE o.freight END, :cap)) AS value
FROM freight.orders o JOIN freight.customers c ON c.customer_id = o.customer_id
WHERE o.shipped_at >= :start AND o.shipped_at < :end
GROUP BY 1
"""
# What the other order (capped first, then net) would give: the test shows that the order matters.
CAP_FIRST_SQL = FREIGHT_SQL.replace(
    "LEAST(CASE WHEN c.country = 'USA' THEN o.freight / 1.1 ELSE o.freight END, :cap)",
    "CASE WHEN c.country = 'USA' THEN LEAST(o.freight, :cap) / 1.1 ELSE LEAST(o.freight, :cap) END")
GROUPS = {"customers.country": "c.country", "orders.carrier": "o.carrier", "orders.shipped_at": "'all'"}


def cents(v: Decimal | None) -> float | None:
    return None if v is None else float(v.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    original = load_pack(FREIGHTPACK)
    if "quotes" not in schema_columns(warehouse, original.schema):
        load_database(original, warehouse)
    delete_domain(graph, DOMAIN)
    pk = load_pack(copy_pack(tmp_path_factory.mktemp("freight") / "pack", DOMAIN, src=FREIGHTPACK))
    report = ingest_pack(pk, graph, warehouse)
    assert not report.failures and report.unverified == 0
    assert not [w for w in report.warnings if "conflict" in w]
    generate(pk, graph, target=6, seed=42, min_per_type=0)
    yield pk
    delete_domain(graph, DOMAIN)


def recomputed(wh: Warehouse, task: TaskRecord, cap: int = 500, sql: str = FREIGHT_SQL) -> dict[str, float | None]:
    assert task.dimension is not None
    rows = wh.execute_readonly(sql.format(group=GROUPS[task.dimension]),
                               {"start": task.facts["start"], "end": task.facts["end"], "cap": cap}, exact=True).rows
    return {str(g): cents(v) for g, v in rows}


def expected(wh: Warehouse, task: TaskRecord, cap: int = 500, sql: str = FREIGHT_SQL) -> dict[str, Any]:
    values = recomputed(wh, task, cap, sql)
    if task.analysis_type == "point_query":
        return {"value": values[str(task.facts.get("group", "all"))]}
    if task.analysis_type == "decomposition":
        return {"rows": [{"group": g, "value": v} for g, v in sorted(values.items())]}
    if task.analysis_type == "comparison":
        a, b = task.facts["group_a"], task.facts["group_b"]
        va, vb = values[a], values[b]
        assert va is not None and vb is not None
        return {"group_a": a, "group_b": b, "value_a": va, "value_b": vb,
                "higher": "equal" if va == vb else (a if va > vb else b)}
    if task.analysis_type == "ranking":
        ranked = sorted(((g, v) for g, v in values.items() if v is not None),
                        key=lambda gv: (-gv[1] if task.facts["higher_is_better"] else gv[1], gv[0]))
        return {"k": task.facts["k"], "rows": [{"group": g, "value": v} for g, v in ranked[:task.facts["k"]]]}
    assert task.analysis_type == "threshold_crossing"
    value = values[str(task.facts.get("group", "all"))]
    assert value is not None
    passes = value >= task.facts["threshold"] if task.facts["higher_is_better"] else value <= task.facts["threshold"]
    return {"value": value, "threshold": task.facts["threshold"], "result": "PASS" if passes else "FAIL"}


CHECKED = ("point_query", "decomposition", "comparison", "ranking", "threshold_crossing")


def freight_tasks(graph: Graph) -> list[TaskRecord]:
    return [t for t in load_tasks(graph, DOMAIN, variants=["standard"])
            if t.metric_ids == [METRIC] and t.analysis_type in CHECKED]


def test_the_stated_order_composes_instead_of_conflicting(pack: Pack, graph: Graph) -> None:
    policy = policy_of(graph, DOMAIN, METRIC)
    assert policy.complete and not policy.state.conflicts
    assert policy.order() == [SURCHARGE, CAP]
    entries = [(d.id, e) for d in pack.rules for e in d.front.effects or [] if e.metric == METRIC]
    assert [r for r, _ in policy_order(entries)] == [SURCHARGE, CAP]
    # the cap substitutes the column first, so the surcharge then feeds it the net amount
    assert [r for r, _ in tree_order(entries)] == [CAP, SURCHARGE]


def test_gold_equals_the_hand_written_policy(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    tasks = freight_tasks(graph)
    assert {t.analysis_type for t in tasks} >= {"point_query", "decomposition"}
    order_matters = 0
    for t in tasks:
        assert t.gold_answer == expected(warehouse, t), t.task_id
        order_matters += t.gold_answer != expected(warehouse, t, sql=CAP_FIRST_SQL)
    assert order_matters, "no task tells the two orders apart"


def test_rules_for_and_impact_show_the_order(pack: Pack, graph: Graph) -> None:
    rows = {r["rule_id"]: r for r in rules_for(graph, METRIC, DOMAIN)}
    assert (rows[SURCHARGE]["order"], rows[CAP]["order"]) == (1, 2)
    assert [m["policy_order"] for m in impact(graph, CAP, DOMAIN)["metrics"]] == [[SURCHARGE, CAP]]
    result = CliRunner().invoke(main, ["rules-for", METRIC, "--domain", DOMAIN])
    assert result.exit_code == 0, result.output
    assert f"applied in this order: {SURCHARGE} -> {CAP}" in result.output


def test_the_private_export_manifest_carries_the_order(pack: Pack, graph: Graph, warehouse: Warehouse,
                                                       tmp_path: Path) -> None:
    q = ExportQuery("MATCH (t:Task) WHERE t.domain = $d RETURN t.key AS key", {"d": DOMAIN})
    manifest = export(graph, warehouse, q, "jsonl", tmp_path / "private", domain=DOMAIN, audience="private")
    assert manifest["policy_order"][METRIC] == [SURCHARGE, CAP]
    assert manifest["invariants"]["one_answer_per_question"]["violations"] == 0
    public = export(graph, warehouse, preset_query("domain", {"domain": DOMAIN}), "jsonl", tmp_path / "public",
                    domain=DOMAIN)  # a public export selects by a preset or a filter only
    assert public["policy_order"] == {}  # rule ids would say which document to consult


def test_without_after_the_pack_is_a_conflict(pack: Pack, tmp_path: Path) -> None:
    root = copy_pack(tmp_path / "pack", "freight_noorder", src=FREIGHTPACK)
    edit_front(root / "rules" / "freight-cap.md", lambda f: f["effects"][0].pop("after"))
    _, problems = validate_pack(root)
    lines = [str(p) for p in problems]
    assert len(lines) == 1 and "policy conflict on metric FR-TOTAL-001" in lines[0] and "both adjust o.freight" in lines[0]
    result = CliRunner().invoke(main, ["domain", "validate", str(root)])
    assert result.exit_code == 1 and "policy conflict" in result.output
    # the same pair in the policy code: ordered, it composes; unordered, it conflicts
    cap = AdjustEffect(metric=METRIC, op="adjust", column="o.freight", expression="LEAST(o.freight, 500)")
    net = AdjustEffect(metric=METRIC, op="adjust", column="o.freight", expression="o.freight / 1.1")
    assert [c.rule_a for c in conflicts(METRIC, [(CAP, cap), (SURCHARGE, net)])] == [CAP]
    ordered = cap.model_copy(update={"after": SURCHARGE})
    assert conflicts(METRIC, [(CAP, ordered), (SURCHARGE, net)]) == []
    both = net.model_copy(update={"after": CAP})
    assert "each state" in conflicts(METRIC, [(CAP, ordered), (SURCHARGE, both)])[0].reason


def test_after_must_name_a_rule_of_the_same_metric(tmp_path: Path) -> None:
    root = copy_pack(tmp_path / "pack", "freight_badafter", src=FREIGHTPACK)
    edit_front(root / "rules" / "freight-cap.md", lambda f: f["effects"][0].update(after="FR-R-NOPE"))
    _, problems = validate_pack(root)
    assert any(p.field == "effects.0.after" and "unknown rule 'FR-R-NOPE'" in str(p) for p in problems)


def test_update_rule_rederives_in_the_same_order(pack: Pack, graph: Graph, warehouse: Warehouse) -> None:
    """(Last: it changes the cap to 450.) Every re-derived gold equals the hand-written policy with 450."""
    path = pack.root / "rules" / "freight-cap.md"
    edit_front(path, lambda f: (f.update(version="2"), f["effects"][0].update(expression="LEAST(o.freight, 450)")))
    pk, doc = load_document(path)
    plan, _ = run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, pk.name)
    assert plan.policy_order[METRIC] == [SURCHARGE, CAP]
    assert plan.counts()["updated"] > 0
    tasks = freight_tasks(graph)
    assert tasks
    for t in tasks:
        assert t.gold_answer == expected(warehouse, t, cap=450), t.task_id
    assert json.dumps(plan.changelog()["policy_order"])
