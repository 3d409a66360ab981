"""What a sandbox costs per agent attempt: the same agent run sandboxed and unsandboxed, side by side.

Each attempt is what `dibench eval --agent-cmd` does per task (evaluation/agent_process.run_bounded
with the allow-listed environment), for two agents: `start` (python3 that exits at once: process,
namespace and PID-1 set-up) and `one-call` (python3 that makes one HTTP request to its MCP URL and
reads the reply: adds the loopback forwarder and the Unix socket). The server is a small HTTP
responder on the sandbox's Unix socket (sandboxed) or on 127.0.0.1 (unsandboxed). Attempts of the
two modes alternate, so drift of the machine's load hits both alike.

    .venv/bin/python bench/sandbox_bench.py [--attempts 40] [--out bench/results/sandbox.json]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dibench.evaluation.agent_process import run_bounded
from dibench.evaluation.sandbox import INNER_URL, Sandbox, SandboxSpec, agent_env, unavailable

REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
AGENTS = {
    "start": "pass",
    "one-call": ("import os, urllib.request; "
                 "assert urllib.request.urlopen(os.environ['DIBENCH_MCP_URL'], timeout=10).read() == b'ok'"),
}


def serve(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            conn.sendall(REPLY)


def timed(run: Callable[[], int]) -> float:
    started = time.perf_counter()
    code = run()
    if code != 0:
        raise SystemExit(f"an attempt failed with status {code}")
    return (time.perf_counter() - started) * 1000


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"median_ms": round(statistics.median(ordered), 1), "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
            "min_ms": round(ordered[0], 1), "mean_ms": round(statistics.fmean(ordered), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("bench/results/sandbox.json"))
    args = parser.parse_args()
    problem = unavailable()
    if problem:
        raise SystemExit(f"no sandbox on this machine: {problem}")
    box = Sandbox(SandboxSpec())
    uds = socket.socket(socket.AF_UNIX)
    uds.bind(str(box.socket_path))
    os.chmod(box.socket_path, 0o666)
    tcp = socket.create_server(("127.0.0.1", 0))
    for listener in (uds, tcp):
        listener.listen(64)
        threading.Thread(target=serve, args=(listener,), daemon=True).start()
    bare_url = f"http://127.0.0.1:{tcp.getsockname()[1]}/mcp"
    spec = SandboxSpec()
    results: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for name, code in AGENTS.items():
            argv = ["/usr/bin/python3", "-I", "-c", code]  # one interpreter in both modes (not a PATH shim)
            sandboxed_env = agent_env(spec, {"DIBENCH_MCP_URL": INNER_URL}, sandboxed=True)
            bare_env = agent_env(spec, {"DIBENCH_MCP_URL": bare_url}, sandboxed=False)
            modes: dict[str, list[float]] = {"unsandboxed": [], "sandboxed": []}
            for i in range(args.attempts + 3):  # the first 3 of each warm the page cache
                bare = timed(lambda: run_bounded(argv, b"{}", bare_env, 30).code)
                boxed = timed(lambda: run_bounded(box.wrap(argv), b"{}", sandboxed_env, 30).code)
                if i >= 3:
                    modes["unsandboxed"].append(bare)
                    modes["sandboxed"].append(boxed)
            results[name] = {mode: summary(ms) for mode, ms in modes.items()}
            paired = [b - a for a, b in zip(modes["unsandboxed"], modes["sandboxed"])]
            results[name]["overhead"] = summary(paired)
    finally:
        uds.close()
        tcp.close()
        box.close()
    record = {"attempts": args.attempts, "loadavg": os.getloadavg(), "cpus": os.cpu_count(), "agents": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{'agent':<10} {'unsandboxed ms (median / p90)':>30} {'sandboxed ms (median / p90)':>29} "
          f"{'overhead ms (median / p90)':>28}")
    for name, r in results.items():
        cells = [f"{r[m]['median_ms']:.1f} / {r[m]['p90_ms']:.1f}" for m in ("unsandboxed", "sandboxed", "overhead")]
        print(f"{name:<10} {cells[0]:>30} {cells[1]:>29} {cells[2]:>28}")
    print(f"{args.attempts} attempts each, load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.out}")


if __name__ == "__main__":
    main()
