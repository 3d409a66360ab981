"""The generation pipeline end to end on a copy of the mini pack (domain `mini_gen1`, schema `mini`),
against the real Neo4j and Postgres: reproducibility, re-execution of stored SQL, the
counterfactual filter, provenance links, kept rejections and stage 2 skipped without an LLM.

Two runs with the same seed: the first through `generate()`, the second through `dibench generate`.
Task keys are deterministic, so the second run re-writes the same Task nodes: what the first run
wrote is read before the second starts. Only nodes of domain `mini_gen1` are created and deleted.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.answers import months
from dibench.core.keys import dimension_key, metric_key, rule_key, table_key
from dibench.core.pack import Pack, load_pack
from dibench.generation.analyses import (
    comparison, counterfactual, decomposition, point_query, ranking, registry, significance, threshold, trend,
)
from dibench.generation.fidelity import fidelity_problems
from dibench.generation.pipeline import RunSummary, generate
from dibench.generation.questions import CATALOG_ONLY
from dibench.generation.knowledge_admission import ANSWERED, LAZY
from dibench.generation.shortcut_gate import SHORTCUT
from dibench.generation.shortcuts.audit import ShortcutAudit
from dibench.generation.validation import NOT_DISCRIMINATIVE, STAGE1, rule_changes_answer
from dibench.generation.writeback import DUPLICATE
from dibench.ingest.pipeline import ingest_pack
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, delete_domain, ensure_mini_loaded, snapshot

DOMAIN = "mini_gen1"
SEED = 42
TARGET = 10
ALL_TYPES = {a.NAME for a in registry()}


@dataclass
class Generated:
    root: Path
    pack: Pack
    first: RunSummary
    first_tasks: list[dict[str, Any]]
    first_nodes: dict[str, dict[str, Any]]
    second: dict[str, Any]
    second_tasks: list[dict[str, Any]]


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Generated]:
    ensure_mini_loaded(warehouse)
    delete_domain(graph, DOMAIN)
    root = copy_pack(tmp_path_factory.mktemp("gen") / "pack", DOMAIN)
    pack = load_pack(root)
    report = ingest_pack(pack, graph, warehouse)
    assert report.verified == 5 and report.unverified == 0
    first = generate(pack, graph, target=TARGET, seed=SEED)
    first_tasks = graph.read("test_run_tasks", run=first.run_key)
    first_nodes, _ = snapshot(graph, DOMAIN)
    result = CliRunner().invoke(main, ["generate", str(root), "--target", str(TARGET), "--seed", str(SEED), "--json"])
    assert result.exit_code == 0, result.output
    second = json.loads(result.output[result.output.index("\n{") + 1:])
    second_tasks = graph.read("test_run_tasks", run=second["run_key"])
    yield Generated(root, pack, first, first_tasks, first_nodes, second, second_tasks)
    delete_domain(graph, DOMAIN)


def props(t: dict[str, Any], name: str) -> Any:
    raw = t["props"].get(name)
    return json.loads(raw) if isinstance(raw, str) and name in {"gold_answer", "base_answer", "gold_params",
                                                                 "base_params", "facts", "judge", "lifted_params",
                                                                 "lifted_answer", "featured_params"} else raw


def admitted(tasks: list[dict[str, Any]], variant: str | None = "standard") -> list[dict[str, Any]]:
    return [t for t in tasks if t["props"]["status"] == "admitted" and (variant is None or t["props"]["variant"] == variant)]


def task_set(tasks: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(t["props"]["analysis_type"], t["props"]["question"], t["props"]["gold_answer"]) for t in admitted(tasks)}


# ------------------------------------------------------------------------------ the run
def test_the_run_admits_all_nine_types_and_three_tiers(gen: Generated) -> None:
    s = gen.first
    assert set(s.by_type) == ALL_TYPES
    assert set(s.by_tier) == {"K", "K+A", "K+A+R"}
    assert s.admitted == len(admitted(gen.first_tasks)) >= 60
    assert s.rules_covered == s.rules_total == 4
    assert s.metrics_covered == 4
    assert 0 < s.sql_seconds < s.wall_seconds


def test_same_seed_gives_the_same_task_set(gen: Generated) -> None:
    first, second = task_set(gen.first_tasks), task_set(gen.second_tasks)
    assert first and first == second
    assert len(gen.first_tasks) == len(gen.second_tasks)
    assert {t["key"] for t in gen.first_tasks} == {t["key"] for t in gen.second_tasks}
    assert gen.second["admitted"] == gen.first.admitted
    assert gen.second["rejections_by_check"] == gen.first.rejections_by_check
    assert gen.second["run_key"] != gen.first.run_key


def test_a_run_says_how_many_earlier_tasks_it_leaves_admitted(gen: Generated) -> None:
    """A run that regenerates every task leaves none of the earlier run's; a smaller run leaves
    the tasks it did not regenerate admitted, and says so: eval serves them unless given --run."""
    assert gen.first.earlier_tasks == 0 and gen.second["earlier_tasks"] == 0
    result = CliRunner().invoke(main, ["generate", str(gen.root), "--target", "2", "--min-per-type", "0", "--new"],
                                terminal_width=400)
    assert result.exit_code == 0, result.output
    assert "admitted standard tasks of earlier runs" in result.output and "--run run:" in result.output, result.output


# ------------------------------------------------------------------------------ stored SQL
def derive(analysis: str, facts: dict[str, Any], rows: list[tuple[Any, ...]], base_rows: list[tuple[Any, ...]],
           digits: int) -> dict[str, Any] | None:
    """The answer rows give, with the analysis modules' own pure helpers and what the task fixed."""
    if analysis == "point_query":
        return point_query.answer(rows, digits)
    if analysis == "threshold_crossing":
        return threshold.answer(point_query.answer(rows, digits)["value"], facts["threshold"], facts["higher_is_better"])
    if analysis == "trend_analysis":
        if "empty_period" in facts:  # the window's calendar
            return trend.summarise(rows, digits, months(facts["start"], facts["end"]), facts["empty_period"])
        return trend.summarise(rows, digits)
    if analysis == "comparison":
        return comparison.answer(rows, facts["group_a"], facts["group_b"], digits)
    if analysis == "ranking":
        return ranking.answer(rows, facts["k"], facts["higher_is_better"], digits)
    if analysis == "significance_testing":
        if "empty_period" in facts:  # the window's calendar
            return significance.welch(rows, facts["group_a"], facts["group_b"], months(facts["start"], facts["end"]),
                                      facts["empty_period"])
        return significance.welch(rows, facts["group_a"], facts["group_b"])
    if analysis == "counterfactual":
        return counterfactual.answer(rows, base_rows, digits, groups=facts.get("all_groups"))
    if analysis == "decomposition":
        return decomposition.answer(rows, digits, facts.get("all_groups"))
    raise AssertionError(analysis)


