"""The policy of a metric: composition order, conflicts and `supersedes` (pure), their report by
`domain validate` and `ingest`, and gold answers that apply the whole policy on the mini pack
(generated, then checked against the test's own computation in Python)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dibench.core.models import LLMEffects
from dibench.core.pack import load_pack
from dibench.evaluation.tasks import load_tasks
from dibench.generation.pipeline import generate
from dibench.ingest.pipeline import ingest_pack
from dibench.ingest.validate import validate_pack
from dibench.service.queries import rules_for
from dibench.sqlops.dialect import parse, render
from dibench.sqlops.ops import Bound, apply_effects
from dibench.sqlops.policy import conflicts, metric_policy
from dibench.stores.graph import Graph
from dibench.stores.policies import policy_of
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, edit_front, ensure_mini_loaded

M = "MINI-REV-001"


def eff(**kw: Any) -> Any:
    return LLMEffects.model_validate({"effects": [{"metric": M, **kw}]}).effects[0]


OVERRIDE_A = eff(op="override", expression="SUM(o.amount) * 0.9")
OVERRIDE_B = eff(op="override", expression="SUM(o.amount) * 0.8")


# ------------------------------------------------------------------------------ pure
def test_two_overrides_conflict_and_disjoint_slices_do_not() -> None:
    assert [(c.rule_a, c.rule_b) for c in conflicts(M, [("A", OVERRIDE_A), ("B", OVERRIDE_B)])] == [("A", "B")]
    north = eff(op="override", expression="SUM(o.amount)", applies_when={"dimension": "customers.region", "value": "north"})
    south = eff(op="override", expression="SUM(o.amount)", applies_when={"dimension": "customers.region", "value": "south"})
    assert conflicts(M, [("A", north), ("B", south)]) == []


@pytest.mark.parametrize(("a", "b", "clash"), [
    (eff(op="threshold", param="p", value=1), eff(op="threshold", param="p", value=2), True),
    (eff(op="threshold", param="p", value=1), eff(op="threshold", param="q", value=2), False),
    (eff(op="override", expression="SUM(o.amount)"), eff(op="weight", weight="2"), True),
    (eff(op="override", expression="SUM(o.amount)"), eff(op="adjust", column="o.amount", expression="o.amount"), True),
    (eff(op="adjust", column="o.amount", expression="o.amount * 2"),
     eff(op="adjust", column="o.amount", expression="o.amount + 1"), True),
    (eff(op="exclude", predicate="o.amount > 1"), eff(op="where", predicate="o.amount < 9"), False),
    (eff(op="weight", weight="2"), eff(op="weight", weight="3"), False),
    (eff(op="suppress", min_n=5), eff(op="having", predicate="COUNT(*) > 2"), False),
], ids=["threshold-same-param", "threshold-other-param", "override-weight", "override-adjust", "adjust-adjust",
        "filters", "weights", "post-aggregation"])
def test_which_pairs_conflict(a: Any, b: Any, clash: bool) -> None:
    assert bool(conflicts(M, [("A", a), ("B", b)])) is clash


def test_supersedes_resolves_and_gives_precedence() -> None:
    p = metric_policy(M, [("A", OVERRIDE_A), ("B", OVERRIDE_B)], {"B": "A"})
    assert p.complete and p.winners == ("B",) and p.superseded == ("A",)
    # the winner's override is applied last: it is the value
    metric = load_pack(Path(__file__).parent / "fixtures" / "minipack").metric_by_id[M]
    gold = apply_effects(Bound(parse(metric.sql)), list(p.entries), metric, frozenset(p.winners))
    assert "0.8" not in render(gold.tree)  # values are bound parameters ...
    assert list(gold.params.values())[-1] == "0.8"  # ... and B's is bound last, outermost
    # a superseded rule's effects that precedence cannot order leave the policy on that metric
    q = metric_policy(M, [("A", eff(op="exclude", predicate="o.amount > 1")), ("B", OVERRIDE_B)], {"B": "A"})
    assert q.rule_ids == ("B",)


def test_composition_order_is_documented_order() -> None:
    metric = load_pack(Path(__file__).parent / "fixtures" / "minipack").metric_by_id[M]
    effects = [("Z", eff(op="suppress", min_n=3)), ("Y", eff(op="override", expression="SUM(o.amount) * 2")),
               ("X", eff(op="exclude", predicate="o.amount > 5")),
               ("W", eff(op="adjust", column="o.amount", expression="o.amount / 2"))]
    sql = render(apply_effects(Bound(parse(metric.sql)), effects, metric).tree)
    # the override replaced the value after the adjustment: no halved amount is left in the value
    assert "/ :r_w_0" not in sql.split(" AS value")[0]
    assert "HAVING COUNT(*) >= :r_z_min_n" in sql and "NOT COALESCE((o.amount > :r_x_0), FALSE)" in sql


# ------------------------------------------------------------------------------ validate and ingest
def conflicting_pack(tmp_path: Path, name: str) -> Path:
    root = copy_pack(tmp_path / name, name)

    def two_overrides(front: dict[str, Any], factor: str) -> None:
        front["effects"].append({"metric": M, "op": "override", "expression": f"SUM(o.amount) * {factor}"})

    edit_front(root / "rules" / "outliers.md", lambda f: two_overrides(f, "0.9"))
    edit_front(root / "rules" / "phone.md", lambda f: two_overrides(f, "0.8"))
    return root


def test_validate_refuses_two_overrides_naming_both_documents(tmp_path: Path, warehouse: Warehouse) -> None:
    ensure_mini_loaded(warehouse)
    root = conflicting_pack(tmp_path, "mini_conflict")
    _, problems = validate_pack(root, warehouse)
    lines = [str(p) for p in problems]
    assert len(lines) == 1, lines
    assert "outliers.md" in lines[0] and "phone.md" in lines[0] and M in lines[0] and "\n" not in lines[0]
    edit_front(root / "rules" / "phone.md", lambda f: f.update(supersedes="MINI-R-OUTLIER"))
    assert validate_pack(root, warehouse)[1] == []


@pytest.fixture()
def conflict_domain(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> Iterator[Path]:
    ensure_mini_loaded(warehouse)
    delete_domain(graph, "mini_conflict_i")
    yield conflicting_pack(tmp_path, "mini_conflict_i")
    delete_domain(graph, "mini_conflict_i")


def test_ingest_reports_the_conflict_and_generation_skips_the_metric(conflict_domain: Path, graph: Graph,
                                                                    warehouse: Warehouse) -> None:
    pack = load_pack(conflict_domain)
    report = ingest_pack(pack, graph, warehouse)
    assert [f for f in report.failures if "policy conflict" in f and M in f]
    assert not policy_of(graph, pack.name, M).complete
    summary = generate(pack, graph, target=4, seed=1, min_per_type=0)
    assert M in summary.skipped_metrics
    assert all(t.metric_ids != [M] for t in load_tasks(graph, pack.name, statuses=("admitted", "rejected")))
    # resolved by `supersedes`: the metric is generated again, under B's precedence
    edit_front(conflict_domain / "rules" / "phone.md", lambda f: f.update(supersedes="MINI-R-OUTLIER"))
    pack = load_pack(conflict_domain)
    report = ingest_pack(pack, graph, warehouse)
    assert not [f for f in report.failures if "policy conflict" in f]
    assert policy_of(graph, pack.name, M).complete
    rows = {r["rule_id"]: r["policy"] for r in rules_for(graph, M, pack.name)}
    assert rows["MINI-R-PHONE"] == "applied" and rows["MINI-R-OUTLIER"] == "applied (partly superseded)"


# ------------------------------------------------------------------------------ gold under the whole policy
@pytest.fixture(scope="module")
def mini_generated(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[str]:
    ensure_mini_loaded(warehouse)
    name = "mini_policy"
    delete_domain(graph, name)
    pack = load_pack(copy_pack(tmp_path_factory.mktemp(name) / "pack", name))
    ingest_pack(pack, graph, warehouse)
    generate(pack, graph, target=12, seed=7, min_per_type=0)
    yield name
    delete_domain(graph, name)


def test_rule_tasks_record_policy_featured_and_decisive_rules(mini_generated: str, graph: Graph) -> None:
    tasks = [t for t in load_tasks(graph, mini_generated, variants=["standard"]) if t.analysis_type != "knowledge_retrieval"]
    assert tasks
    sat = [t for t in tasks if t.metric_ids == ["MINI-SAT-001"]]
    assert sat and all(len(t.policy) == 3 for t in sat)  # phone, privacy, strict: all in force
    for t in tasks:
        assert set(t.rule_ids) == set(t.decisive_rules)  # USES_RULE goes to the decisive rules
        assert set(t.decisive_rules) <= {p.split("@")[0] for p in t.policy}
        if t.featured_rule is not None:
            assert t.featured_rule in t.decisive_rules  # the counterfactual filter
            assert t.lifted_answer is not None and t.lifted_answer != t.gold_answer
        if t.tier == "K+A+R":  # the policy changes the answer
            assert t.base_answer is not None and t.base_answer != t.gold_answer
        else:
            assert not t.decisive_rules


# ------------------------------------------------------------------------------ derived (composite) metrics
DERIVED = {"id": "MINI-HEALTH-002", "name": "Commercial health index (derived)", "tier": 3,
           "description": "Half the satisfaction rate plus a tenth of the average order value.",
           "formula": "0.5 x satisfaction rate + 0.1 x average order value",
           "derived": {"expression": "0.5 * sat + 0.1 * aov", "inputs": {"sat": "MINI-SAT-001", "aov": "MINI-AOV-001"}},
           "dimensions": ["customers.region", "customers.plan"], "unit": "score"}


def component_value(pack: Any, metric_id: str, graph: Graph, warehouse: Warehouse, facts: dict[str, Any],
                    dimension: str | None) -> float | None:
    """One input under every verified rule edge of the graph, on the task's window and slice."""
    import datetime as dt

    from dibench.sqlops.shape import filter_eq
    from dibench.sqlops.tree import column

    metric = pack.metric_by_id[metric_id]
    edges = graph.read("policy_edges", domain=pack.name, metrics=[metric_id])
    effects = [(e["rule_id"], eff) for e in edges
               for eff in LLMEffects.model_validate({"effects": _items(e["op"])}).effects]
    gold = apply_effects(Bound(parse(metric.template)), effects, metric)
    params = {"start_date": dt.date.fromisoformat(facts["start"]), "end_date": dt.date.fromisoformat(facts["end"]),
              **metric.params, **gold.params}
    tree = gold.tree
    if "group" in facts:
        assert dimension is not None
        tree = filter_eq(tree, column(tree, dimension), "slice_value")
        params["slice_value"] = facts["group"]
    rows = warehouse.execute_readonly(render(tree), params).rows
    return float(rows[0][0]) if rows and rows[0][0] is not None else None


