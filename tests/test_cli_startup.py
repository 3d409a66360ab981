"""The CLI answers at once: `--help` and `-V` load no stage, no server driver, no heavy library."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("scipy", "langchain_core", "fastapi", "mcp", "pandas", "numpy", "bm25s", "neo4j", "sqlalchemy",
         "psycopg", "sqlglot", "pydantic_settings", "dibench.evaluation.kb", "dibench.evaluation.chance",
         "dibench.evaluation.agents", "dibench.service", "dibench.stores")
DIBENCH = Path(sys.executable).parent / "dibench"
# CPU seconds, generous: about 0.2 s on the 2-core development machine (2.4 s before).
BOUND = 1.0


def _cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize("args", [["-V"], ["--help"], ["export", "--help"]], ids=" ".join)
def test_start_up_cpu_time(args: list[str]) -> None:
    assert DIBENCH.exists(), "the console script of the virtual environment"
    best = min(_cpu([str(DIBENCH), *args]) for _ in range(2))
    assert best < BOUND, f"dibench {' '.join(args)} took {best:.2f} s of CPU"


def test_no_help_imports_a_heavy_module() -> None:
    """Every command's --help, in one process: the modules it loaded include none of HEAVY."""
    probe = """
import json, sys
import click
from click.testing import CliRunner
from dibench.cli.main import main

def leaves(group, path=()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from leaves(cmd, (*path, name))
        yield (*path, name)

runner = CliRunner()
failed = [p for p in leaves(main) if runner.invoke(main, [*p, "--help"]).exit_code != 0]
assert runner.invoke(main, ["-V"]).exit_code == 0
heavy = json.loads(sys.argv[1])
print(json.dumps({"failed": failed,
                  "loaded": sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))}))
"""
    res = subprocess.run([sys.executable, "-c", probe, json.dumps(HEAVY)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["failed"] == []
    assert out["loaded"] == []
