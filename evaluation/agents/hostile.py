"""`dibench eval --agent hostile`: the hostile reference agent (agents/hostile_agent.py) as a
command agent, told everything an attacker could learn of this install (DIBENCH_HOSTILE_TARGETS).

It must score 0, and its last stderr line (kept in the trace's notes) must list no breach.
"""
from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from dibench.core.config import get_settings
from dibench.evaluation.sandbox import Sandbox

SCRIPT = Path(__file__).with_name("hostile_agent.py")
NAME, MODEL = "hostile", "reference:hostile"


def hostile_command(sandbox: Sandbox | None) -> str:
    where = sandbox.share("hostile_agent.py", SCRIPT) if sandbox is not None else str(SCRIPT)
    return f"python3 {where}"


def hostile_targets(out_dir: Path, task_ids: Sequence[str]) -> dict[str, str]:
    settings = get_settings()
    package = Path(__file__).resolve().parents[1]
    targets = {"repo": str(package.parent), "package": str(package), "state_dir": str(settings.state_dir.resolve()),
               "run_dir": str(out_dir.resolve()), "venv": sys.prefix,
               "site_packages": sysconfig.get_paths()["purelib"], "home": str(Path.home()),
               "evaluator_pid": os.getpid(), "pg_port": settings.pg_port, "bolt_port": settings.neo4j_bolt_port,
               "api_port": 8765, "task_ids": list(task_ids), "daemon_seconds": 30, "flood_mb": 300}
    return {"DIBENCH_HOSTILE_TARGETS": json.dumps(targets)}
