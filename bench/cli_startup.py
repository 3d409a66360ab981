"""CPU time of the CLI's start-up, and where it goes.

Runs `dibench -V`, `dibench --help` and `dibench export --help` each `--repeat` times in a fresh
process and prints the median user+system CPU seconds of each, beside the figures measured
before the heavy imports moved into the commands that use them; then the import profile of
`dibench.cli.main` (`python -X importtime`), the slowest modules by cumulative time.

    .venv/bin/python bench/cli_startup.py
    .venv/bin/python bench/cli_startup.py --repeat 5 --top 25
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (["-V"], ["--help"], ["export", "--help"])
# Measured on commit d0195ea (every stage imported at start-up) on the 2-core development machine,
# load average about 3.5, with /usr/bin/time: user + system seconds, two runs each.
BEFORE = {"-V": (2.44, 2.44), "--help": (2.44, 2.64), "export --help": (3.08, 2.49)}


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU of one child process running `argv` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dibench_argv() -> list[str]:
    """The installed entry point next to this interpreter (else `python -m`-style invocation)."""
    script = Path(sys.executable).parent / "dibench"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from dibench.cli.main import main; main()"]


def import_profile(top: int) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the `top` slowest imports of dibench.cli.main."""
    res = subprocess.run([sys.executable, "-X", "importtime", "-c", "import dibench.cli.main"],
                         capture_output=True, text=True, check=True)
    rows = []
    for line in res.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    base = dibench_argv()
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.repeat} runs, user+system CPU seconds")
    print(f"{'command':<24}{'before':>14}{'now':>8}")
    for argv in COMMANDS:
        label = " ".join(argv)
        now = statistics.median(cpu_seconds([*base, *argv]) for _ in range(args.repeat))
        before = "/".join(f"{x:.2f}" for x in BEFORE[label])
        print(f"dibench {label:<16}{before:>14}{now:>8.2f}")
    print(f"\nimport profile of dibench.cli.main (python -X importtime), top {args.top} by cumulative time")
    for micros, name in import_profile(args.top):
        print(f"{micros / 1000:9.1f} ms  {name}")


if __name__ == "__main__":
    main()
