"""Every LLM stage over HTTP: the real langchain-openai client against the scripted OpenAI-compatible
stub server (tests/llm_stub.py), on the real mini data, Neo4j and PostgreSQL.

Extraction: a context overflow fails one document and the ingest goes on; a reply naming a column
that does not exist is retried with the problem and the valid one is stored; a catalog of 500
metrics still fits the default context. Generation: a judge that keeps replying a bare boolean
rejects that candidate with a one-line reason, the others are judged. Agent: a tool-calling loop
that queries unqualified table names gets rows (domain schema on the search path), tool_choice
is sent and no null content; a persistent 500 ends that task only and scores are written."""
from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.language_models.chat_models import BaseChatModel

from dibench.cli.main import main
from dibench.core.config import Settings, get_settings
from dibench.core.errors import ExtractionError
from dibench.core.pack import load_pack
from dibench.evaluation.agents.llm import Budget, LlmAgent
from dibench.evaluation.agents.tools import schema_description
from dibench.evaluation.harness import run_tasks
from dibench.evaluation.kb import KnowledgeBase
from dibench.evaluation.tasks import TaskRecord
from dibench.generation.executor import Executor
from dibench.generation.questions import CATALOG_ONLY, PHRASE_REPLY_TOKENS, llm_question, template_question
from dibench.generation.tasks import UNFIXABLE, build_candidates, vocabulary
from dibench.generation.writeback import task_rows
from dibench.ingest.extract import REPLY_TOKENS, bounded_prompt, extract_effects, rank_metrics
from dibench.ingest.pipeline import ingest_pack
from dibench.stores import llm as llm_mod
from dibench.stores.graph import Graph
from dibench.stores.llm import configured_model, estimate_tokens
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.evaldomain import EvalDomain, eval_domain, kb, tasks  # noqa: F401 - fixtures
from tests.fixtures.packs import MINIPACK, copy_pack, delete_domain, edit_metrics, ensure_mini_loaded, write_front
from tests.fixtures.skeletons import skeleton
from tests.llm_stub import StubServer, error, stub, stub_server, tool_call  # noqa: F401 - fixtures

DOMAINS = ["mini_llm_stage_a", "mini_llm_stage_b", "mini_llm_x", "mini_llm_y", "mini_llm_big", "mini_llm_cols"]
RULE_FRONT = {"id": "MINI-R-LLM", "title": "Very large orders are left out of order value averages", "version": "1",
              "effective_date": "2023-01-01", "owner": "Finance", "rule_type": "exclusionary"}
RULE_BODY = ("# Very large orders\n\nOrders above two thousand are negotiated one by one by the key account team, "
             "so finance leaves them out of the average order value it reports each month. Board reports, "
             "monthly packs and the quarterly review all follow this. The key account team keeps its own list of "
             "these orders and reviews them every quarter with the finance controller.\n")
GOOD = {"effects": [{"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.amount > 2000"}]}
MISSING_COLUMN = {"effects": [{"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.refund_type = 'manual'"}]}


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("DIBENCH_LLM_BACKOFF_S", "0.01")
    monkeypatch.setenv("DIBENCH_LLM_RETRIES", "1")
    monkeypatch.setenv("DIBENCH_LLM_CACHE", "false")
    get_settings.cache_clear()
    llm_mod.reset_session()
    yield
    get_settings.cache_clear()
    llm_mod.reset_session()


@pytest.fixture(scope="module", autouse=True)
def clean(graph: Graph, warehouse: Warehouse) -> Iterator[None]:
    ensure_mini_loaded(warehouse)
    yield
    for d in DOMAINS:
        delete_domain(graph, d)


def model(stub: StubServer) -> BaseChatModel:
    m = configured_model(Settings(llm="openai", llm_base_url=stub.base_url, llm_model="stub", llm_cache=False))
    assert m is not None
    return m


def llm_pack(tmp_path: Path, name: str) -> Path:
    root = copy_pack(tmp_path / "pack", name)
    write_front(root / "rules" / "llm.md", dict(RULE_FRONT), RULE_BODY)
    return root


