"""Seconds from `dibench mcp --transport http` starting to its first answer (an MCP `initialize`),
wall-clock and the server process's CPU (user+system), which a loaded machine inflates less.

    .venv/bin/python bench/mcp_first_answer.py --domain demo [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User+system seconds of a live process and its reaped children (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def first_answer(domain: str, out: Path, timeout: float = 120.0) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) until the server's first 200 to `initialize`."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dibench"), "mcp", "--domain", domain,
                             "--transport", "http", "--port", str(port), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(INITIALIZE).encode(),
                                     headers={"content-type": "application/json",
                                              "accept": "application/json, text/event-stream"})
    try:
        while time.perf_counter() - started < timeout:
            if proc.poll() is not None:
                raise SystemExit(f"dibench mcp stopped: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
            try:
                with urllib.request.urlopen(request, timeout=5) as reply:
                    if reply.status == 200:
                        return time.perf_counter() - started, cpu_seconds(proc.pid)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.02)
        raise SystemExit(f"no answer within {timeout:.0f}s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="demo")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-o", "--output", type=Path, default=Path("out/bench-mcp"))
    args = ap.parse_args()
    runs = [first_answer(args.domain, args.output / str(i)) for i in range(args.repeat)]
    for i, (wall, cpu) in enumerate(runs, 1):
        print(f"run {i}: first answer after {wall:.2f}s wall, {cpu:.2f}s server CPU")
    print(f"median: {statistics.median(w for w, _ in runs):.2f}s wall, "
          f"{statistics.median(c for _, c in runs):.2f}s server CPU; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