def _items(op: str) -> list[Any]:
    import json

    data = json.loads(op)
    return data if isinstance(data, list) else [data]


@pytest.fixture(scope="module")
def derived_domain(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Any]:
    from tests.fixtures.packs import edit_metrics

    ensure_mini_loaded(warehouse)
    name = "mini_derived"
    delete_domain(graph, name)
    root = copy_pack(tmp_path_factory.mktemp(name) / "pack", name)
    edit_metrics(root, lambda ms: ms.append(dict(DERIVED)))
    pack = load_pack(root)
    assert validate_pack(root, warehouse)[1] == []
    assert not ingest_pack(pack, graph, warehouse).failures
    generate(pack, graph, target=10, seed=3, min_per_type=0)
    yield pack
    delete_domain(graph, name)


def test_a_derived_metric_applies_its_inputs_policies(derived_domain: Any, graph: Graph, warehouse: Warehouse) -> None:
    pack = derived_domain
    rows = {r["rule_id"]: r["policy"] for r in rules_for(graph, "MINI-HEALTH-002", pack.name)}
    assert rows["MINI-R-STRICT"] == "applied (through its inputs)" and rows["MINI-R-OUTLIER"].startswith("applied")
    plain = {r["rule_id"]: r["policy"] for r in rules_for(graph, "MINI-HEALTH-001", pack.name)}
    assert set(plain.values()) == {"informative"}  # a composite written as its own SQL
    tasks = [t for t in load_tasks(graph, pack.name, variants=["standard"]) if t.metric_ids == ["MINI-HEALTH-002"]]
    points = [t for t in tasks if t.analysis_type in ("point_query", "threshold_crossing")]
    assert points, [t.analysis_type for t in tasks]
    for t in points:
        sat = component_value(pack, "MINI-SAT-001", graph, warehouse, t.facts, t.dimension)
        aov = component_value(pack, "MINI-AOV-001", graph, warehouse, t.facts, t.dimension)
        want = None if sat is None or aov is None else round(0.5 * sat + 0.1 * aov, 2)
        assert t.gold_answer["value"] == want, t.task_id
    assert any(t.tier == "K+A+R" for t in tasks)


