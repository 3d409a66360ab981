"""Reference agents on a real generated benchmark (mini pack copy in the real Neo4j and Postgres):
the oracle scores 100%, the no-rule agent 0% on rule tasks and 100% on K+A tasks, keyword-dump
no knowledge task; answers are re-derived from executed rows exactly as generation derived them;
eval and score print each score's interval beside the reference agents' chance levels."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.answers import months
from dibench.evaluation.agents.reference import NoRuleAgent, OracleAgent, RetrievalOnlyAgent, every_value
from dibench.evaluation.agents.tools import Toolbox, schema_description
from dibench.evaluation.chance import ChanceLevels
from dibench.evaluation.harness import EvalResult, evaluate
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.rederive import DerivationError, derive_answer, hypothetical_statement, needs_base_rows
from dibench.evaluation.reporting_tables import Bucket, bucket
from dibench.evaluation.tasks import TaskRecord, public_view
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.evaldomain import EvalDomain, eval_domain, kb, tasks  # noqa: F401  (fixtures)


def _run(agent: str, domain: EvalDomain, graph: Graph, wh: Warehouse, out: Path) -> EvalResult:
    # the chance levels (three more reference agents) have their own test below
    return evaluate(graph, wh, domain=domain.name, agent_name=agent, out_dir=out, chance=False)


def _accuracy(result: EvalResult, tier: str, variant: str) -> Bucket:
    return bucket(t.verdict.passed for t in result.report.tasks if t.tier == tier and t.variant == variant)


def test_benchmark_has_every_tier_and_variant(tasks: list[TaskRecord]) -> None:
    assert {t.tier for t in tasks} == {"K", "K+A", "K+A+R"}
    assert {t.variant for t in tasks} == {"standard", "oracle", "no_rule"}
    assert len({t.analysis_type for t in tasks}) >= 7


def test_oracle_scores_100_percent(eval_domain: EvalDomain, graph: Graph, warehouse: Warehouse,  # noqa: F811
                                   tmp_path: Path) -> None:
    result = _run("oracle", eval_domain, graph, warehouse, tmp_path)
    failed = [(t.verdict.task_id, t.verdict.reason) for t in result.report.tasks if not t.verdict.passed]
    assert failed == []
    assert result.summary.accuracy_pct == 100.0
    assert result.summary.tasks == result.summary.answered > 50


def test_no_rule_scores_0_on_rule_tasks_and_100_on_k_plus_a(eval_domain: EvalDomain, graph: Graph,  # noqa: F811
                                                           warehouse: Warehouse, tmp_path: Path) -> None:
    result = _run("no-rule", eval_domain, graph, warehouse, tmp_path)
    standard_rule = _accuracy(result, "K+A+R", "standard")
    assert standard_rule.total > 10
    assert standard_rule.passed == 0
    assert _accuracy(result, "K+A+R", "oracle").passed == 0
    k_a = _accuracy(result, "K+A", "standard")
    assert k_a.total > 0
    assert k_a.passed == k_a.total
    no_rule_variant = _accuracy(result, "K+A+R", "no_rule")
    assert no_rule_variant.passed == no_rule_variant.total > 10
    # Every wrong rule-task answer is recognised as the answer without the rule.
    classes = {t.verdict.failure_class for t in result.report.tasks if t.tier == "K+A+R" and not t.verdict.passed}
    assert classes == {"rule_ignored"}
    assert {t.verdict.failure_class for t in result.report.tasks if t.tier == "K"} == {"no_answer"}


def test_featured_rule_only_is_wrong_exactly_where_another_rule_is_decisive(
        eval_domain: EvalDomain, graph: Graph, warehouse: Warehouse, tasks: list[TaskRecord],  # noqa: F811
        tmp_path: Path) -> None:
    """One-rule-at-a-time gold, as a reference agent: right where the decisive rules are at most the
    featured one, wrong (a rule ignored) where another rule of the policy changes the answer."""
    result = _run("featured-rule-only", eval_domain, graph, warehouse, tmp_path)
    by_id = {t.task_id: t for t in tasks}
    checked = 0
    for row in result.report.tasks:
        t = by_id[row.verdict.task_id]
        if t.variant != "standard" or t.analysis_type == "knowledge_retrieval":
            continue
        others = set(t.decisive_rules) - {t.featured_rule}
        if not others:
            assert row.verdict.passed, (t.task_id, row.verdict.reason)
        checked += 1
    assert checked > 20
    assert 0 < result.summary.accuracy_pct < 100.0


def test_retrieval_only_answers_knowledge_tasks_from_the_top_policy(eval_domain: EvalDomain,  # noqa: F811
                                                                    graph: Graph, warehouse: Warehouse,
                                                                    kb: KnowledgeBase, tasks: list[TaskRecord],
                                                                    tmp_path: Path) -> None:
    result = _run("retrieval-only", eval_domain, graph, warehouse, tmp_path)
    by_id = {t.task_id: t for t in tasks}
    rule_texts = {d.text for d in kb.documents if d.kind == "rule"}
    for tv in result.report.tasks:
        task = by_id[tv.verdict.task_id]
        if task.analysis_type != "knowledge_retrieval":
            assert tv.verdict.failure_class == "no_answer"
    answers = [line for line in (tmp_path / "answers.jsonl").read_text().splitlines() if '"text"' in line]
    assert answers, "knowledge tasks were answered"
    assert all(json.loads(a)["answer"]["text"] in rule_texts for a in answers)
    # a policy document pasted whole is no answer: it holds every competing candidate
    k = _accuracy(result, "K", "standard")
    assert k.total and k.passed == 0


def test_rederived_answers_equal_the_stored_gold_exactly(tasks: list[TaskRecord], warehouse: Warehouse,
                                                         kb: KnowledgeBase) -> None:
    """Same SQL, same analysis code: the oracle's answers are the generation's answers, not just close."""
    tools = Toolbox(warehouse, kb)
    checked = 0
    for task in tasks:
        if task.analysis_type == "knowledge_retrieval" or task.gold_sql is None:
            continue
        rows = tools.sql(task.gold_sql, task.params).rows
        other, other_params = hypothetical_statement(task)
        base = tools.sql(other, other_params).rows if needs_base_rows(task) and other else None
        assert derive_answer(task, rows, base) == task.gold_answer, task.task_id
        checked += 1
    assert checked > 50
    assert all(e["ok"] for e in tools.events)


def test_derivation_errors_name_the_task(tasks: list[TaskRecord]) -> None:
    trend = next(t for t in tasks if t.analysis_type == "trend_analysis")
    with pytest.raises(DerivationError, match=trend.task_id):
        # one period with a value: too few periods for an average; for a count, on the window's
        # calendar, an empty first month and no percent change
        derive_answer(trend, [(months(trend.facts["start"], trend.facts["end"])[-1], 1.0, 5)])
    knowledge = next(t for t in tasks if t.analysis_type == "knowledge_retrieval")
    with pytest.raises(DerivationError, match="not derived from rows"):
        derive_answer(knowledge, [])


def test_reference_agents_record_their_tool_calls(tasks: list[TaskRecord], warehouse: Warehouse,
                                                  kb: KnowledgeBase) -> None:
    task = next(t for t in tasks if t.analysis_type == "counterfactual" and t.variant == "standard")
    tools = Toolbox(warehouse, kb)
    run = OracleAgent().run(task, tools)
    assert run.stop_reason == "answered"
    assert [e["tool"] for e in tools.events] == ["sql_query", "sql_query"]  # gold rows and base rows
    assert run.tool_calls == 2
    no_rule_tools = Toolbox(warehouse, kb)
    assert NoRuleAgent().run(task, no_rule_tools).answer == task.base_answer
    assert [e["args"]["sql"] for e in no_rule_tools.events] == [task.base_sql]
    numeric = RetrievalOnlyAgent().run(task, Toolbox(warehouse, kb))
    assert numeric.answer is None
    assert numeric.stop_reason == "no_answer"


def test_public_view_hides_answers_and_sql(tasks: list[TaskRecord]) -> None:
    view = public_view(tasks[0])
    assert set(view) == {"task_id", "question", "answer_format"}


def test_knowledge_base_search_is_bm25_over_metrics_and_policies(kb: KnowledgeBase) -> None:
    kinds = {d.kind for d in kb.documents}
    assert kinds == {"metric", "rule"}
    rule = next(d for d in kb.documents if d.kind == "rule")
    hits = kb.search(rule.title, k=3)
    assert hits[0].doc_id == rule.doc_id
    assert [h.doc_id for h in kb.search(rule.title, k=3)] == [h.doc_id for h in hits]  # deterministic
    assert all(h.kind == "metric" for h in kb.search("revenue satisfaction order value", k=10, kind="metric"))
    assert kb.search("the of and", k=5) == []  # stop words only: no evidence
    assert "effects" not in rule.text and "predicate" not in rule.text  # the SQL operation is not given away
    revenue = kb.search("Revenue total order value", k=1, kind="metric")
    assert revenue
    assert "SELECT" in revenue[0].text


def test_schema_description_lists_tables_columns_and_keys(warehouse: Warehouse) -> None:
    text = schema_description(warehouse, "mini")
    assert "- orders(" in text
    assert "customer_id INTEGER" in text
    assert "foreign key: (customer_id) -> customers(customer_id)" in text


def test_keyword_dump_passes_no_knowledge_task(eval_domain: EvalDomain, graph: Graph, warehouse: Warehouse,  # noqa: F811
                                              kb: KnowledgeBase, tmp_path: Path) -> None:  # noqa: F811
    """Every number and date of every document, the same list for every knowledge task: it holds
    the facts, and is no typed answer (one number, date or name is asked) or a list with extras."""
    result = _run("keyword-dump", eval_domain, graph, warehouse, tmp_path)
    knowledge = result.report.by_analysis_type["knowledge_retrieval"]
    assert knowledge.total >= 1 and knowledge.passed == 0  # few: a knowledge task a lazy reader answers is refused
    line = every_value(kb)
    assert len(line.split()) > 10 and "2023-01-01" in line
    reasons = [t.verdict.reason for t in result.report.tasks if t.analysis_type == "knowledge_retrieval"]
    assert all(r.startswith("malformed: value is not a") or "extra or ambiguous item" in r or "items, a short list" in r
               for r in reasons), reasons
    assert {t.verdict.failure_class for t in result.report.tasks if t.analysis_type != "knowledge_retrieval"} == {
        "no_answer"}


def test_eval_and_score_print_intervals_beside_the_chance_levels(eval_domain: EvalDomain,  # noqa: F811
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    result = CliRunner().invoke(main, ["eval", "--agent", "oracle", "--domain", eval_domain.name, "-o", str(out)])
    assert result.exit_code == 0, result.output
    for column in ("95% CI", "no-rule %", "featured-rule-only %", "keyword-dump %"):
        assert column in result.output, result.output
    levels = ChanceLevels.model_validate_json((out / "chance.json").read_text())
    assert set(levels.agents) == {"no-rule", "featured-rule-only", "keyword-dump"}
    assert levels.agents["no-rule"].by_variant["no_rule"].accuracy_pct == 100.0
    assert levels.agents["no-rule"].by_tier["K"].passed == 0
    assert levels.agents["keyword-dump"].by_analysis_type["knowledge_retrieval"].passed == 0
    # score recomputes them on the file's own tasks: the same figures
    scored = CliRunner().invoke(main, ["score", str(out / "tasks.jsonl"), str(out / "answers.jsonl"), "--json"])
    assert scored.exit_code == 0, scored.output
    assert ChanceLevels.model_validate(json.loads(scored.stdout)["chance_levels"]) == levels
    plain = CliRunner().invoke(main, ["score", str(out / "tasks.jsonl"), str(out / "answers.jsonl"), "--no-chance"])
    assert plain.exit_code == 0 and "keyword-dump %" not in plain.output and "95% CI" in plain.output
