"""Load on the HTTP API's rules-for route: 32 concurrent clients against a real uvicorn server.

    .venv/bin/python bench/api_load_bench.py                      # demo domain, 32 clients, 3,000 requests
    .venv/bin/python bench/api_load_bench.py --configs sync,async --requests 3000 --clients 32

For each server configuration (`--configs`) the script starts `uvicorn` on 127.0.0.1 (a free
port) in its own process with the app of `service.api.create_app`, waits for /health, sends
`--warmup` requests, then `--requests` GET /metrics/{id}/rules?domain=... requests from
`--clients` keep-alive connections (one thread each, in client processes of their own so the
client's GIL does not time the server), cycling over the domain's metric ids, and stops at
`--duration` seconds whatever the count. It prints p50/p95/p99/max in milliseconds and
throughput side by side per configuration, and writes them to `--out` with the load average.

Configurations (`CONFIGS`): `sync` is the route as it was (a plain `def` FastAPI runs in its
default thread pool of 40 threads, each call blocking a thread on two Neo4j round trips);
`async` is an `async def` route handing the blocking driver calls to a bounded pool
(`service.api.RULES_POOL`); `cached-h11` adds `service.api.RulesCache` (answers kept until the
graph changes, refreshed in the background); `cached` is the route as served now: the same on
uvicorn's httptools parser and uvloop event loop. The first three run on h11 and asyncio, as
uvicorn did before those were dependencies. `cpu_ms` is the server process's CPU time per
request, which, unlike latency, does not depend on what else the machine runs.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from http.client import HTTPConnection
from pathlib import Path
from threading import Barrier, Thread
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"
SERVER = """
import sys, uvicorn
from service.api import create_app
route, cache, http, loop = CONFIGS[sys.argv[2]]
uvicorn.run(create_app(rules_route=route, rules_cache_s=cache), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="warning", http=http, loop=loop)
"""
# name -> (rules route, cache max age, uvicorn's HTTP parser, event loop)
CONFIGS = {"sync": ("sync", 0.0, "h11", "asyncio"), "async": ("async", 0.0, "h11", "asyncio"),
           "cached-h11": ("async", 1.0, "h11", "asyncio"), "cached": ("async", 1.0, "httptools", "uvloop")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(route: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = dict(os.environ, DIBENCH_API_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-c", f"CONFIGS = {CONFIGS!r}\n{SERVER}", str(port), route],
                            cwd=REPO, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the API server did not answer /health within 60 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc): the server's cost per request
    does not depend on what else the machine is doing, its latency does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric_ids(domain: str) -> list[str]:
    """The metric ids of a built-in domain's pack (the graph holds them after `dibench demo`)."""
    sys.path.insert(0, str(REPO))
    from dibench.core.pack import load_pack

    return sorted(m.id for m in load_pack(domain).metrics)


def client_process(port: int, paths: list[str], threads: int, per_thread: int, deadline: float,
                   out: Any, start: Any) -> None:
    """`threads` keep-alive connections; each sends `per_thread` requests (or stops at deadline)."""
    lat: list[float] = []
    errors = [0]
    barrier = Barrier(threads)

    def run(i: int) -> None:
        conn = HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        barrier.wait()
        for n in range(per_thread):
            if time.time() > deadline:
                break
            t0 = time.perf_counter()
            conn.request("GET", paths[(i * 7 + n) % len(paths)], headers=headers)
            resp = conn.getresponse()
            resp.read()
            lat.append((time.perf_counter() - t0) * 1000)
            if resp.status != 200:
                errors[0] += 1
        conn.close()

    start.wait()
    workers = [Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.put((lat, errors[0]))


def load(port: int, paths: list[str], clients: int, requests: int, duration: float,
         procs: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    out, start = ctx.Queue(), ctx.Event()
    per_thread = max(1, requests // clients)
    deadline = time.time() + duration + 10
    split = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    ps = [ctx.Process(target=client_process, args=(port, paths, n, per_thread, deadline, out, start))
          for n in split if n]
    for p in ps:
        p.start()
    time.sleep(2)  # let every client process import and connect before the clock starts
    t0 = time.perf_counter()
    start.set()
    lat: list[float] = []
    errors = 0
    for _ in ps:
        part, err = out.get(timeout=duration + 120)
        lat += part
        errors += err
    wall = time.perf_counter() - t0
    for p in ps:
        p.join()
    q = statistics.quantiles(lat, n=100, method="inclusive")
    return {"requests": len(lat), "errors": errors, "seconds": round(wall, 2), "rps": round(len(lat) / wall, 1),
            "p50": round(q[49], 1), "p95": round(q[94], 1), "p99": round(q[98], 1), "max": round(max(lat), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", default="demo")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=3000, help="total timed requests per configuration")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--duration", type=float, default=60.0, help="stop a configuration after this many seconds")
    ap.add_argument("--client-procs", type=int, default=2, help="client processes sharing the connections")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "api_load.json"))
    args = ap.parse_args()
    results: dict[str, Any] = {}
    for route in args.configs.split(","):
        proc, port = start_server(route)
        try:
            ids = metric_ids(args.domain)
            paths = [f"/metrics/{m}/rules?domain={args.domain}" for m in ids]
            load(port, paths, args.clients, args.warmup, args.duration, args.client_procs)
            cpu0 = cpu_seconds(proc.pid)
            results[route] = load(port, paths, args.clients, args.requests, args.duration, args.client_procs)
            results[route]["cpu_ms"] = round((cpu_seconds(proc.pid) - cpu0) * 1000 / results[route]["requests"], 2)
            results[route]["metrics"] = len(ids)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    cols = ["requests", "errors", "rps", "p50", "p95", "p99", "max", "cpu_ms"]
    print(f"{'config':8}" + "".join(f"{c:>10}" for c in cols) + "   (ms; 127.0.0.1, "
          f"{args.clients} clients, load average {os.getloadavg()[0]:.2f})")
    for route, r in results.items():
        print(f"{route:8}" + "".join(f"{r[c]:>10}" for c in cols))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "loadavg": os.getloadavg(), "results": results},
                                         indent=2) + "\n")


if __name__ == "__main__":
    main()
