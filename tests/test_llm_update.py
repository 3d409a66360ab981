"""The LLM path of a rule update (`dibench update-rule --regenerate`) over HTTP against the scripted
stub server (tests/llm_stub.py), on a generated copy of the mini pack: it obeys what `generate`
obeys. A provider error fails the candidate it hit, never the update; --no-judge / --judge; a
drifting question is rewritten once (stage-1 fidelity); --max-llm-calls caps the requests; the
reply cache makes a rerun free; the RuleUpdate record and the regeneration Run keep the model,
every prompt version and the calls.

The tests share one generated domain and run in file order: the --dry-run ones first, then the
two that write (the cached update, then a failed one and its rerun)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.config import get_settings
from dibench.core.pack import Pack
from dibench.generation.validation import JUDGE_DIMENSIONS
from dibench.stores import llm as llm_mod
from dibench.stores.graph import Graph
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import delete_domain, edit_front
from tests.llm_stub import StubServer, error, stub, stub_server  # noqa: F401 - fixtures
from tests.test_llm_stages import faithful_phrasing
from tests.test_update import generated_domain

DOMAIN = "mini_llm_upd"
AOV_EFFECT = {"metric": "MINI-AOV-001", "op": "exclude", "predicate": "o.channel = 'phone'",
              "applies_when": {"dimension": "customers.plan", "value": "basic"}}
DRIFT = "Roughly how did that figure come out for our customers?"


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory, graph: Graph, warehouse: Warehouse) -> Iterator[Pack]:
    """The mini pack generated without a model; MINI-R-PHONE then also modifies the average order
    value, so `update-rule --regenerate` phrases and judges new tasks for that metric."""
    pk = generated_domain(tmp_path_factory.mktemp("llmupd") / "pack", DOMAIN, graph, warehouse, target=6)
    edit_front(pk.root / "rules" / "phone.md", lambda f: f["effects"].append(dict(AOV_EFFECT)))
    yield pk
    delete_domain(graph, DOMAIN)


@pytest.fixture(autouse=True)
def llm_env(stub: StubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:  # noqa: F811
    for k, v in {"DIBENCH_LLM": "openai", "DIBENCH_LLM_BASE_URL": stub.base_url, "DIBENCH_LLM_MODEL": "stub",
                 "DIBENCH_LLM_BACKOFF_S": "0.01", "DIBENCH_LLM_RETRIES": "1", "DIBENCH_LLM_CACHE": "false",
                 "DIBENCH_LLM_CACHE_DIR": str(tmp_path / "cache"), "DIBENCH_LLM_MAX_CALLS": "",
                 "DIBENCH_LLM_JUDGE": "true"}.items():
        monkeypatch.setenv(k, v)  # restored after the test, whatever the command sets
    monkeypatch.delenv("DIBENCH_LLM_MAX_CALLS")
    get_settings.cache_clear()
    llm_mod.reset_session()
    yield
    get_settings.cache_clear()
    llm_mod.reset_session()


def scripted(judge_reply: str | None = None) -> Any:
    """Phrasing drifts (no window, no groups) until it is asked to rewrite, then states the facts;
    the judge passes everything (or answers `judge_reply`)."""
    def reply(body: dict[str, Any]) -> str:
        system = str(body["messages"][0]["content"])
        if system.startswith("You write the question"):
            payload = json.loads(body["messages"][1]["content"])
            return faithful_phrasing(body) if "previous_question" in payload else json.dumps({"question": DRIFT})
        return judge_reply or json.dumps({d: {"passed": True, "reason": f"Fine on {d}."} for d in JUDGE_DIMENSIONS})
    return reply


def update(pack: Pack, *args: str) -> dict[str, Any]:
    res = CliRunner().invoke(main, ["update-rule", str(pack.root / "rules" / "phone.md"), "--regenerate", "--json",
                                    *args])
    assert res.exit_code == 0, res.output
    log: dict[str, Any] = json.loads(res.stdout)
    return log


def systems(stub: StubServer) -> list[str]:  # noqa: F811
    return [str(r["messages"][0]["content"]).split(".", 1)[0] for r in stub.requests]


def test_judge_switch_and_drifting_question_rewritten_once(pack: Pack, stub: StubServer) -> None:  # noqa: F811
    stub.default = scripted()
    judged = update(pack, "--dry-run", "--judge")
    assert "You review one benchmark task for data agents" in systems(stub)
    assert judged["llm"]["calls"]["judge"] >= 1 and judged["llm"]["judge"] == "CompatibleChatOpenAI:stub"
    assert judged["counts"]["regenerated"] >= 1
    # The drifting first phrasing is caught by stage 1 and rewritten with the problems.
    rewrites = [json.loads(r["messages"][1]["content"]) for r in stub.requests
                if "previous_question" in str(r["messages"][1]["content"])]
    assert rewrites and all(p["previous_question"] == DRIFT for p in rewrites)
    assert any("phrasing_fidelity" in " ".join(p["reviewer_objections"]) for p in rewrites)

    stub.reset()
    stub.default = scripted()
    unjudged = update(pack, "--dry-run", "--no-judge")
    assert "You review one benchmark task for data agents" not in systems(stub)
    assert set(unjudged["llm"]["calls"]) == {"phrase"} and unjudged["llm"]["judge"] == "skipped"
    assert unjudged["counts"] == judged["counts"]

    stub.reset()
    stub.default = scripted(judge_reply="true")  # a bare boolean: malformed three times
    malformed = update(pack, "--dry-run", "--judge")
    assert malformed["llm"]["failures"]["judge"] >= 1
    assert malformed["counts"]["regenerated"] == 0

    stub.reset()
    stub.default = error(500, "CUDA out of memory")
    down = update(pack, "--dry-run", "--no-judge")  # a provider that is down fails each candidate alone
    assert down["llm"]["calls"] == {"phrase": down["llm"]["failures"]["phrase"]}
    assert len(stub.requests) == 2 * down["llm"]["calls"]["phrase"]  # each retried once, then given up
    assert down["counts"]["regenerated"] == 0


def test_call_budget_caps_the_update(pack: Pack, stub: StubServer) -> None:  # noqa: F811
    stub.default = scripted()
    log = update(pack, "--dry-run", "--max-llm-calls", "2", "--no-judge")
    assert len(stub.requests) == 2 and log["llm"]["calls"] == {"phrase": 2}
    assert log["llm"]["max_calls"] == 2
    assert log["counts"]["regenerated"] >= 1  # past the budget, template questions


def test_cache_makes_the_rerun_free_and_the_records_keep_model_prompts_and_calls(
        pack: Pack, stub: StubServer, graph: Graph, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("DIBENCH_LLM_CACHE", "true")
    get_settings.cache_clear()
    stub.default = scripted()
    planned = update(pack, "--dry-run", "--no-judge")
    assert planned["llm"]["calls"]["phrase"] == len(stub.requests) >= 1
    # Every reply asked for (some prompts repeat within one update: answered from the cache already).
    calls = planned["llm"]["calls"]["phrase"] + planned["llm"]["cache_hits"].get("phrase", 0)

    stub.reset()
    stub.default = error(500, "the cache should have answered")
    llm_mod.reset_session()
    log = update(pack, "--no-judge")
    assert stub.requests == []
    assert log["llm"]["calls"] == {} and log["llm"]["cache_hits"] == {"phrase": calls}
    assert log["counts"] == planned["counts"] and log["written"] is True

    [record] = [json.loads(r["update"]["llm"]) for r in graph.read("test_rule_updates", rule=f"rule:{DOMAIN}/MINI-R-PHONE")]
    assert record["model"] == "CompatibleChatOpenAI:stub" and record["cache_hits"] == {"phrase": calls}
    assert record["prompt_versions"] == {"phrase": "phrase/3"}
    [row] = graph.read("test_run_node", run=f"run:{DOMAIN}/update-MINI-R-PHONE@{log['after']['hash'][:12]}")
    run = row["run"]
    assert (run["llm_model"], run["phraser"], run["judge"]) == ("CompatibleChatOpenAI:stub",) * 2 + ("skipped",)
    assert json.loads(run["prompt_versions"]) == {"phrase": "phrase/3"}
    assert json.loads(run["llm_usage"])["cache_hits"] == {"phrase": calls} and run["llm_calls"] == 0


def test_a_500_fails_each_task_alone_and_a_rerun_reinstates_it(pack: Pack, stub: StubServer,  # noqa: F811
                                                                graph: Graph) -> None:
    """After the cached update above: the AOV effect changes, every AOV task is re-derived and
    judged; a provider that answers 500 retires each task it hit (never a wrong gold kept, never
    the whole update), and the same update run again when the provider is back reinstates them."""
    edit_front(pack.root / "rules" / "phone.md",
               lambda f: f["effects"][1].__setitem__("predicate", "o.channel = 'web'"))
    stub.default = error(500, "CUDA out of memory")
    log = update(pack, "--judge")
    failures = log["llm"]["failures"]
    assert sum(failures.values()) >= 1 and set(failures) <= {"phrase", "judge"}
    hit = [t for t in log["tasks"] if t["reason"].startswith("llm: ")]
    assert hit and {t["action"] for t in hit} == {"retired"}
    assert all("LLM request failed (HTTP 500: CUDA out of memory)" in t["reason"] and "\n" not in t["reason"]
               for t in hit)
    retired = {t["key"] for t in hit}

    stub.reset()
    stub.default = scripted()
    again = update(pack, "--judge")
    back = {t["key"]: t for t in again["tasks"] if t["key"] in retired}
    assert {t["action"] for t in back.values()} == {"updated"}
    assert {t["reason"] for t in back.values()} == {"reinstated"}


def test_remove_rule_takes_the_same_llm_options_and_records_them(pack: Pack, stub: StubServer) -> None:  # noqa: F811
    """The last test: MINI-R-PHONE goes; the tasks on its metrics are re-derived without it and
    judged (re-phrased where their facts changed) within --max-llm-calls."""
    stub.default = scripted()
    res = CliRunner().invoke(main, ["remove-rule", "MINI-R-PHONE", "--domain", DOMAIN, "--pack", str(pack.root),
                                    "--judge", "--max-llm-calls", "3", "--json"])
    assert res.exit_code == 0, res.output
    log = json.loads(res.stdout)
    assert log["action"] == "remove" and log["written"] is True
    assert 1 <= len(stub.requests) <= 3 and sum(log["llm"]["calls"].values()) == len(stub.requests)
    assert "judge" in log["llm"]["calls"] and log["llm"]["max_calls"] == 3
    assert log["llm"]["prompt_versions"] == {"phrase": "phrase/3", "judge": "judge/2"}
