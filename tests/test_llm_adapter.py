"""The LLM adapter over HTTP: the real langchain-openai client against a scripted OpenAI-compatible
stub server on 127.0.0.1. Providers from settings, the structured-output path and its plain-text
fallback, the example shape in every JSON prompt, retries of transient errors with backoff,
one-line failures (context overflow, 4xx), the call budget and the reply cache."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic import BaseModel, ConfigDict, Field

from dibench.core.config import Settings, get_settings
from dibench.core.errors import ConfigError, ExtractionError
from dibench.core.models import LLMEffects
from dibench.generation.questions import PhrasedQuestion
from dibench.generation.validation import JudgeVerdict
from dibench.stores import llm as llm_mod
from dibench.stores.llm import (
    BudgetExhausted, ContextOverflow, LLMError, ask_structured, configured_model, example_of, session,
)
from tests.llm_stub import StubServer, error, stub, stub_server, tool_call  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(60)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float
    unit: str = Field(min_length=1)


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("DIBENCH_LLM_BACKOFF_S", "0.01")
    monkeypatch.setenv("DIBENCH_LLM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DIBENCH_LLM_PROVIDER", raising=False)
    get_settings.cache_clear()
    llm_mod.reset_session()
    yield
    get_settings.cache_clear()
    llm_mod.reset_session()


def openai_model(stub: StubServer, monkeypatch: pytest.MonkeyPatch, **env: str) -> object:
    monkeypatch.setenv("DIBENCH_LLM", "openai")
    monkeypatch.setenv("DIBENCH_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("DIBENCH_LLM_MODEL", "qwen-stub")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    get_settings.cache_clear()
    model = configured_model()
    assert model is not None
    return model


# ------------------------------------------------------------------------------ providers
def test_no_provider_means_no_model() -> None:
    assert configured_model(Settings(llm=None, llm_provider=None)) is None


def test_openai_provider_needs_a_model_name() -> None:
    with pytest.raises(ConfigError, match="DIBENCH_LLM_MODEL"):
        configured_model(Settings(llm="openai", llm_model=None))


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="expected 'openai', 'ollama' or 'module:factory'"):
        configured_model(Settings(llm="gpt"))


def test_ollama_maps_to_its_openai_compatible_endpoint() -> None:
    model = configured_model(Settings(llm="ollama", llm_model="qwen2.5-coder:1.5b", llm_cache=False))
    assert type(model).__name__ == "CompatibleChatOpenAI"
    assert str(getattr(model, "openai_api_base")) == "http://localhost:11434/v1"


def fake_factory() -> FakeListChatModel:
    return FakeListChatModel(responses=["{}"])


def test_module_factory_still_works() -> None:
    assert isinstance(configured_model(Settings(llm="tests.test_llm_adapter:fake_factory", llm_cache=False)),
                      FakeListChatModel)
    assert isinstance(configured_model(Settings(llm_provider="tests.test_llm_adapter:fake_factory", llm_cache=False)),
                      FakeListChatModel)
    with pytest.raises(ConfigError, match="cannot import"):
        configured_model(Settings(llm="no_such_module:factory", llm_cache=False))


# ------------------------------------------------------------------------------ structured output
def test_example_shapes_validate() -> None:
    for model in (PhrasedQuestion, JudgeVerdict, Answer):
        model.model_validate(example_of(model))
    assert example_of(LLMEffects)["effects"][0]["op"] == "where"


def test_structured_reply_over_http_with_example_in_prompt(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then(json.dumps({"value": 3.5, "unit": "hours"}))
    got = ask_structured(model, "Answer.", "How long?", Answer, where="doc X")  # type: ignore[arg-type]
    assert got == Answer(value=3.5, unit="hours")
    sent = stub.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert "shaped like this example" in stub.prompt(0)
    assert json.dumps(example_of(Answer)) in stub.prompt(0)


def test_structured_reply_as_tool_call_is_read(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then(tool_call("Answer", value=2, unit="days"))
    assert ask_structured(model, "s", "u", Answer, where="w") == Answer(value=2, unit="days")  # type: ignore[arg-type]


def test_server_without_json_schema_falls_back_to_plain_text(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then(error(400, "response_format json_schema is not supported"), '{"value": 1, "unit": "x"}')
    assert ask_structured(model, "s", "u", Answer, where="w") == Answer(value=1, unit="x")  # type: ignore[arg-type]
    assert "response_format" in stub.requests[0] and "response_format" not in stub.requests[1]
    assert session().as_dict()["failures"] == {}  # the refused structured path is not a failure


def test_malformed_then_valid_reply_gets_the_shape_in_the_feedback(stub: StubServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then('{"value": 1, "unit": "x", "where": "t.a > 1"}', '{"value": 1, "unit": "x"}')
    assert ask_structured(model, "s", "u", Answer, where="w") == Answer(value=1, unit="x")  # type: ignore[arg-type]
    feedback = stub.requests[1]["messages"][-1]["content"]
    assert "where: Extra inputs are not permitted" in feedback
    assert json.dumps(example_of(Answer)) in feedback
    assert all(m.get("content") is not None for m in stub.requests[1]["messages"])


def test_always_malformed_is_one_extraction_error(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.default = "true"
    with pytest.raises(ExtractionError, match=r"^judge t1: LLM reply malformed after 3 attempts: no JSON object"):
        ask_structured(model, "s", "u", Answer, where="judge t1")  # type: ignore[arg-type]
    assert session().failures["llm"] == 1


# ------------------------------------------------------------------------------ provider errors
def test_a_500_is_retried_with_backoff(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then(error(500, "boom"), error(503, "busy"), '{"value": 1, "unit": "x"}')
    assert ask_structured(model, "s", "u", Answer, where="w") == Answer(value=1, unit="x")  # type: ignore[arg-type]
    assert len(stub.requests) == 3


def test_persistent_500_is_one_line_llm_error(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch, DIBENCH_LLM_RETRIES="2")
    stub.default = error(500, "internal error\nTraceback (most recent call last): ...")
    with pytest.raises(LLMError) as info:
        ask_structured(model, "s", "u", Answer, where="task 7")  # type: ignore[arg-type]
    assert str(info.value) == "task 7: LLM request failed (HTTP 500: internal error)"
    assert len(stub.requests) == 3  # the first try and two retries, never more


def test_context_overflow_is_not_retried_and_says_so(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.default = error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens")
    with pytest.raises(ContextOverflow, match=r"^rules/r1.md: effects: the server refused a prompt of ~\d+ tokens as "
                                              r"too long for its context \(HTTP 400: .*\); DIBENCH_LLM_CONTEXT=4096$"):
        ask_structured(model, "s", "u", Answer, where="rules/r1.md: effects")  # type: ignore[arg-type]
    assert len(stub.requests) == 1


def test_unreachable_server_is_an_llm_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIBENCH_LLM_RETRIES", "0")
    get_settings.cache_clear()
    model = configured_model(Settings(llm="openai", llm_base_url="http://127.0.0.1:9/v1", llm_model="m",
                                      llm_cache=False, llm_timeout_s=2))
    with pytest.raises(LLMError, match=r"^w: LLM request failed \(\w*ConnectionError: Connection error\.\)$"):
        ask_structured(model, "s", "u", Answer, where="w")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ budget and cache
def test_call_budget(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch, DIBENCH_LLM_MAX_CALLS="1", DIBENCH_LLM_CACHE="false")
    stub.default = '{"value": 1, "unit": "x"}'
    ask_structured(model, "s", "first", Answer, where="a", stage="phrase")  # type: ignore[arg-type]
    with pytest.raises(BudgetExhausted, match="^b: LLM call budget of 1 exhausted"):
        ask_structured(model, "s", "second", Answer, where="b", stage="phrase")  # type: ignore[arg-type]
    assert len(stub.requests) == 1
    assert session().as_dict()["calls"] == {"phrase": 1}


def test_reply_cache_makes_a_rerun_free_and_identical(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(stub, monkeypatch)
    stub.then('{"value": 1, "unit": "x"}')
    first = ask_structured(model, "s", "u", Answer, where="a", stage="judge")  # type: ignore[arg-type]
    llm_mod.reset_session()
    model = configured_model()  # a new process would do the same
    again = ask_structured(model, "s", "u", Answer, where="a", stage="judge")  # type: ignore[arg-type]
    assert again == first
    assert len(stub.requests) == 1
    assert session().cache_hits["judge"] == 1 and session().total_calls == 0