# ------------------------------------------------------------------------------ extraction
def catalog_in_graph(root: Path, graph: Graph, warehouse: Warehouse) -> Path:
    """Ingest a pack without a model: its metrics and tables are what extraction selects from."""
    ingest_pack(load_pack(root), graph, warehouse, verify=False)
    return root


def test_missing_column_is_retried_with_the_problem_then_stored(stub: StubServer, tmp_path: Path, graph: Graph,
                                                                warehouse: Warehouse) -> None:
    pack = load_pack(catalog_in_graph(llm_pack(tmp_path, "mini_llm_x"), graph, warehouse))
    stub.then(json.dumps(MISSING_COLUMN), json.dumps(GOOD))
    columns = schema_columns(warehouse, pack.schema)
    got = extract_effects(pack.rule("MINI-R-LLM"), pack, model(stub), graph, columns)
    assert got.model_dump(exclude_none=True, exclude_defaults=True)["effects"][0]["predicate"] == "o.amount > 2000"
    feedback = stub.requests[1]["messages"][-1]["content"]
    assert "effects.0.predicate: o.refund_type: column orders.refund_type does not exist" in feedback
    assert '"effects": [{"metric": "M-001"' in feedback  # the expected shape, again
    prompt = stub.prompt(0)
    assert '"orders":[' in prompt and "ordered_at" in prompt  # the columns the model may use


def test_always_invalid_extraction_fails_that_document(stub: StubServer, tmp_path: Path, graph: Graph,
                                                       warehouse: Warehouse) -> None:
    pack = load_pack(catalog_in_graph(llm_pack(tmp_path, "mini_llm_y"), graph, warehouse))
    stub.default = json.dumps(MISSING_COLUMN)
    with pytest.raises(ExtractionError, match=r"rules/llm\.md: effects: LLM reply malformed after 3 attempts: "
                                              r"effects\.0\.predicate: o\.refund_type: column orders\.refund_type "
                                              r"does not exist$"):
        extract_effects(pack.rule("MINI-R-LLM"), pack, model(stub), graph, schema_columns(warehouse, pack.schema))


def test_extraction_without_the_domain_in_the_graph_says_so(stub: StubServer, tmp_path: Path, graph: Graph,
                                                            warehouse: Warehouse) -> None:
    pack = load_pack(llm_pack(tmp_path, "mini_llm_never_ingested"))
    with pytest.raises(ExtractionError, match=r"rules/llm\.md: effects: the graph holds no metric of domain "
                                              r"'mini_llm_never_ingested'"):
        extract_effects(pack.rule("MINI-R-LLM"), pack, model(stub), graph, schema_columns(warehouse, pack.schema))
    assert stub.requests == []


def test_context_overflow_fails_one_document_and_ingest_goes_on(stub: StubServer, tmp_path: Path, graph: Graph,
                                                                warehouse: Warehouse) -> None:
    root = llm_pack(tmp_path, DOMAINS[0])
    stub.default = error(400, "the request exceeds the available context size (8192 tokens)")
    report = ingest_pack(load_pack(root), graph, warehouse, model(stub))
    [failure] = report.failures
    assert "rules/llm.md: effects: the server refused a prompt of ~" in failure
    assert "\n" not in failure and "Traceback" not in failure
    assert report.verified == 5  # the front-matter documents are ingested as usual
    assert len(stub.requests) == 1  # an overflow is not retried
    assert report.extraction == {"model": "CompatibleChatOpenAI:stub", "prompt_version": "extract-effects/2",
                                 "documents": 0}


def grow_to_500(metrics: list[dict[str, Any]]) -> None:
    """Pad the catalog with 495 metrics that read the same tables and sound alike."""
    base = [dict(m) for m in metrics]
    for i in range(500 - len(metrics)):
        m = dict(base[i % len(base)])
        m["id"], m["name"] = f"MINI-GEN-{i:03d}", f"Generated metric number {i} about order shipments"
        m["description"] = "Orders and their value, per month, for the finance team's monthly report."
        metrics.append(m)


