"""An agent attempt's sandbox (evaluation/sandbox.py): what a process inside sees and reaches.

bubblewrap is installed by scripts/install.sh, so the sandbox is real here: the probe runs as an
agent would (`Sandbox.wrap` + `run_bounded`) and reports its uid, environment, processes, files and
sockets; the MCP socket bound in answers on 127.0.0.1 inside; nothing else does; a detached
grandchild dies with the attempt; `--isolation` says or refuses when no sandbox can be made.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dibench.core.config import get_settings
from dibench.core.errors import ConfigError
from dibench.evaluation import sandbox as sb
from dibench.evaluation.agent_process import run_bounded
from dibench.evaluation.sandbox import INNER_PORT, Limits, Sandbox, SandboxSpec, agent_env, choose

ROOT = Path(__file__).resolve().parents[1]

PROBE = r'''
import json, os, socket, sys
def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False
def readable(p):
    try:
        os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(1)
        return True
    except OSError:
        return False
mcp = socket.create_connection(("127.0.0.1", %(port)d), timeout=5)
mcp.sendall(b"ping")
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "env": sorted(os.environ),
                  "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                  "mcp": mcp.recv(64).decode(), "pg": reach("127.0.0.1", %(pg)d),
                  "bolt": reach("127.0.0.1", %(bolt)d), "readable": {p: readable(p) for p in sys.argv[1:]},
                  "root_writable": os.access("/", os.W_OK), "home_writable": os.access(os.environ["HOME"], os.W_OK),
                  "fds": sorted(int(f) for f in os.listdir("/proc/self/fd"))}))
'''


@pytest.fixture()
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox(SandboxSpec())
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(box.socket_path))
    os.chmod(box.socket_path, 0o666)
    server.listen(4)

    def echo() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"pong:" + conn.recv(64))
            conn.close()

    threading.Thread(target=echo, daemon=True).start()
    yield box
    server.close()
    box.close()


def test_bubblewrap_is_installed_and_makes_a_sandbox() -> None:
    assert sb.unavailable() is None


def test_inside_the_sandbox_only_the_mcp_socket_answers(sandbox: Sandbox, tmp_path: Path) -> None:
    settings = get_settings()
    secret = tmp_path / "run-folder"
    secret.mkdir()
    code = PROBE % {"port": INNER_PORT, "pg": settings.pg_port, "bolt": settings.neo4j_bolt_port}
    paths = [str(ROOT), str(settings.state_dir), str(secret), "/root", "/var/run/postgresql", "/home"]
    env = agent_env(SandboxSpec(), {"DIBENCH_MCP_TOKEN": "t"}, sandboxed=True)
    done = run_bounded(sandbox.wrap(["python3", "-c", code, *paths]), b"", env, 20)
    assert done.code == 0, done.err
    seen = json.loads(done.out)
    assert (seen["uid"], seen["gid"]) == (65534, 65534)
    assert seen["env"] == sorted(["PATH", "HOME", "LANG", "DIBENCH_MCP_TOKEN", "PWD"])  # PWD: bwrap's, = HOME
    assert seen["mcp"] == "pong:ping"
    assert (seen["pg"], seen["bolt"]) == (False, False)
    assert seen["readable"] == {str(ROOT): False, str(settings.state_dir): False, str(secret): False,
                                "/root": False, "/var/run/postgresql": False, "/home": True}
    assert seen["pids"][0] == 1  # the sandbox's own init; then the probe: no process of the host
    assert len(seen["pids"]) <= 3
    assert (seen["root_writable"], seen["home_writable"]) == (False, True)
    assert seen["fds"][:3] == [0, 1, 2]


def test_a_detached_grandchild_dies_with_its_attempt(sandbox: Sandbox) -> None:
    marker = f"dibench-orphan-{os.getpid()}"
    code = ("import subprocess, sys, time; subprocess.Popen(['setsid', 'bash', '-c', 'exec -a %s sleep 60']); "
            "time.sleep(0.5); print(subprocess.run(['pgrep', '-f', '%s'], capture_output=True).returncode == 0); "
            "sys.stdout.flush(); time.sleep(60)") % (marker, marker)
    started = time.perf_counter()
    done = run_bounded(sandbox.wrap(["python3", "-c", code]), b"", agent_env(SandboxSpec(), {}, sandboxed=True),
                       timeout=2)
    assert done.timed_out
    assert done.out.strip() == "True"  # the daemon was running inside
    assert time.perf_counter() - started < 6
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == ""


def test_limits_hold_inside_and_a_bind_is_read_only(sandbox: Sandbox, tmp_path: Path) -> None:
    shared = Path(tempfile.mkdtemp(prefix="dibench-bind-"))  # readable by uid 65534, unlike tmp_path
    try:
        (shared / "agent.txt").write_text("hello")
        shared.chmod(0o755)
        box = Sandbox(SandboxSpec(binds=(shared,), limits=Limits(processes=64, cpu_seconds=30)))
        box.socket_path.touch()
        code = ("import resource as r, os, sys; p = sys.argv[1]; "
                "print([r.getrlimit(x)[0] for x in (r.RLIMIT_AS, r.RLIMIT_NPROC, r.RLIMIT_FSIZE, r.RLIMIT_CPU)]); "
                "print(open(p + '/agent.txt').read(), os.access(p, os.W_OK))")
        done = run_bounded(box.wrap(["python3", "-c", code, str(shared)]), b"", {"PATH": sb.PATH}, 20)
        box.close()
    finally:
        shutil.rmtree(shared)
    assert done.code == 0, done.err
    limits, read = done.out.splitlines()
    assert json.loads(limits) == [4 << 30, 64, 256 << 20, 30]
    assert read == "hello False"


def test_a_bind_the_agent_cannot_read_is_one_line_before_the_run(tmp_path: Path) -> None:
    private = tmp_path / "venv"  # under pytest's 0700 folder: uid 65534 cannot reach it
    private.mkdir()
    box = Sandbox(SandboxSpec(binds=(private,)))
    box.socket_path.touch()
    try:
        with pytest.raises(ConfigError, match="the agent sandbox does not start: bwrap: "):
            box.verify()
    finally:
        box.close()


def test_a_bind_may_not_show_the_state_or_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="would show"):
        choose("auto", SandboxSpec(binds=(tmp_path,)), private=(tmp_path / "run",))
    with pytest.raises(ConfigError, match="no such path"):
        choose("auto", SandboxSpec(binds=(tmp_path / "absent",)))


def test_without_bwrap_auto_says_what_is_lost_and_required_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    sb.unavailable.cache_clear()
    try:
        lines: list[str] = []
        assert choose("auto", SandboxSpec(), warn=lines.append) is None
        assert len(lines) == 1
        assert lines[0].startswith("isolation: no sandbox (bubblewrap (bwrap) is not installed")
        with pytest.raises(ConfigError, match="--isolation required"):
            choose("required", SandboxSpec())
        assert choose("none", SandboxSpec()) is None
    finally:
        monkeypatch.undo()
        sb.unavailable.cache_clear()