def test_stored_gold_sql_reexecutes_to_the_stored_answer(gen: Generated, warehouse: Warehouse) -> None:
    checked: Counter[str] = Counter()
    for t in admitted(gen.first_tasks, variant=None):
        p = t["props"]
        if p["analysis_type"] == "knowledge_retrieval":
            assert p.get("gold_sql") is None  # answered from the document; Neo4j keeps no null property
            continue
        # the params as stored (JSON), not as generated: dates come back as strings
        rows = warehouse.execute_readonly(p["gold_sql"], props(t, "gold_params")).rows
        # The counterfactual's hypothetical side: the policy without the featured rule (the no-rule
        # variant's answer has no rule on either side).
        lifted = p.get("lifted_sql") and p["variant"] != "no_rule"
        base_rows = warehouse.execute_readonly(p["lifted_sql"], props(t, "lifted_params")).rows if lifted else \
            warehouse.execute_readonly(p["base_sql"], props(t, "base_params")).rows
        digits = gen.pack.metric_by_id[p["metric_id"]].rounding
        got = derive(p["analysis_type"], props(t, "facts"), rows, base_rows, digits)
        assert got == props(t, "gold_answer"), t["key"]
        checked[p["variant"]] += 1
        checked["oracle counterfactual"] += p["variant"] == "oracle" and p["analysis_type"] == "counterfactual"
    # A counterfactual asks about the policy itself: it has no no-rule variant.
    assert checked["standard"] > 40 and checked["oracle"] > 10
    assert checked["no_rule"] == checked["oracle"] - checked["oracle counterfactual"]


def test_rule_tasks_have_gold_different_from_base(gen: Generated) -> None:
    rule_tasks = [t for t in admitted(gen.first_tasks) if t["props"]["tier"] == "K+A+R"]
    assert rule_tasks
    for t in rule_tasks:
        gold, base = props(t, "gold_answer"), props(t, "base_answer")
        assert base is not None and gold != base, t["key"]
        digits = gen.pack.metric_by_id[t["props"]["metric_id"]].rounding
        assert rule_changes_answer(t["props"]["analysis_type"], gold, base, digits), t["key"]
        assert t["props"]["gold_sql"] != t["props"]["base_sql"]
        assert t["props"]["rule_ids"]
    for t in admitted(gen.first_tasks):
        if t["props"]["tier"] == "K+A":
            assert props(t, "base_answer") is None and not t["props"]["rule_ids"]
        if t["props"]["tier"] == "K":
            assert t["props"]["analysis_type"] == "knowledge_retrieval" and t["props"]["rule_ids"]