def test_a_catalog_of_500_metrics_fits_the_default_context(stub: StubServer, tmp_path: Path, graph: Graph,
                                                           warehouse: Warehouse) -> None:
    """Over HTTP, through the graph: the 500-metric catalog is ingested, the document's prompt
    stays within DIBENCH_LLM_CONTEXT (4,096) with the targeted metric first, the effect is stored."""
    root = llm_pack(tmp_path, "mini_llm_big")
    edit_metrics(root, grow_to_500)
    pack = load_pack(root)
    assert len(pack.metrics) == 500
    stub.default = json.dumps(GOOD)
    report = ingest_pack(pack, graph, warehouse, model(stub), verify=False)
    assert report.failures == [] and report.extraction["documents"] == 1
    [request] = stub.requests
    prompt_tokens = sum(estimate_tokens(str(m["content"])) for m in request["messages"])
    assert prompt_tokens <= 4096 - REPLY_TOKENS
    sent = json.loads(stub.prompt(0).split("Candidate metrics:\n", 1)[1].split("\n", 1)[0])
    assert 1 <= len(sent) < 500
    assert sent[0]["id"] == "MINI-AOV-001"  # "average order value" is named
    modifies = [e["dst"] for e in graph.read("test_domain_edges", domain="mini_llm_big")
                if e["type"] == "MODIFIES" and e["src"] == "rule:mini_llm_big/MINI-R-LLM"]
    assert modifies == ["metric:mini_llm_big/MINI-AOV-001"]
    doc = pack.rule("MINI-R-LLM")
    with pytest.raises(ExtractionError, match="more than DIBENCH_LLM_CONTEXT=300"):
        bounded_prompt(doc, pack, graph, schema_columns(warehouse, pack.schema), 300)


def test_candidates_come_through_the_graph_by_the_columns_a_document_names(tmp_path: Path, graph: Graph,
                                                                          warehouse: Warehouse) -> None:
    """A document that names no metric but a column: the metrics whose READS edges list that
    column come first (a column of a table every metric reads says nothing by itself)."""
    root = copy_pack(tmp_path / "pack", "mini_llm_cols")
    write_front(root / "rules" / "llm.md", {**RULE_FRONT, "title": "Agent-entered scores"},
                "# Agent-entered scores\n\nA rating entered by the support agent instead of the buyer is left "
                "out, so the figures reflect what buyers said.\n")
    pack = load_pack(catalog_in_graph(root, graph, warehouse))
    ranked = rank_metrics(pack.rule("MINI-R-LLM"), pack, graph)
    assert {(c.metric.id, c.reason) for c in ranked[:2]} == {("MINI-HEALTH-001", "reads"), ("MINI-SAT-001", "reads")}
    assert {c.reason for c in ranked[2:]} == {"similar"}


# ------------------------------------------------------------------------------ generation
def scripted_generation(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    if system.startswith("You write the question"):
        return json.dumps({"question": "How did the satisfaction of our customers come out over that period?"})
    return "true"  # the judge: a bare boolean, every time


def test_malformed_judge_rejects_its_candidates_only(stub: StubServer, warehouse: Warehouse) -> None:
    pack = load_pack(MINIPACK)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})
    stub.default = scripted_generation
    got = build_candidates(skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"]), pack,
                           Executor(warehouse), vocab, seed=42, llm=model(stub))
    judged = [c for c in got if c.judge.get("stage2") == "failed"]
    assert judged, "some candidate reached the judge"
    for c in judged:
        [reason] = [r for r in c.rejections if r.startswith("llm: ")]
        assert "LLM reply malformed after 3 attempts: no JSON object in the reply" in reason
    assert llm_mod.session().failures["judge"] == len(judged)


def test_no_judge_keeps_llm_phrasing(stub: StubServer, warehouse: Warehouse) -> None:
    pack = load_pack(MINIPACK)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})
    stub.default = scripted_generation
    got = build_candidates(skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"]), pack,
                           Executor(warehouse), vocab, seed=42, llm=model(stub), judge=False)
    assert all("satisfaction of our customers" in c.question for c in got)
    assert all(not s.startswith("You review") for r in stub.requests for s in [str(r["messages"][0]["content"])])
    assert {c.judge.get("reason") for c in got if not c.rejections} == {"judge disabled (--no-judge)"}


