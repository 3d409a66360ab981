"""The LLM paths of generation with langchain-core's fake chat models (the only thing faked: the
model endpoint). The phraser's prompt and output parsing, the retry on malformed output, the
eight-dimension judge (admit on all-pass, reject with the reason, rewrite a phrasing-only failure
once and re-score), and build_candidates wired to a model end to end on the real mini data."""
from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from dibench.core.contracts import task_contract
from dibench.core.errors import ExtractionError
from dibench.core.pack import Pack, load_pack
from dibench.generation.executor import Executor
from dibench.generation.knowledge_admission import LEAK, refusals
from dibench.generation.questions import llm_question, period_words
from dibench.generation.shortcuts import AuditTask, registry
from dibench.generation.tasks import build_candidates, run_judge, vocabulary
from dibench.generation.validation import JUDGE_DIMENSIONS, Candidate, Vocabulary
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import MINIPACK, ensure_mini_loaded
from tests.fixtures.skeletons import skeleton


class Recorder(BaseCallbackHandler):
    """Keeps the messages of every chat model call: the prompts the fake model was given."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *,
                            run_id: UUID, **kwargs: Any) -> None:
        self.calls.extend(messages)

    def text(self, i: int) -> str:
        return "\n".join(str(m.content) for m in self.calls[i])


def fake(responses: list[str]) -> tuple[FakeListChatModel, Recorder]:
    rec = Recorder()
    return FakeListChatModel(responses=responses, callbacks=[rec]), rec


def verdict(fail: dict[str, str] | None = None) -> str:
    fail = fail or {}
    return json.dumps({d: {"passed": d not in fail, "reason": fail.get(d, f"The task is fine on {d}.")}
                       for d in JUDGE_DIMENSIONS})


def phrased(q: str) -> str:
    return json.dumps({"question": q})


@pytest.fixture(scope="module")
def pack() -> Pack:
    return load_pack(MINIPACK)


@pytest.fixture(scope="module")
def vocab(pack: Pack, warehouse: Warehouse) -> Vocabulary:
    ensure_mini_loaded(warehouse)
    return vocabulary(pack, {t: list(c) for t, c in schema_columns(warehouse, pack.schema).items()})


SK = ("MINI-SAT-001", "customers.plan", ["MINI-R-PHONE"])


@pytest.fixture()
def candidates(pack: Pack, warehouse: Warehouse, vocab: Vocabulary) -> list[Candidate]:
    """The template-phrased candidates of one rule skeleton (no model): stage 1 applied."""
    return build_candidates(skeleton(pack, *SK), pack, Executor(warehouse), vocab, seed=42)


def a_point_query(candidates: list[Candidate]) -> Candidate:
    c = next(c for c in candidates if c.analysis_type == "point_query")
    assert not c.rejections
    return c


# ------------------------------------------------------------------------------ phraser
def test_phraser_prompt_carries_metric_answer_type_and_rule_text(pack: Pack) -> None:
    doc = pack.rule("MINI-R-PHONE")
    llm, rec = fake([phrased("What share of our basic-plan orders were rated four stars or better last spring?")])
    gold = {"value": 71.43}
    q = llm_question(llm, "point_query", "Satisfaction rate", gold, {"start": "2024-03-01", "group": "basic"},
                     [doc.body], where="test")
    assert q == "What share of our basic-plan orders were rated four stars or better last spring?"
    assert len(rec.calls) == 1
    prompt = rec.text(0)
    assert "Satisfaction rate" in prompt
    assert "point_query" in prompt
    assert '"value": 71.43' in prompt
    assert doc.body.split("\n\n")[1][:120].replace("\n", "\\n") in prompt  # the rule document's own text
    assert "Never mention database tables" in prompt


def test_phraser_parses_json_inside_a_fenced_reply() -> None:
    llm, _ = fake(['Here you go:\n```json\n{"question": "How satisfied were basic customers in March 2024?"}\n```'])
    assert llm_question(llm, "point_query", "m", {}, {}, [], where="t") == "How satisfied were basic customers in March 2024?"


def test_malformed_output_is_retried_with_the_error(pack: Pack) -> None:
    llm, rec = fake(["I would ask about satisfaction.", phrased("too short"),
                     phrased("How did satisfaction of basic customers develop in 2024?")])
    q = llm_question(llm, "trend_analysis", "Satisfaction rate", {"direction": "flat"}, {}, [], where="task X")
    assert q == "How did satisfaction of basic customers develop in 2024?"
    assert len(rec.calls) == 3
    assert "no JSON object" in str(rec.calls[1][-1].content)
    assert "question: String should have at least 20 characters" in str(rec.calls[2][-1].content)
    assert rec.calls[1][-2].content == "I would ask about satisfaction."  # the bad reply is shown back


def test_malformed_output_three_times_is_a_clear_extraction_error() -> None:
    llm, rec = fake(["no json here", "[1, 2]", '{"questions": "wrong key, long enough to pass"}'])
    with pytest.raises(ExtractionError, match=r"phrasing task 7: LLM reply malformed after 3 attempts: question: Field required; questions: Extra inputs"):
        llm_question(llm, "point_query", "m", {}, {}, [], where="phrasing task 7")
    assert len(rec.calls) == 3


# ------------------------------------------------------------------------------ judge
def test_judge_all_pass_admits(candidates: list[Candidate], vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    llm, rec = fake([verdict()])
    record = run_judge(llm, c, vocab)
    assert c.rejections == []
    assert record["stage2"] == "judged" and record["failed"] == [] and record["rewritten"] is False
    assert set(JUDGE_DIMENSIONS) <= set(record)
    prompt = rec.text(0)
    assert c.question in prompt and json.dumps(c.gold_answer) in prompt and "gold_sql" in prompt


def test_judge_failing_a_dimension_rejects_with_its_reason(candidates: list[Candidate], vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    question = c.question
    llm = GenericFakeChatModel(messages=iter([AIMessage(verdict({"sql_correctness": "The SQL ignores the window."}))]))
    record = run_judge(llm, c, vocab, lambda q, objections: pytest.fail("no rewrite for a non-phrasing failure"))
    assert record["failed"] == ["sql_correctness"]
    assert record["sql_correctness"] == {"passed": False, "reason": "The SQL ignores the window."}
    assert c.rejections == ["judge: failed ['sql_correctness'] (sql_correctness: The SQL ignores the window.)"]
    assert c.question == question


def test_phrasing_only_failure_is_rewritten_once_and_rescored(candidates: list[Candidate], vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    first = c.question
    # A rewrite still states the window and the group (stage 1 checks it again).
    better = (f"How happy were our {c.facts.get('group', 'basic')} customers with their orders "
              f"{period_words(c.facts['start'], c.facts['end'])}?")
    llm, rec = fake([verdict({"naturalness": "It reads like a database query."}), verdict()])
    seen: list[tuple[str, list[str]]] = []

    def rephrase(previous: str, objections: list[str]) -> str:
        seen.append((previous, objections))
        return better

    record = run_judge(llm, c, vocab, rephrase)
    assert seen == [(first, ["naturalness: It reads like a database query."])]
    assert c.question == better
    assert c.rejections == []
    assert record["rewritten"] is True and record["failed"] == []
    assert record["first_question"] == first
    assert record["first_verdict"]["failed"] == ["naturalness"]
    assert len(rec.calls) == 2 and c.question in rec.text(1)


def test_a_rewrite_that_still_fails_is_rejected_without_a_second_rewrite(candidates: list[Candidate],
                                                                         vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    llm, rec = fake([verdict({"answer_leakage": "It states the value."}), verdict({"answer_leakage": "Still does."})])
    calls: list[str] = []

    def rephrase(previous: str, objections: list[str]) -> str:
        calls.append(previous)
        # Faithful to the facts (stage 1 passes), but the judge still objects.
        return (f"Was the satisfaction of {c.facts.get('group', 'basic')} customers as high as usual "
                f"{period_words(c.facts['start'], c.facts['end'])}?")

    record = run_judge(llm, c, vocab, rephrase)
    assert len(calls) == 1 and len(rec.calls) == 2
    assert record["rewritten"] is True and record["failed"] == ["answer_leakage"]
    assert c.rejections == ["judge: failed ['answer_leakage'] (answer_leakage: Still does.)"]


def test_a_rewrite_is_checked_by_stage_one_again(candidates: list[Candidate], vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    llm, rec = fake([verdict({"naturalness": "Stiff."})])
    record = run_judge(llm, c, vocab, lambda q, o: "What is the average rating of all rows in mini.orders for plan basic?")
    assert len(rec.calls) == 1  # no second judge call for a rewrite stage 1 rejects
    assert record["rewritten"] is True
    assert [r.split(":")[0] for r in c.rejections] == ["leaked_identifiers", "phrasing_fidelity"]
    assert "mini.orders" in c.rejections[0]


def test_mixed_failures_are_not_rewritten(candidates: list[Candidate], vocab: Vocabulary) -> None:
    c = a_point_query(candidates)
    llm, rec = fake([verdict({"naturalness": "Stiff.", "logical_reasoning": "The answer does not follow."})])
    record = run_judge(llm, c, vocab, lambda q, o: pytest.fail("a failure beyond phrasing is not rewritten"))
    assert record["rewritten"] is False and record["failed"] == ["naturalness", "logical_reasoning"]
    assert c.rejections and c.rejections[0].startswith("judge: failed ['naturalness', 'logical_reasoning']")
    assert len(rec.calls) == 1


def test_without_a_model_stage_two_is_skipped(candidates: list[Candidate]) -> None:
    for c in candidates:
        if not c.rejections:
            assert c.judge == {"stage2": "skipped", "reason": "no LLM configured"}


# ------------------------------------------------------------------------------ end to end
def test_build_candidates_phrases_and_judges_with_the_model(pack: Pack, warehouse: Warehouse, vocab: Vocabulary,
                                                            candidates: list[Candidate]) -> None:
    """The same skeleton with a model: one phrasing call per candidate (two for an admitted rule
    task: its no-rule variant is phrased too), one judge call per candidate that passes stage 1
    (stage 1 does not depend on these well-formed questions)."""
    responses: list[str] = []
    questions = []
    for i, c in enumerate(candidates):
        # Faithful to the facts, so phrasing fidelity passes; a letter, not a number, tells the
        # questions apart (a number could be one of the policy's conditions, which stage 1 refuses).
        q = f"Question {chr(ord('A') + i)}: {c.question}"
        questions.append(q)
        responses.append(phrased(q))
        if c.no_rule_question is not None:  # an admitted rule task's no-rule variant is phrased next
            responses.append(phrased(f"Question {chr(ord('A') + i)}: {c.no_rule_question}"))
        if not c.rejections:
            responses.append(verdict())
    llm, rec = fake(responses)
    got = build_candidates(skeleton(pack, *SK), pack, Executor(warehouse), vocab, seed=42, llm=llm)
    assert [c.key for c in got] == [c.key for c in candidates]
    assert [c.question for c in got] == questions
    assert [c.rejections for c in got] == [c.rejections for c in candidates]
    assert len(rec.calls) == len(responses)
    doc = pack.rule("MINI-R-PHONE").body
    prompts = [rec.text(i) for i in range(len(rec.calls)) if "You write the question" in rec.text(i)]
    no_rule = [p for p in prompts if '"catalog_only": true' in p]
    phrase_prompts = [p for p in prompts if '"catalog_only": true' not in p]
    assert len(phrase_prompts) == len(candidates)
    assert len(no_rule) == sum(1 for c in candidates if c.no_rule_question is not None)
    for c, prompt in zip(got, phrase_prompts):
        assert "Satisfaction rate" in prompt and c.analysis_type in prompt
        assert json.dumps(c.gold_answer, default=str)[:60] in prompt
        assert json.dumps(doc)[1:100] in prompt  # the rule document's text, as JSON in the prompt
    for c in got:
        if not c.rejections:
            assert c.judge["stage2"] == "judged" and c.judge["failed"] == []


def test_the_knowledge_checks_run_on_the_rephrased_question(pack: Pack, warehouse: Warehouse, vocab: Vocabulary,
                                                             candidates: list[Candidate]) -> None:
    """The knowledge admission reads the question shipped: a model that rephrases the knowledge
    question into one naming its answer ("phone") has it rejected, though the template question
    passes; the run's closing refusal reads the stored (rephrased) question as well."""
    k = next(c for c in candidates if c.analysis_type == "knowledge_retrieval")
    assert not k.rejections and k.gold_answer["value"] == "phone"
    leaky = "Do we leave phone orders of basic customers out of the satisfaction rate? Give the sales channel's name."
    responses: list[str] = []
    for i, c in enumerate(candidates):
        if c is k:
            responses.append(phrased(leaky))
            continue
        responses.append(phrased(f"Question {chr(ord('A') + i)}: {c.question}"))
        if c.no_rule_question is not None:
            responses.append(phrased(f"Question {chr(ord('A') + i)}: {c.no_rule_question}"))
        if not c.rejections:
            responses.append(verdict())
    llm, _ = fake(responses)
    got = next(c for c in build_candidates(skeleton(pack, *SK), pack, Executor(warehouse), vocab, seed=42, llm=llm)
               if c.analysis_type == "knowledge_retrieval")
    assert got.question == leaky
    assert got.rejections == ["knowledge_leak: the question names the answer (phone)"]
    # the closing refusal, on the task as stored with the shipped question (no shortcut echoes a
    # name out of a question, so the refusal checks for it itself)
    stored = AuditTask(key="k", stem="k", analysis_type=got.analysis_type, tier=got.tier, variant="standard",
                       question=got.question, metric_id=got.metric_id, dimension=got.dimension, gold=got.gold_answer,
                       contract=task_contract(got.analysis_type, 2, got.gold_answer), facts=got.facts)
    docs = tuple(f"{d.front.title}\n{d.body}" for d in pack.rules)
    assert refusals([stored], docs, registry()) == {"k": f"{LEAK}: the question names the answer (phone)"}
    template = AuditTask(**{**stored.__dict__, "question": k.question})
    assert refusals([template], docs, registry()) == {}