def test_no_rule_variant_carries_the_base_answer(gen: Generated) -> None:
    by_key = {t["key"]: t for t in gen.first_tasks}
    variants = admitted(gen.first_tasks, variant="no_rule")
    assert variants
    for v in variants:
        std = by_key[v["key"].rsplit(":", 1)[0]]
        assert props(v, "gold_answer") == props(std, "base_answer")
        assert v["props"]["gold_sql"] == std["props"]["base_sql"]
        # its own question: the standard one, asking in words for the catalog's definition alone
        assert v["props"]["question"] == f"{std['props']['question']} Answer {CATALOG_ONLY}."
        assert props(v, "facts")["catalog_only"] is True
    for o in admitted(gen.first_tasks, variant="oracle"):
        std = by_key[o["key"].rsplit(":", 1)[0]]
        assert props(o, "gold_answer") == props(std, "gold_answer")
        assert o["props"]["question"].startswith(std["props"]["question"])
        assert "Relevant policy text" in o["props"]["question"]


# ------------------------------------------------------------------------------ provenance
def test_every_task_links_to_its_provenance(gen: Generated) -> None:
    nodes = gen.first_nodes
    for t in gen.first_tasks:
        p = t["props"]
        assert p["domain"] == DOMAIN
        assert t["skeletons"] == [p["skeleton_key"]], t["key"]
        skeleton = nodes[p["skeleton_key"]]
        assert "Skeleton" in skeleton["labels"]
        assert t["runs"] == [gen.first.run_key] and p["run_key"] == gen.first.run_key
        assert t["metrics"] == [metric_key(DOMAIN, p["metric_id"])]
        assert t["dimensions"] == [dimension_key(DOMAIN, p["dimension"])]
        assert sorted(t["tables"]) == sorted(table_key(DOMAIN, x) for x in skeleton["tables"]) != []
        want_rules = [{"key": rule_key(DOMAIN, rid), "version": v.split("@", 1)[1].split("#")[0]}
                      for rid, v in zip(p["rule_ids"], p["rule_versions"])]
        assert sorted(t["rules"], key=str) == sorted(want_rules, key=str)
        assert len(t["rule_versions"]) == len(p["rule_ids"])
        for rid, vk in zip(sorted(p["rule_ids"]), sorted(t["rule_versions"])):
            assert vk.startswith(f"rulever:{DOMAIN}/{rid}@")
        if p["variant"] == "standard":
            assert t["variant_of"] == []
        else:
            assert t["variant_of"] == [t["key"].rsplit(":", 1)[0]]


def test_every_planned_skeleton_is_done_and_linked(gen: Generated, graph: Graph) -> None:
    plans = graph.read("test_run_plans", run=gen.first.run_key)
    assert len(plans) == gen.first.skeletons
    assert {p["state"] for p in plans} == {"done"}
    assert {p["claims"] for p in plans} == {1}
    assert {p["selected_by"].split(":")[0] for p in plans} >= {"mmr"}
    assert {t["props"]["skeleton_key"] for t in gen.first_tasks} <= {p["skeleton"] for p in plans}


# ------------------------------------------------------------------------------ validation
def test_rejected_candidates_are_kept_with_their_reasons(gen: Generated) -> None:
    rejected = [t for t in gen.first_tasks if t["props"]["status"] == "rejected"]
    assert rejected, "the mini pack always yields some non-discriminative rule candidates"
    # a copy of another task, a knowledge task a lazy reader answers, or a family a shortcut solves, is rejected after admission: with its variants
    late = {DUPLICATE, SHORTCUT, LAZY, ANSWERED}
    checks = {c.__name__ for c in STAGE1} | {"judge", NOT_DISCRIMINATIVE} | late
    counted: Counter[str] = Counter()
    for t in rejected:
        reasons = t["props"]["rejections"]
        assert reasons, t["key"]
        for r in reasons:
            check, _, why = r.partition(":")
            assert check in checks, r
            assert why.strip(), r
            counted[check] += t["props"]["variant"] == "standard"
        if not {r.partition(":")[0] for r in reasons} & late:
            assert t["props"]["variant"] == "standard"  # a rejected candidate has no matched variants
    assert dict(counted) == gen.first.rejections_by_check
    assert all(not t["props"]["rejections"] for t in admitted(gen.first_tasks, variant=None))