def faithful_phrasing(body: dict[str, Any]) -> str:
    """A phraser that states the facts (the template's wording), so stage 1 admits its questions."""
    payload = json.loads(body["messages"][1]["content"])
    q = template_question(payload["analysis_type"], payload["metric"], "segment", payload["facts"],
                          random.Random(0), "count")
    return json.dumps({"question": f"Quick one: {q}"})


DRIFT = "Roughly how did that figure come out for our customers?"


def drift_then(rewrite: Any) -> Any:
    """A phraser that drops the window and groups, then answers a rewrite request with `rewrite`."""
    def reply(body: dict[str, Any]) -> str:
        if "previous_question" in json.loads(body["messages"][1]["content"]):
            return str(rewrite(body))
        return json.dumps({"question": DRIFT})
    return reply


def test_drifting_question_over_http_is_rewritten_once_then_rejected(stub: StubServer, warehouse: Warehouse) -> None:
    pack = load_pack(MINIPACK)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})
    sk = skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"])
    stub.default = drift_then(lambda _body: json.dumps({"question": DRIFT}))
    drifted = build_candidates(sk, pack, Executor(warehouse), vocab, seed=42, llm=model(stub), judge=False)
    windowed = [c for c in drifted if "start" in c.facts]
    assert windowed
    for c in windowed:
        assert c.question == DRIFT
        assert any(r.startswith("phrasing_fidelity") for r in c.rejections)
    asked = [json.loads(r["messages"][1]["content"]) for r in stub.requests]
    rewrites = [p for p in asked if "previous_question" in p]
    # once each, never twice; never when no wording can admit it (the rule decides nothing)
    fixable = [c for c in windowed if not any(r.startswith(UNFIXABLE) for r in c.rejections)]
    assert len(rewrites) == len(fixable)
    assert all(not any(o.startswith("rule_not_discriminative") for o in p["reviewer_objections"]) for p in rewrites)
    assert all(p["previous_question"] == DRIFT and p["reviewer_objections"] for p in rewrites)

    stub.reset()
    stub.default = drift_then(faithful_phrasing)
    fixed = build_candidates(sk, pack, Executor(warehouse), vocab, seed=42, llm=model(stub), judge=False)
    for c in fixed:
        if "start" in c.facts and not any(r.startswith("rule_not_discriminative") for r in c.rejections):
            assert c.question.startswith("Quick one: ") and c.rejections == [], (c.question, c.rejections)


def test_a_candidate_no_wording_can_admit_is_not_rephrased(stub: StubServer, warehouse: Warehouse) -> None:
    """The privacy rule changes none of these answers: the candidates are rejected whatever the
    question says, so a drifting question costs no rewrite call."""
    pack = load_pack(MINIPACK)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})
    stub.default = drift_then(lambda _body: json.dumps({"question": "never asked"}))
    got = build_candidates(skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PRIVACY"]), pack,
                           Executor(warehouse), vocab, seed=42, llm=model(stub), judge=False)
    windowed = [c for c in got if "start" in c.facts]
    assert windowed
    for c in windowed:
        assert any(r.startswith("rule_not_discriminative") for r in c.rejections)
        assert any(r.startswith("phrasing_fidelity") for r in c.rejections)
    assert not [r for r in stub.requests if "previous_question" in json.loads(r["messages"][1]["content"])]


def catalog_phrasing(keep_opt_out: bool) -> Any:
    """A faithful phraser that, asked for a no-rule variant (`catalog_only`), first forgets to say
    so, and says so on the rewrite only when `keep_opt_out`."""
    def reply(body: dict[str, Any]) -> str:
        payload = json.loads(body["messages"][1]["content"])
        q = json.loads(faithful_phrasing(body))["question"]
        if payload["catalog_only"] and keep_opt_out and "previous_question" in payload:
            q = f"{q} Please use {CATALOG_ONLY}."
        return json.dumps({"question": q})
    return reply


