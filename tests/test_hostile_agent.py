"""The hostile reference agent (`dibench eval --agent hostile`) through the real harness: it tries
every known way round its tools (evaluation/agents/hostile_agent.py) and must score 0 with no
breach, while the run scores every task and nothing it started outlives the run. The same probe,
run unsandboxed, shows what the sandbox takes away."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from dibench.cli.main import main
from dibench.evaluation.agents.hostile_agent import daemon_marker
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401 - fixture

LIMIT = 4
MARKER = daemon_marker(os.getpid())  # the evaluator runs in this process (CliRunner)
# Ways round that are still open, each closed by its own change: the test fails on any other.
OPEN: tuple[str, ...] = ()


def _run(eval_domain: EvalDomain, out: Path, *args: str) -> Any:  # noqa: F811
    res = CliRunner().invoke(main, ["eval", "--agent", "hostile", "--domain", eval_domain.name, "--run",
                                    eval_domain.run_key, "-o", str(out), "--json", "--no-chance", "--limit",
                                    str(LIMIT), "--max-seconds", "20", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _breaches(out: Path) -> list[list[str]]:
    found = []
    for line in (out / "trace.jsonl").read_text().splitlines():
        notes = [n for n in json.loads(line)["notes"] if n.startswith("stderr: hostile:")]
        assert len(notes) == 1, json.loads(line)["notes"]
        found.append(json.loads(notes[0].split("breaches: ", 1)[1]))
    return found


def test_the_hostile_agent_scores_zero_and_breaks_nothing(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "hostile"
    started = time.perf_counter()
    summary = _run(eval_domain, out, "--isolation", "required", "--concurrency", "2")
    took = time.perf_counter() - started
    assert summary["agent"] == "hostile"
    assert summary["tasks"] == LIMIT
    assert summary["passed"] == 0
    assert [[b for b in found if not b.startswith(OPEN)] for found in _breaches(out)] == [[]] * LIMIT
    verdicts = [t["verdict"] for t in json.loads((out / "score.json").read_text())["tasks"]]
    assert [v["failure_class"] for v in verdicts] == ["malformed"] * LIMIT
    assert took < 120
    assert subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True).stdout == ""


def test_unsandboxed_the_same_probe_gets_through(eval_domain: EvalDomain, tmp_path: Path) -> None:  # noqa: F811
    """The control: without the sandbox the probes find what the sandbox hides (so the test above
    proves the sandbox, not a blind probe)."""
    out = tmp_path / "bare"
    try:
        _run(eval_domain, out, "--isolation", "none", "--limit", "1", "--agent-env", "DIBENCH_HOSTILE_FLOOD_MB")
        [breaches] = _breaches(out)
        survived = subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["pkill", "-f", MARKER], check=False)
    assert {"read:repo", "read:state_dir", "read:run_dir", "write:run folder", "signal:evaluator", "tcp:pg_port",
            "tcp:bolt_port", "proc:environ", "limits:memory", "limits:processes", "limits:file-size"} <= set(breaches)
    assert survived.strip()  # its daemon outlived the attempt: what the sandboxed run must not allow