def test_update_of_an_input_rule_changes_the_derived_gold(derived_domain: Any, graph: Graph,
                                                         warehouse: Warehouse) -> None:
    from dibench.service.update import load_document, plan_update
    from dibench.service.update_write import run_update

    pack = derived_domain
    on_derived = {t.task_id for t in load_tasks(graph, pack.name, variants=["standard"])
                  if t.metric_ids == ["MINI-HEALTH-002"]}
    path = pack.root / "rules" / "strict.md"
    edit_front(path, lambda f: f["effects"][0].__setitem__("value", 3))
    pk, doc = load_document(path)
    plan, _ = run_update(lambda: plan_update(pk, doc, graph, warehouse), graph, pk.name)
    changed = {t["key"]: t for t in plan.changelog()["tasks"]}
    assert on_derived <= set(changed)
    assert any(changed[k]["action"] == "updated" for k in on_derived)


# ------------------------------------------------------------------------------ rules without effects, migration
def test_a_rule_without_effects_makes_the_policy_unknown(tmp_path: Path, graph: Graph, warehouse: Warehouse) -> None:
    from dibench.service.export import ExportQuery, export

    ensure_mini_loaded(warehouse)
    name = "mini_unknown"
    delete_domain(graph, name)
    root = copy_pack(tmp_path / name, name)
    (root / "rules" / "refund.md").write_text(
        "---\nid: MINI-R-REFUND\ntitle: Refunded orders and the Revenue figure\nversion: '1'\n"
        "effective_date: 2024-01-01\nowner: Finance\nrule_type: exclusionary\n---\n"
        + "Refunded orders are reported apart from Revenue, which finance restates every quarter. " * 8)
    try:
        pack = load_pack(root)
        report = ingest_pack(pack, graph, warehouse)
        assert [w for w in report.warnings if "refund.md" in w and "MINI-REV-001" in w and "skips" in w]
        policy = policy_of(graph, name, "MINI-REV-001")
        assert not policy.complete and policy.state.unknown == ("MINI-R-REFUND",)
        summary = generate(pack, graph, target=4, seed=2, min_per_type=0)
        assert "MINI-REV-001" in summary.skipped_metrics and "MINI-R-REFUND" in summary.skipped_metrics["MINI-REV-001"]
        manifest = export(graph, warehouse, ExportQuery("MATCH (t:Task) WHERE t.domain = $d RETURN t.key AS key",
                                                        {"d": name}), "jsonl", tmp_path / "out", domain=name,
                          audience="private")  # user Cypher is private-only
        assert [p["metric"] for p in manifest["incomplete_policies"][name]] == ["MINI-REV-001"]
    finally:
        delete_domain(graph, name)


def test_tasks_of_the_old_gold_meaning_are_retired_on_regeneration(mini_generated: str, graph: Graph) -> None:
    """(Last in this module: it retires the module's generated tasks.)"""
    from tests.fixtures.packs import snapshot

    graph.write("test_set_gold_version", domain=mini_generated, version=None)  # as the one-rule code left them
    before = {k for k, v in snapshot(graph, mini_generated)[0].items() if "Task" in v["labels"]
              and v["status"] == "admitted"}
    from dibench.generation.pipeline import migrate

    retired = migrate(graph, mini_generated, "run:test/migration")
    nodes = snapshot(graph, mini_generated)[0]
    assert retired == len(before)
    assert all(nodes[k]["status"] == "retired" and "gold meaning changed" in nodes[k]["retired_reason"] for k in before)
    assert [n for n in nodes.values() if "GoldMigration" in n["labels"] and n["retired"] == retired]
    assert migrate(graph, mini_generated, "run:test/again") == 0  # nothing of the old meaning is left
