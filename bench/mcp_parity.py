"""One deterministic scripted agent through the built-in harness and through MCP, on the same tasks.

    .venv/bin/python bench/mcp_parity.py --domain demo --n 30 [--out out/mcp-parity]

The agent (tests/fixtures/scripted_agent.py: search the question, run the task's base SQL through
the SQL tool, derive the answer from the rows the tool returned) runs three ways on the first N
standard tasks of a seeded sample (the same tasks every time): in the harness as a chat model
(`LlmAgent`), as an MCP client of one `dibench mcp` session over stdio, and as a program per task
(`dibench eval --agent-cmd`, MCP over HTTP). Prints accuracy overall and by tier of each route,
and how many per-task verdicts agree; writes bench/results/mcp_parity.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dibench.evaluation.agents.llm import LlmAgent  # noqa: E402
from dibench.evaluation.agents.tools import schema_description  # noqa: E402
from dibench.evaluation.harness import run_tasks  # noqa: E402
from dibench.evaluation.tasks import domain_schema  # noqa: E402
from dibench.evaluation.kb import load_knowledge_base  # noqa: E402
from dibench.evaluation.tasks import load_tasks, write_tasks_jsonl  # noqa: E402
from dibench.stores.graph import get_graph  # noqa: E402
from dibench.stores.warehouse import get_warehouse  # noqa: E402
from tests.fixtures.scripted_agent import TASKS_ENV, Brain, BrainChatModel, mcp_episode, session_caller  # noqa: E402

DIBENCH = str(Path(sys.executable).with_name("dibench"))


def verdicts(out: Path) -> dict[str, dict[str, Any]]:
    score = json.loads((out / "score.json").read_text())
    return {r["verdict"]["task_id"]: {"passed": r["verdict"]["passed"], "tier": r["tier"]} for r in score["tasks"]}


def over_stdio(domain: str, ids_file: Path, out: Path, brain: Brain, ids: list[str]) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=DIBENCH, args=["mcp", "--domain", domain, "--task-ids", str(ids_file),
                                                          "--agent-name", "scripted-mcp", "-o", str(out)],
                                   env=dict(os.environ), cwd=str(ROOT))

    async def drive() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for task_id in ids:
                await mcp_episode(session_caller(session), brain, task_id)

    asyncio.run(drive())


def table(results: dict[str, dict[str, dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for group in ("all", "K", "K+A", "K+A+R"):
        row = [group]
        for v in results.values():
            sel = [x for x in v.values() if group == "all" or x["tier"] == group]
            row.append(f"{sum(x['passed'] for x in sel)}/{len(sel)}")
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="demo")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "mcp-parity")
    args = ap.parse_args()
    graph, wh = get_graph(), get_warehouse()
    standard = load_tasks(graph, args.domain, variants=["standard"])
    tasks = sorted(random.Random(args.seed).sample(standard, min(args.n, len(standard))), key=lambda t: t.task_id)
    ids = [t.task_id for t in tasks]
    args.out.mkdir(parents=True, exist_ok=True)
    ids_file = args.out / "task_ids.txt"
    ids_file.write_text("\n".join(ids) + "\n")
    private = args.out / "private.jsonl"
    write_tasks_jsonl(tasks, private)
    brain = Brain(tasks)
    db_schema = domain_schema(graph, args.domain)
    seconds: dict[str, float] = {}

    t0 = time.perf_counter()
    agent = LlmAgent(BrainChatModel(brain=brain), schema_description(wh, db_schema), max_turns=5)
    run_tasks(tasks, agent, wh.for_schema(db_schema), load_knowledge_base(graph, args.domain), args.out / "harness",
              domain=args.domain, db_schema=db_schema, max_turns=5)
    seconds["harness"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    over_stdio(args.domain, ids_file, args.out / "mcp-stdio", brain, ids)
    seconds["mcp-stdio"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    env = {**os.environ, TASKS_ENV: str(private), "PYTHONPATH": str(ROOT)}
    subprocess.run([DIBENCH, "eval", "--domain", args.domain, "--task-ids", str(ids_file), "--agent-cmd",
                    f"{sys.executable} -m tests.fixtures.scripted_agent", "--concurrency", "2", "--json",
                    "-o", str(args.out / "mcp-cmd")], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds["mcp-cmd"] = time.perf_counter() - t0

    results = {name: verdicts(args.out / name) for name in ("harness", "mcp-stdio", "mcp-cmd")}
    agree = {name: sum(results[name][i]["passed"] == results["harness"][i]["passed"] for i in ids)
             for name in results}
    print(f"{len(ids)} standard tasks of {args.domain} (seed {args.seed})")
    print("| tier | " + " | ".join(results) + " |")
    print("|---" * (len(results) + 1) + "|")
    for row in table(results):
        print("| " + " | ".join(row) + " |")
    print("per-task verdicts equal to the harness's: " + ", ".join(f"{k} {v}/{len(ids)}" for k, v in agree.items()))
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    out = ROOT / "bench" / "results" / "mcp_parity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"domain": args.domain, "tasks": ids, "table": table(results), "agree": agree,
                               "seconds": seconds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
