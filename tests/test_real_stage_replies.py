"""Real-model replies of extraction, phrasing and the judge, without a model: cassettes recorded
from Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) behind llama-server (`bench/extraction_score.py` and
`dibench generate` with DIBENCH_LLM_RECORD) are replayed over the stub server through the same
calls the stages make. Each recorded call (its first request and its retries) is replayed in
order, and the stage must end where the real run ended: the same effects after the same
validation, or the same failure; the same question; the same verdict."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dibench.core.errors import DibenchError
from dibench.core.pack import Pack, load_pack
from dibench.generation.questions import llm_question
from dibench.generation.validation import JUDGE_SYSTEM, JudgeVerdict
from dibench.ingest.database import load_database
from dibench.ingest.extract import extract_effects
from dibench.service.library import ingest_pack
from dibench.stores.graph import Graph
from dibench.stores.llm import ask_structured, configured_model
from dibench.stores.pack_data import schema_columns
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, fresh_domains
from tests.llm_stub import Raw, StubServer, openai_settings, stub, stub_server  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(300)
CASSETTES = Path(__file__).parent / "fixtures" / "cassettes"
MODEL = "qwen2.5-coder-1.5b"
DEMO = Path(load_pack("demo").root)
DOMAIN = "cassette_demo"


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch, stub: StubServer) -> Iterator[None]:  # noqa: F811
    with openai_settings(monkeypatch, stub, DIBENCH_LLM_CONTEXT="8192"):
        yield


def entries(stage: str) -> list[dict[str, Any]]:
    path = CASSETTES / f"{stage}-{MODEL}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def calls(recorded: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The recorded requests grouped into calls: a call's first request has the system prompt and
    the user's message alone; a retry adds the previous reply and its problems."""
    out: list[list[dict[str, Any]]] = []
    for e in recorded:
        if len(e["request"]["messages"]) == 2 or not out:
            out.append([])
        out[-1].append(e)
    return out


def after_path(line: str) -> str:
    """An error line without the document's path (the test's copy lives elsewhere)."""
    return line.split(": ", 1)[-1]


def replay(stub: StubServer, call: list[dict[str, Any]]) -> None:  # noqa: F811
    stub.requests.clear()
    stub.then(*(Raw(e["status"], e["response"]) for e in call))


def test_every_recorded_request_had_a_reply_limit_and_fit() -> None:
    for stage in ("extract", "phrase", "judge"):
        recorded = entries(stage)
        assert recorded, stage
        assert all(e["request"].get("max_tokens", 0) > 0 for e in recorded), stage
        assert all(e["status"] == 200 for e in recorded), stage  # no context overflow
        assert all(e["response"]["choices"][0]["finish_reason"] == "stop" for e in recorded), stage  # none cut


# ------------------------------------------------------------------------------ extraction
@pytest.fixture(scope="module")
def demo_copy(graph: Graph, warehouse: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pack]:
    """The demo's metrics and rules in the graph under a domain of their own (schema `demo`), as
    extraction's candidate selection reads them."""
    if "tickets" not in schema_columns(warehouse, "demo"):
        load_database(load_pack("demo"), warehouse)
    for _ in fresh_domains(graph, warehouse, [DOMAIN]):
        root = copy_pack(tmp_path_factory.mktemp("cassette") / "demo", DOMAIN, src=DEMO)
        pack = load_pack(root)
        ingest_pack(pack, graph=graph, warehouse=warehouse, verify=False)
        yield pack


def test_recorded_extraction_replies_end_as_the_real_run_did(stub: StubServer, demo_copy: Pack,  # noqa: F811
                                                              graph: Graph, warehouse: Warehouse) -> None:
    expected = json.loads((CASSETTES / f"extract-{MODEL}.expected.json").read_text(encoding="utf-8"))
    recorded = calls(entries("extract"))
    assert len(recorded) == len(expected)
    columns = schema_columns(warehouse, demo_copy.schema)
    for call, want in zip(recorded, expected):
        doc = demo_copy.rule(want["doc"])
        bare = dataclasses.replace(doc, front=doc.front.model_copy(update={"effects": None}))
        replay(stub, call)
        try:
            got: dict[str, Any] = {"effects": [e.model_dump(mode="json", exclude_none=True) for e in
                                               extract_effects(bare, demo_copy, configured_model(), graph,  # type: ignore[arg-type]
                                                               columns).effects]}
        except DibenchError as exc:
            got = {"failure": after_path(str(exc))}
        assert len(stub.requests) == len(call), want["doc"]
        assert got == ({"failure": after_path(want["failure"])} if "failure" in want else {"effects": want["effects"]}), \
            want["doc"]


# ------------------------------------------------------------------------------ phrasing and the judge
def test_recorded_phrasing_replies_give_the_recorded_questions(stub: StubServer) -> None:  # noqa: F811
    for call in calls(entries("phrase")):
        payload = json.loads(call[0]["request"]["messages"][1]["content"])
        replay(stub, call)
        rewrite = (payload["previous_question"], payload["reviewer_objections"]) if "previous_question" in payload \
            else None
        try:
            got = llm_question(configured_model(), payload["analysis_type"], payload["metric"],  # type: ignore[arg-type]
                               payload["answer"], payload["facts"], payload["rule_documents"], where="phrase",
                               rewrite=rewrite, catalog=payload["catalog_only"])
        except DibenchError as exc:
            got = f"failed: {exc}"
        final = call[-1]["response"]["choices"][0]["message"]["content"]
        assert len(stub.requests) == len(call)
        assert got == json.loads(final)["question"]
        assert stub.requests[0]["messages"][1]["content"] == call[0]["request"]["messages"][1]["content"]


def test_recorded_judge_replies_give_the_recorded_verdicts(stub: StubServer) -> None:  # noqa: F811
    for call in calls(entries("judge")):
        user = call[0]["request"]["messages"][1]["content"]
        replay(stub, call)
        verdict = ask_structured(configured_model(), JUDGE_SYSTEM, user, JudgeVerdict,  # type: ignore[arg-type]
                                 where="judge", stage="judge")
        final = json.loads(call[-1]["response"]["choices"][0]["message"]["content"])
        assert len(stub.requests) == len(call)
        assert verdict.model_dump() == final
