"""What an agent process can see, before and after the sandbox: the hostile agent's `--probe`.

`before` runs the probe as a command agent was run until the sandbox came (the evaluator's user and
whole environment, plus the run's MCP variables); `after` runs it as `dibench eval` runs a command
agent now (evaluation/sandbox.py, the allow-listed environment). Both get the same targets (the
install's paths, ports and the evaluator's pid, as `eval --agent hostile` gives them). Prints one
line per item, side by side, and writes the whole views to --out.

    .venv/bin/python bench/sandbox_probe.py [--out bench/results/sandbox_probe.json]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
from pathlib import Path
from typing import Any

from dibench.evaluation.agent_process import run_bounded
from dibench.evaluation.agents import hostile
from dibench.evaluation.sandbox import INNER_URL, Sandbox, SandboxSpec, agent_env


def probe(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = run_bounded([*argv, "--probe"], b"", env, 60)
    if done.code != 0:
        raise SystemExit(f"the probe failed ({done.code}): {done.err[-300:]}")
    return json.loads(done.out)  # type: ignore[no-any-return]


def rows(view: dict[str, Any]) -> dict[str, str]:
    seen = view["seen"]
    names = seen["environment"]
    secrets = [n for n in names if any(w in n for w in ("PASSWORD", "TOKEN", "KEY", "DATABASE_URL"))]
    return {
        "environment": f"{len(names)} variables; secret-looking: {', '.join(secrets) or 'none'}",
        "privileges": "uid {uid} gid {gid}, CapEff {CapEff}, NoNewPrivs {NoNewPrivs}".format(**seen["privileges"]),
        "files read": ", ".join(k for k, v in seen["readable"].items() if v) or "none of repo, state, run, venv, home",
        "files written": ", ".join(k for k, v in seen["writable"].items() if v) or "none of package, venv, run, state",
        "processes": f"{seen['processes']['visible']} visible ({seen['processes']['others']} not its own)",
        "sockets": ", ".join(k for k, v in seen["tcp"].items() if v) or "no service port reachable",
        "breaches": ", ".join(view["breaches"]) or "none",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/sandbox_probe.json"))
    args = parser.parse_args()
    run_dir = args.out.parent / "probe-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    targets = hostile.hostile_targets(run_dir, ["task:a", "task:b"])
    before = probe(["/usr/bin/python3", str(hostile.SCRIPT)],
                   {**os.environ, **targets, "DIBENCH_MCP_TOKEN": "run-token", "DIBENCH_TASK_ID": "task:a"})
    box = Sandbox(SandboxSpec())
    server = socket.socket(socket.AF_UNIX)  # the MCP socket a run binds in; the probe only needs it to exist
    server.bind(str(box.socket_path))
    server.listen(1)
    try:
        env = agent_env(SandboxSpec(), {"DIBENCH_MCP_URL": INNER_URL, "DIBENCH_MCP_TOKEN": "attempt-token",
                                        "DIBENCH_TASK_ID": "task:a"}, sandboxed=True)
        after = probe(box.wrap(hostile.hostile_command(box).split()), {**env, **targets})
    finally:
        server.close()
        box.close()
    args.out.write_text(json.dumps({"before": before, "after": after}, indent=1) + "\n")
    b, a = rows(before), rows(after)
    for item in b:
        print(f"{item}\n  before: {b[item]}\n  after:  {a[item]}")


if __name__ == "__main__":
    main()