@pytest.mark.parametrize("keep_opt_out", [True, False])
def test_the_llm_phraser_keeps_the_no_rule_opt_out(keep_opt_out: bool, stub: StubServer, warehouse: Warehouse) -> None:
    """A rule task's no-rule variant is phrased by the model as a question of its own, asking for
    the catalog's definition alone; stage 1 rejects the variant whose question forgets to say so."""
    pack = load_pack(MINIPACK)
    vocab = vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})
    stub.default = catalog_phrasing(keep_opt_out)
    got = build_candidates(skeleton(pack, "MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"]), pack,
                           Executor(warehouse), vocab, seed=42, llm=model(stub), judge=False)
    rule_tasks = [c for c in got if c.no_rule_question is not None]
    assert rule_tasks, "some rule task has a no-rule variant"
    asked = [json.loads(r["messages"][1]["content"]) for r in stub.requests]
    assert any(p["catalog_only"] and p["answer"] == rule_tasks[0].base_answer for p in asked)
    assert all(not p["catalog_only"] for p in asked if p["answer"] == rule_tasks[0].gold_answer)
    for c in rule_tasks:
        assert not c.rejections
        if keep_opt_out:
            assert c.no_rule_question.endswith(f"Please use {CATALOG_ONLY}.") and c.no_rule_rejections == []
        else:  # the standard task's question with another answer: the variant is rejected
            assert [r for r in c.no_rule_rejections if "does not ask for the catalog's definition alone" in r]
    rows = [r for r in task_rows(rule_tasks, pack, "run:test") if r["variant"] == "no_rule"]
    assert {r["props"]["status"] for r in rows} == ({"admitted"} if keep_opt_out else {"rejected"})


def test_phrasing_prompt_stays_within_the_context(stub: StubServer) -> None:
    """Several long rule documents: they are sent while they fit DIBENCH_LLM_CONTEXT, the last cut short."""
    stub.default = json.dumps({"question": "What was the satisfaction rate for basic customers in 2024?"})
    docs = [f"Rule {i}. " + "Orders of basic customers placed by phone are left out of the rating. " * 120
            for i in range(5)]  # ~2,100 tokens each
    llm_question(model(stub), "point_query", "Satisfaction rate", {"value": 71.4},
                 {"start": "2024-01-01", "end": "2025-01-01", "group": "basic"}, docs, where="test")
    [request] = stub.requests
    assert sum(estimate_tokens(str(m["content"])) for m in request["messages"]) <= 4096 - PHRASE_REPLY_TOKENS
    sent = json.loads(request["messages"][1]["content"])["rule_documents"]
    assert sent[0] == docs[0] and sent[-1].endswith(" [...]") and len(sent) < len(docs)



