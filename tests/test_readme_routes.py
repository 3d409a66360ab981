"""The README's "Using it" routes run as written, in order, from a folder laid out as the
repository's root (its `domains/` and `evaluation/`): each `dibench` line, with only its
placeholders filled in (a metric, a rule, the run `generate` printed, the files earlier lines
wrote, a folder holding a small agent program) and its optional `[...]` parts left out. The
servers (`serve`, `mcp`) are started, asked once and stopped. Left out, each with the test that
runs the same command on less data: the Berka demo, the routing line on the whole Spider catalog
and the Inspect route (tests/test_readme_commands.py runs it as written on an export of two tasks).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dibench.core.config import REPO_ROOT
from dibench.stores.graph import Graph
from tests.test_readme_commands import shell_blocks

DIBENCH = Path(sys.executable).parent / "dibench"
SKIPPED = {  # a route prefix -> the test that runs the same command on less data
    "dibench demo --domain berka": "tests/test_real_domains_generation.py (Berka at its test size)",
    "dibench catalog ": "tests/test_routing_pipeline.py and test_catalog*.py (small Spider catalogs)",
    "dibench routing ": "tests/test_routing_pipeline.py (small Spider catalogs)",
    "inspect eval ": "tests/test_readme_commands.py::test_readme_inspect_route_runs_as_written",
}
SERVERS = {"dibench serve": "http://127.0.0.1:8765/openapi.json"}
LAST = ("dibench domain remove ",)  # run after every other route: it removes what they read
METRIC, IMPACT_RULE, REMOVED_RULE = "MV-SLA-003", "RULE-SLA-WEEKEND-BASIC", "RULE-REF-GOODWILL"


def using_it() -> list[str]:
    """The routes of the README's "Using it" block: its `dibench ...` and `inspect ...` lines,
    comment dropped, `[optional]` parts left out, of alternatives `a|b` the first."""
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("## Using it", 1)[1]
    first = shell_blocks(section)[0][1]
    out = []
    for raw in first:
        line = re.sub(r"\s#\s.*$", "", raw).strip()
        if not line.startswith(("dibench ", "inspect ")):
            continue
        line = re.sub(r"\s*\[[^\]]*\]", "", line)
        out.append(re.sub(r"(\S+?)(?:\|[^\s|]+)+", r"\1", line))
    return out


def test_the_routes_are_the_ones_this_test_knows() -> None:
    routes = using_it()
    assert len(routes) >= 30, routes
    assert any(r.startswith("dibench generate ") for r in routes)


@pytest.fixture()
def walk(tmp_path: Path, graph: Graph) -> Iterator[tuple[Path, Path]]:
    """A working folder laid out as the repository's root, and a folder holding an agent program
    that the sandbox's user may read (pytest's own folders are private); the demo domain is
    removed afterwards."""
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("domains", "evaluation"):
        (work / name).symlink_to(REPO_ROOT / name, target_is_directory=True)
    agent = Path(tempfile.mkdtemp(prefix="dibench-readme-agent-"))
    agent.chmod(0o755)
    (agent / "agent.py").write_text("import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'answer': None}))\n")
    (agent / "agent.py").chmod(0o644)
    try:
        yield work, agent
    finally:
        shutil.rmtree(agent)
        subprocess.run([str(DIBENCH), "domain", "remove", "demo", "--yes"], cwd=work, capture_output=True,
                       timeout=300)


# optional parts this test fills in: the demo company at a quarter of its default size (20,000 tickets),
# so that every route runs on less data (about half the test's time; the routes are the same); loaded
# from its folder too, the demo keeps that size
OPTIONS = {"dibench domain load demo": ["--size", "5000"], "dibench domain load path/to/pack": ["--size", "5000"]}


def fill(route: str, state: dict[str, str]) -> str:
    """The route with its placeholders filled in from what the earlier routes left."""
    words = {"<METRIC_ID>": METRIC, "RUN": state.get("run", "RUN"), "NAME": "demo",
             "TASKS.jsonl": "out/x/private.jsonl", "ANSWERS.jsonl": "out/eval/oracle/answers.jsonl",
             "path/to/pack": "domains/demo"}  # a pack's own folder: the demo's, at the size above
    rule = REMOVED_RULE if route.startswith("dibench remove-rule ") else IMPACT_RULE
    parts = [words.get(w, rule if w == "RULE_ID" else w) for w in shlex.split(route)] + OPTIONS.get(route, [])
    return shlex.join(parts).replace("/opt/agent", state["agent"])


@pytest.mark.timeout(1800)  # about 40 routes on the demo: 4-10 minutes, by the machine's load
def test_every_route_runs_as_written(walk: tuple[Path, Path]) -> None:
    work, agent = walk
    state = {"agent": str(agent)}
    env = {**os.environ, "PATH": f"{DIBENCH.parent}:{os.environ['PATH']}", "PYTHONPATH": str(REPO_ROOT)}
    # `--agent llm` needs a chat model: the scripted one, on the private task records the oracle's run wrote
    llm = {**env, "DIBENCH_LLM_PROVIDER": "tests.fixtures.scripted_agent:chat_model",
           "DIBENCH_SCRIPTED_TASKS": str(work / "out" / "eval" / "oracle" / "tasks.jsonl")}
    routes = using_it()
    routes = [r for r in routes if not r.startswith(LAST)] + [r for r in routes if r.startswith(LAST)]
    ran, failed, timings = [], [], []
    for route in routes:
        if any(route.startswith(p) for p in SKIPPED):
            continue
        command = fill(route, state)
        started = time.perf_counter()
        if command in SERVERS:
            ok, output = _serve(command, SERVERS[command], work, env)
        else:  # a route that asks before it deletes is answered yes, as its user would
            res = subprocess.run(["bash", "-c", command], cwd=work, env=llm if "--agent llm" in command else env,
                                 capture_output=True, text=True, timeout=900,
                                 input="y\n" if " remove " in command else "")
            ok, output = res.returncode == 0, res.stdout + res.stderr
        timings.append(f"{time.perf_counter() - started:6.1f}s  {command}")
        print(timings[-1], file=sys.stderr, flush=True)
        ran.append(command)
        if not ok:
            failed.append(f"`{command}`:\n{output[-1500:]}")
        if found := re.search(r"run (run:demo/\S+?)[: ]", output):
            state.setdefault("run", found.group(1))
    print("\n".join(timings))
    assert not failed, "\n\n".join(failed) + "\n\n" + "\n".join(timings)
    assert "run" in state and len(ran) >= 25


def _serve(command: str, url: str, cwd: Path, env: dict[str, str]) -> tuple[bool, str]:
    """Start a server route, wait for its first answer at `url`, stop it."""
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    answered = False
    try:
        deadline = time.monotonic() + 60
        while not answered and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    answered = reply.status == 200 and bool(json.loads(reply.read()))
            except OSError:
                time.sleep(0.2)
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    return answered and proc.returncode in (0, -15), output or f"no answer at {url}"