def test_the_run_is_audited_against_shortcuts_and_the_table_is_stored(gen: Generated, graph: Graph) -> None:
    audit = ShortcutAudit.model_validate(gen.first.shortcut_audit)
    run = graph.read("test_run_node", run=gen.first.run_key)[0]["run"]
    assert ShortcutAudit.model_validate_json(run["shortcut_audit"]) == audit
    assert json.loads(run["shortcut_rejected"]) == gen.first.shortcut_rejected
    cells = {c.family: c for c in audit.cells}
    # every family of the run's admitted tasks has its row, its oracle passing all of them
    families = Counter("/".join((t["props"]["analysis_type"], t["props"]["tier"], t["props"]["variant"]))
                       for t in admitted(gen.first_tasks, variant=None))
    assert families and set(families) <= set(cells)
    for family, n in families.items():
        assert cells[family].admitted and cells[family].tasks >= n
        assert cells[family].oracle_passed == cells[family].tasks
        assert cells[family].best_pct <= audit.limit_pct or cells[family].low_pct <= audit.limit_pct
    assert audit.strategies >= 30
    # the hold-out strategies' table is stored beside it, on the knowledge tasks still admitted
    assert audit.holdout is not None and audit.holdout.strategies == 3
    knowledge = sum(t["props"]["analysis_type"] == "knowledge_retrieval" for t in admitted(gen.first_tasks, variant=None))
    assert sum(c.tasks for c in audit.holdout.cells) == knowledge
    # `dibench generate --json` carries the same table
    assert ShortcutAudit.model_validate(gen.second["shortcut_audit"]).cells


def test_stage2_is_recorded_as_skipped_without_an_llm(gen: Generated, graph: Graph) -> None:
    run = graph.read("test_run_node", run=gen.first.run_key)[0]["run"]
    assert (run["phraser"], run["judge"], run["seed"], run["domain"]) == ("template", "skipped", SEED, DOMAIN)
    assert run["code_version"] and run["phrase_prompt_version"] and run["judge_prompt_version"]
    assert gen.first.stage2.startswith("skipped")
    for t in admitted(gen.first_tasks):
        assert props(t, "judge")["stage2"] == "skipped"


def test_the_run_records_how_its_sql_was_planned(gen: Generated, graph: Graph) -> None:
    """Per analysis type, candidates answered from the grouped plan or by one statement per answer
    (with the reason), on the Run node and on every task."""
    run = graph.read("test_run_node", run=gen.first.run_key)[0]["run"]
    assert json.loads(run["sql_plan"]) == gen.first.sql_plan
    assert run["sql_statements"] == gen.first.sql_statements > 0
    assert set(gen.first.sql_plan) == ALL_TYPES
    assert gen.first.sql_plan["knowledge_retrieval"] == {"none": gen.first.sql_plan["knowledge_retrieval"]["none"]}
    paths = {p.split(":")[0] for counts in gen.first.sql_plan.values() for p in counts}
    # the mini pack's amounts are floats and its privacy rule suppresses groups: fallbacks abound
    assert "none" in paths and paths & {"grouped", "mixed"} and paths <= {"grouped", "legacy", "mixed", "none"}
    for t in gen.first_tasks:
        assert t["props"]["sql_plan"].split(":")[0] in {"grouped", "legacy", "mixed", "none"}


def test_questions_name_no_identifiers(gen: Generated) -> None:
    metric_ids = {m.id.lower() for m in gen.pack.metrics}
    for t in admitted(gen.first_tasks):
        q = t["props"]["question"]
        low = q.lower()
        assert len(q) >= 20 and "_" not in q
        assert not any(m in low for m in metric_ids)
        assert "mini." not in low and "o.amount" not in low
        if t["props"]["analysis_type"] in ("ranking", "threshold_crossing"):
            # k and the threshold are stated (as words or formatted numbers): the fidelity check reads them.
            assert fidelity_problems(q, t["props"]["analysis_type"], props(t, "facts"), {}) == []


def test_a_failed_grounding_is_a_rejected_candidate_whatever_its_type() -> None:
    """A statement that failed (a timeout on a loaded server) leaves no facts to phrase a question
    with: the candidate is kept, rejected with the error, and the run goes on."""
    import random
    from dibench.generation.analyses import Outcome, registry
    from dibench.generation.skeletons import Skeleton
    from dibench.generation.tasks import Grounded, candidate, vocabulary
    from dibench.core.config import REPO_ROOT
    pack = load_pack(str(REPO_ROOT / "tests" / "fixtures" / "minipack"))
    metric = next(iter(pack.metric_by_id.values()))
    sk = Skeleton(pack.name, metric.id, "d", "categorical", "region", 3, ())
    failed = Grounded(Outcome({"error": "SQL failed: SQLSTATE 57014 (query canceled)"}, {}, None, None, {}, {}, {}))
    for analysis in registry():
        c = candidate(sk, pack, analysis.NAME, failed, random.Random(0), vocabulary(pack, {}), None, key="k",
                      judge=False)
        assert any("marked as error" in r for r in c.rejections), (analysis.NAME, c.rejections)