def test_generate_cli_caps_llm_calls_records_them_and_prints_only_json(
        stub: StubServer, tmp_path: Path, graph: Graph, warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    root = llm_pack(tmp_path, DOMAINS[1])
    for k, v in {"DIBENCH_LLM": "openai", "DIBENCH_LLM_BASE_URL": stub.base_url, "DIBENCH_LLM_MODEL": "stub",
                 "DIBENCH_LLM_MAX_CALLS": "", "DIBENCH_LLM_JUDGE": "true"}.items():
        monkeypatch.setenv(k, v)  # restored after the test, whatever the command sets
    monkeypatch.delenv("DIBENCH_LLM_MAX_CALLS")
    get_settings.cache_clear()
    # The ingest extracts the effect-less document's effects; it says with which model and prompt.
    stub.then(json.dumps(GOOD))
    res = CliRunner().invoke(main, ["ingest", str(root)])
    assert res.exit_code == 0, res.output
    assert "LLM extraction: 1 documents' effects from CompatibleChatOpenAI:stub (prompt extract-effects/2)" \
        in res.output
    stub.reset()
    stub.default = faithful_phrasing
    res = CliRunner().invoke(main, ["generate", str(root), "--target", "6", "--min-per-type", "0",
                                    "--max-llm-calls", "3", "--no-judge", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # nothing but the JSON on stdout
    assert summary["llm"]["calls"] == {"phrase": 3}
    assert summary["stage2"] == "skipped (--no-judge)"
    assert summary["admitted"] > 3  # past the budget, template questions
    assert len(stub.requests) == 3
    [row] = graph.read("test_run_node", run=summary["run_key"])
    run = row["run"]
    assert (run["llm_calls"], run["llm_failures"], run["llm_max_calls"]) == (3, 0, 3)
    assert run["phraser"] == "CompatibleChatOpenAI:stub" and run["judge"] == "skipped"
    assert json.loads(run["llm_usage"])["calls"] == {"phrase": 3}
    # Every prompt version behind the run's tasks, the extraction of the rule effects included.
    versions = {"phrase": "phrase/3",  # the prompt tells the model when a question asks for the catalog alone
                "extract": [{"model": "CompatibleChatOpenAI:stub", "prompt_version": "extract-effects/2"}]}
    assert json.loads(run["prompt_versions"]) == versions
    assert (summary["llm_model"], summary["prompt_versions"]) == ("CompatibleChatOpenAI:stub", versions)


# ------------------------------------------------------------------------------ agent
def test_agent_loop_over_http_with_unqualified_tables(stub: StubServer, tasks: list[TaskRecord],  # noqa: F811
                                                      kb: KnowledgeBase, warehouse: Warehouse,  # noqa: F811
                                                      tmp_path: Path) -> None:
    point = [t for t in tasks if t.analysis_type == "point_query" and t.variant == "standard"][:3]
    assert len(point) == 3
    first, broken, last = point
    stub.then(tool_call("sql_query", sql="SELECT COUNT(*) AS n FROM orders WHERE amount > :v", params={"v": 2000}),
              tool_call("final_answer", answer=first.gold_answer),
              error(500, "CUDA out of memory"), error(500, "CUDA out of memory"),
              tool_call("final_answer", answer=last.gold_answer))
    agent = LlmAgent(model(stub), schema_description(warehouse, "mini"), budget=Budget(turns=5))
    result = run_tasks(point, agent, warehouse, kb, tmp_path, domain=first.domain, db_schema="mini")
    traces = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert [t["stop_reason"] for t in traces] == ["answered", "error", "answered"]
    assert traces[1]["stop_detail"] == f"task {broken.task_id} turn 1: LLM request failed (HTTP 500: CUDA out of memory)"
    sql_event = traces[0]["events"][0]
    assert sql_event["ok"] is True
    real = warehouse.execute_readonly("SELECT COUNT(*) FROM mini.orders WHERE amount > 2000").rows[0][0]
    assert sql_event["result"]["rows"] == [[real]]
    assert stub.requests[0]["tool_choice"] == "required"
    assistant = [m for m in stub.requests[1]["messages"] if m["role"] == "assistant"]
    assert assistant and all(m["content"] is not None for m in assistant)
    assert result.summary.tasks == 3 and result.summary.stop_reasons == {"answered": 2, "error": 1}
    assert result.report.overall.passed == 2
    assert json.loads((tmp_path / "score.json").read_text())["overall"]["passed"] == 2


def test_agent_token_budget_stops_the_task(stub: StubServer, tasks: list[TaskRecord],  # noqa: F811
                                           kb: KnowledgeBase, warehouse: Warehouse, tmp_path: Path) -> None:  # noqa: F811
    task = next(t for t in tasks if t.analysis_type == "point_query")
    stub.default = tool_call("search_knowledge", query="order value")
    agent = LlmAgent(model(stub), schema_description(warehouse, "mini"), budget=Budget(turns=20, tokens=1))
    result = run_tasks([task], agent, warehouse, kb, tmp_path, domain=task.domain, db_schema="mini")
    [trace] = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert trace["stop_reason"] == "budget" and trace["stop_detail"] == "token budget (1) reached"
    assert len(stub.requests) == 1
    assert result.summary.stop_reasons == {"budget": 1}


