"""The pairing ablation on the real generated benchmark: graph / most similar / random rule, rule
operations applied on the tree and executed, determinism with a seed; and the matched-variant table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.contracts import AnswerContract
from dibench.evaluation.ablation import (
    PAIRINGS, PairingReport, PairingRun, RuleInfo, load_rules, metric_spec, pairing_ablation, random_rule, rule_tasks,
    similar_rule, variant_rows,
)
from dibench.evaluation.harness import evaluate
from dibench.evaluation.kb import Bm25Index
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def rep42(eval_domain: EvalDomain, graph: Graph, warehouse: Warehouse) -> PairingReport:  # noqa: F811
    return pairing_ablation(graph, warehouse, eval_domain.name, seed=42)


def test_pairing_ablation_runs_and_the_graph_rule_reproduces_gold(rep42: PairingReport) -> None:
    rep = rep42
    assert rep.tasks > 10
    rows = {r.pairing: r for r in rep.rows}
    assert tuple(rows) == PAIRINGS
    for r in rep.rows:
        assert r.pairings == rep.tasks
        assert r.changed + r.unchanged + r.not_applicable == r.pairings
        assert r.changed_pct == round(100.0 * r.changed / r.pairings, 1)
    # Admitted rule tasks passed the counterfactual filter: their own rule always changes the answer,
    # and applying it to the base SQL reproduces the stored gold answer.
    assert rows["graph"].changed_pct == 100.0
    assert rep.graph_reproduces_gold == rep.tasks
    assert len(rep.details) == 3 * rep.tasks
    own = {d.task_id: d.rule_ids for d in rep.details if d.pairing == "graph"}
    for d in rep.details:
        if d.pairing != "graph" and d.rule_ids:
            assert not set(d.rule_ids) & set(own[d.task_id])


def test_pairing_ablation_is_deterministic_with_a_seed(eval_domain: EvalDomain, graph: Graph,  # noqa: F811
                                                       warehouse: Warehouse, rep42: PairingReport) -> None:
    a = rep42
    b = pairing_ablation(graph, warehouse, eval_domain.name, seed=42)
    assert a.model_dump() == b.model_dump()
    c = pairing_ablation(graph, warehouse, eval_domain.name, seed=7)
    random_a = [d.rule_ids for d in a.details if d.pairing == "random"]
    random_c = [d.rule_ids for d in c.details if d.pairing == "random"]
    assert random_a != random_c  # the seed drives the random pairing ...
    assert [d for d in a.details if d.pairing != "random"] == [d for d in c.details if d.pairing != "random"]


def test_pre_filter_scope_adds_only_candidates_the_filter_rejected(eval_domain: EvalDomain, graph: Graph,  # noqa: F811
                                                                   warehouse: Warehouse, rep42: PairingReport) -> None:
    admitted = rep42
    both = pairing_ablation(graph, warehouse, eval_domain.name, include_rejected=True)
    assert both.tasks == admitted.tasks + both.tasks_rejected_by_filter
    graph_both = next(r for r in both.rows if r.pairing == "graph")
    # A candidate the filter rejected is one whose rule does not change the scored answer.
    assert graph_both.changed == admitted.tasks
    assert graph_both.unchanged == both.tasks_rejected_by_filter


def test_operations_that_do_not_fit_the_metric_are_not_applicable(eval_domain: EvalDomain, graph: Graph,  # noqa: F811
                                                                  warehouse: Warehouse) -> None:
    task = rule_tasks(graph, eval_domain.name, None, False)[0]
    metric = metric_spec(next(m["metric"] for m in graph.read("eval_metrics", domain=eval_domain.name)
                              if m["metric"]["id"] == task.metric_ids[0]))
    run = PairingRun(warehouse, task, metric, AnswerContract.model_validate(task.contract), None)
    unknown_param = RuleInfo("X-PARAM", "t", "b", ({"metric": "OTHER", "op": "threshold", "param": "nope", "value": 3},))
    outcome, reason, answer = run.outcome([unknown_param])
    assert (outcome, answer) == ("not_applicable", None)
    assert ":nope does not occur" in reason
    unknown_alias = RuleInfo("X-ALIAS", "t", "b", ({"metric": "OTHER", "op": "where", "predicate": "zz.flag = 1"},))
    outcome, reason, _ = run.outcome([unknown_alias])
    assert outcome == "not_applicable"
    assert "zz" in reason
    no_effect = RuleInfo("X-NONE", "t", "b", ())
    assert run.outcome([no_effect])[0] == "not_applicable"
    # A re-targeted operation that fits the metric is executed for real.
    keep_web = RuleInfo("X-WEB", "t", "b", ({"metric": "OTHER", "op": "where", "predicate": "o.channel = 'web'"},))
    assert run.outcome([keep_web])[0] in ("changed", "unchanged")


def test_similar_and_random_choices(eval_domain: EvalDomain, graph: Graph) -> None:  # noqa: F811
    rules = load_rules(graph, eval_domain.name)
    ids = sorted(r.id for r in rules)
    index = Bm25Index([f"{r.title}\n{r.body}" for r in rules])
    metrics = [metric_spec(m["metric"]) for m in graph.read("eval_metrics", domain=eval_domain.name)]
    for m in metrics:
        first = similar_rule(m, rules, index, set())
        assert first in ids
        second = similar_rule(m, rules, index, {first})
        assert second in ids
        assert second != first
    assert similar_rule(metrics[0], rules, index, set(ids)) is None
    assert random_rule("t1", rules, {ids[0]}, seed=1) == random_rule("t1", rules, {ids[0]}, seed=1)
    assert random_rule("t1", rules, {ids[0]}, seed=1) != ids[0]
    assert random_rule("t1", rules, set(ids), seed=1) is None


def test_ablation_commands(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "pairing.json"
    res = CliRunner().invoke(main, ["ablation", "pairing", "--domain", eval_domain.name, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "graph pairings reproducing the gold answer" in res.output
    saved = json.loads(out.read_text())
    assert [r["pairing"] for r in saved["rows"]] == list(PAIRINGS)
    assert [r["published_pct"] for r in saved["rows"]] == [82.0, 29.0, 22.0]
    res = CliRunner().invoke(main, ["ablation", "pairing", "--domain", "no_such_domain_x"])
    assert res.exit_code == 1
    assert "no_such_domain_x" in res.output


def test_matched_variants_table(eval_domain: EvalDomain, graph: Graph, warehouse: Warehouse,  # noqa: F811
                                tmp_path: Path) -> None:
    result = evaluate(graph, warehouse, domain=eval_domain.name, agent_name="no-rule", out_dir=tmp_path / "nr")
    rows = variant_rows(result.report)
    assert list(rows) == ["standard", "oracle", "no_rule"]
    # A counterfactual task asks about the policy itself and has no no-rule variant.
    assert rows["standard"].total == rows["oracle"].total >= rows["no_rule"].total > 0
    assert (rows["standard"].accuracy_pct, rows["oracle"].accuracy_pct, rows["no_rule"].accuracy_pct) == (0.0, 0.0, 100.0)
    res = CliRunner().invoke(main, ["ablation", "variants", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "no-rule @ " + eval_domain.name in res.output


def test_variants_command_rejects_a_folder_without_results(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["ablation", "variants", str(tmp_path)])
    assert res.exit_code == 1
    assert "no summary.json" in res.output
