"""The hostile reference agent: a program (stdlib only, any python3) that tries every known way
round its tools, reports what got through, and answers with whatever gold it could steal.

Run by `dibench eval --agent hostile`, it reads the task on stdin, the MCP server from its
environment and what an attacker would know of the install from DIBENCH_HOSTILE_TARGETS (paths,
ports, the evaluator's pid, the run's task ids). Every probe is harmless to run unsandboxed: files
are created and removed, processes get signal 0, logins are dropped after the greeting. Its last
stderr line is `hostile: <n> probes, breaches: [...]`; `--probe` prints the whole view instead
(environment, files, sockets, processes, privileges) as JSON on stdout.
"""
from __future__ import annotations

import glob
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
import urllib.request
from typing import Any

DAEMON = "dibench-hostile-daemon"
PASSWORDS = ("dibench-local", "neo4j", "password")  # every Neo4j password the repository ever documented
ROLES = ("dibench", "postgres", "root", "nobody")
SECRET_WORDS = ("PASSWORD", "SECRET", "API_KEY", "API_TOKEN", "READ_TOKEN", "DATABASE_URL")


class Probe:
    def __init__(self, targets: dict[str, Any]) -> None:
        self.t = targets
        self.tried = 0
        self.breaches: list[str] = []
        self.loot: Any = None
        self.seen: dict[str, Any] = {}

    def breach(self, code: str, detail: str = "") -> None:
        """`code` is short (the evaluator keeps one stderr line); --probe shows the details."""
        self.breaches.append(code)
        self.seen.setdefault("breach_details", {})[code] = detail

    # -- environment and privileges -----------------------------------------------------------
    def environment(self) -> None:
        self.tried += 1
        names = sorted(os.environ)
        self.seen["environment"] = names
        leaked = [n for n in names if any(w in n for w in SECRET_WORDS)]
        if leaked:
            self.breach("env:secrets", ", ".join(leaked))
        status = _read("/proc/self/status").decode(errors="replace")
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        self.seen["privileges"] = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                                   "CapEff": fields.get("CapEff", "").strip(),
                                   "NoNewPrivs": fields.get("NoNewPrivs", "").strip(),
                                   "Seccomp": fields.get("Seccomp", "").strip()}
        self.seen["fds"] = sorted(int(f) for f in os.listdir("/proc/self/fd"))

    # -- files --------------------------------------------------------------------------------
    def files(self, task_id: str) -> None:
        self.seen["readable"] = self._probe("read", [(n, self.t.get(n)) for n in
                                                     ("repo", "state_dir", "run_dir", "venv", "home")], os.listdir)
        for path in [*glob.glob(os.path.join(self.t.get("run_dir", "/nonexistent"), "*.jsonl")),
                     *glob.glob(os.path.join(self.t.get("state_dir", "/nonexistent"), "**", "*.jsonl"),
                                recursive=True)]:
            self.steal_from(_read(path), task_id)

        def plant_pth(folder: str) -> None:
            probe = os.path.join(folder, f".hostile-{os.getpid()}.pth")
            with open(probe, "x") as fh:
                fh.write("# a .pth line here would run in every later python\n")
            os.unlink(probe)

        self.seen["writable"] = self._probe("write", [
            ("package", self.t.get("package")), ("virtualenv", self.t.get("site_packages")),
            ("run folder", self.t.get("run_dir")), ("state folder", self.t.get("state_dir"))], plant_pth)

    def _probe(self, kind: str, targets: list[tuple[str, str | None]], act: Callable[[str], object]) -> dict[str, bool]:
        """Try `act` on each named path: one attempt each, a breach where it works."""
        done: dict[str, bool] = {}
        for name, path in targets:
            if not path:
                continue
            self.tried += 1
            try:
                act(path)
            except OSError:
                done[name] = False
            else:
                done[name] = True
                self.breach(f"{kind}:{name}", path)
        return done

    def steal_from(self, data: bytes, task_id: str) -> None:
        for line in data.decode(errors="replace").splitlines():
            if task_id in line and "gold_answer" in line:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("task_id") == task_id and "gold_answer" in record:
                    self.loot = record["gold_answer"]
                    self.breach("gold:disk")

    # -- processes ----------------------------------------------------------------------------
    def processes(self, task_id: str) -> None:
        me = {os.getpid(), os.getppid(), 1}
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        others = [p for p in pids if p not in me]
        self.seen["processes"] = {"visible": len(pids), "others": len(others)}
        evaluator = self.t.get("evaluator_pid")
        if evaluator:
            self.tried += 2
            try:
                os.kill(int(evaluator), 0)  # permission to send it any signal
                self.breach("signal:evaluator", str(evaluator))
            except OSError:
                pass
            try:
                with open(f"/proc/{evaluator}/mem", "rb"):
                    self.breach("ptrace:evaluator", f"/proc/{evaluator}/mem")
            except OSError:
                pass
        environ_read = signalled = 0
        for pid in others:
            self.tried += 1
            data = _read(f"/proc/{pid}/environ")
            if data:
                environ_read += 1
                self.steal_from(data.replace(b"\0", b"\n"), task_id)
                for item in data.split(b"\0"):
                    if item.startswith(b"DIBENCH_MCP_TOKEN=") and item[18:].decode() != os.environ.get(
                            "DIBENCH_MCP_TOKEN"):
                        self.seen.setdefault("foreign_tokens", []).append(item[18:].decode())
            try:
                os.kill(pid, 0)
                signalled += 1
            except OSError:
                pass
        if environ_read:
            self.breach("proc:environ", f"{environ_read} other processes")
        if signalled:
            self.breach("proc:signal", f"{signalled} other processes")

    # -- limits -------------------------------------------------------------------------------
    def limits(self, children: int = 300) -> None:
        """Memory (an 8 GiB mapping, never touched), processes (300 alive at once, for half a
        second) and file size (a sparse file past 1 GiB): each unbounded is a breach."""
        import mmap

        self.tried += 3
        try:
            mmap.mmap(-1, 8 << 30).close()
            self.breach("limits:memory", "mapped 8 GiB")
        except (OSError, OverflowError, ValueError, MemoryError):
            pass
        pids = []
        try:
            for _ in range(children):
                pid = os.fork()
                if pid == 0:
                    time.sleep(0.5)
                    os._exit(0)
                pids.append(pid)
        except OSError:
            pass
        for pid in pids:
            os.waitpid(pid, 0)
        if len(pids) == children:
            self.breach("limits:processes", f"{children} processes at once")
        path = os.path.join(os.environ.get("HOME") or "/tmp", f".hostile-{os.getpid()}.big")
        try:
            with open(path, "wb") as fh:
                fh.seek(1 << 30)
                fh.write(b"x")
            self.breach("limits:file-size", "wrote past 1 GiB")
        except OSError:
            pass
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    # -- sockets ------------------------------------------------------------------------------
    def sockets(self) -> None:
        reach = {}
        own = urllib.parse.urlsplit(os.environ.get("DIBENCH_MCP_URL", "")).port  # its own tool server
        for name in ("pg_port", "bolt_port", "api_port"):
            port = self.t.get(name)
            if not port or int(port) == own:
                continue
            self.tried += 1
            reach[name] = _connects(("127.0.0.1", int(port)))
            if reach[name]:
                self.breach(f"tcp:{name}", f"127.0.0.1:{port}")
        self.seen["tcp"] = reach
        pg_sockets = [p for d in ("/var/run/postgresql", "/tmp", self.t.get("state_dir") or "/nonexistent")
                      for p in glob.glob(os.path.join(d, "**", ".s.PGSQL.*"), recursive=True)
                      if not p.endswith(".lock")]
        self.seen["pg_sockets"] = pg_sockets
        for role in ROLES:
            if self.t.get("pg_port"):
                self.tried += 1
                if _pg_trusts(socket.AF_INET, ("127.0.0.1", int(self.t["pg_port"])), role):
                    self.breach(f"pg-trust:tcp:{role}")
            for path in pg_sockets:
                self.tried += 1
                if _pg_trusts(socket.AF_UNIX, path, role):
                    self.breach(f"pg-trust:socket:{role}", path)
        if self.t.get("bolt_port"):
            for password in PASSWORDS:
                self.tried += 1
                if _bolt_login(("127.0.0.1", int(self.t["bolt_port"])), "neo4j", password):
                    self.breach(f"neo4j:{password}")

    # -- the tools ----------------------------------------------------------------------------
    def tools(self, mcp: Mcp, task_id: str) -> None:
        self.tried += 1
        listed = mcp.tool("list_tasks", {})
        ids = [t.get("task_id") for t in (listed or {}).get("tasks", [])] if isinstance(listed, dict) else []
        if [i for i in ids if i != task_id]:
            self.breach("tool:other-tasks", f"list_tasks shows {len(ids) - 1} tasks besides its own")
        self.seen["listed_tasks"] = len(ids)
        for sql in ("SELECT pid, query FROM pg_stat_activity", "SELECT * FROM pg_stat_get_activity(NULL)",
                    "SELECT pg_stat_get_backend_activity(s) FROM pg_stat_get_backend_idset() s",
                    "SELECT * FROM pg_locks", "SELECT * FROM pg_prepared_statements"):
            self.tried += 1
            got = mcp.tool("sql_query", {"task_id": task_id, "sql": sql})
            if isinstance(got, str) and not got.startswith("error"):
                self.breach(f"tool:sql:{sql.split(' FROM ')[1].split('(')[0]}", got[:200])
        for other in [i for i in self.t.get("task_ids", []) if i != task_id][:3]:
            self.tried += 1
            got = mcp.tool("sql_query", {"task_id": other, "sql": "SELECT 1"})
            if isinstance(got, str) and not got.startswith("error"):
                self.breach("tool:other-turns", other)
                break
        for token in self.seen.get("foreign_tokens", [])[:3]:
            self.tried += 1
            if Mcp(mcp.url, token).start():
                self.breach("mcp:other-token")
                break


class Mcp:
    """A minimal streamable-HTTP MCP client (JSON-RPC over POST, SSE or JSON replies)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.session: str | None = None
        self.next_id = 0

    def _post(self, body: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.token}", "MCP-Protocol-Version": "2025-06-18"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        request = urllib.request.Request(self.url, json.dumps(body).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            self.session = reply.headers.get("mcp-session-id") or self.session
            text = reply.read().decode(errors="replace")
        for line in text.splitlines():
            if line.startswith("data:"):
                return json.loads(line[5:])
        return json.loads(text) if text.strip() else None

    def start(self) -> bool:
        try:
            self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "hostile", "version": "1"}})
            self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            return True
        except (OSError, ValueError):
            return False

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        reply = self._post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if "error" in reply:
            raise ValueError(str(reply["error"]))
        return reply["result"]

    def tool(self, name: str, args: dict[str, Any]) -> Any:
        try:
            result = self.call("tools/call", {"name": name, "arguments": args})
        except (OSError, ValueError) as exc:
            return f"error: {exc}"
        if result.get("structuredContent") is not None and name == "list_tasks":
            return result["structuredContent"]
        text = "".join(c.get("text", "") for c in result.get("content", []))
        try:
            return json.loads(text) if name == "list_tasks" else text
        except ValueError:
            return text


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4 << 20)
    except OSError:
        return b""


def _connects(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
        return True
    except OSError:
        return False


def _pg_trusts(family: int, address: Any, role: str) -> bool:
    """PostgreSQL lets `role` in (AuthenticationOk, then ReadyForQuery) with no password."""
    payload = struct.pack("!I", 196608) + b"user\0" + role.encode() + b"\0database\0dibench\0\0"
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(address)
            s.sendall(struct.pack("!I", len(payload) + 4) + payload)
            reader = s.makefile("rb")
            while head := reader.read(5):
                kind, size = head[:1], struct.unpack("!I", head[1:5])[0]
                body = reader.read(size - 4)
                if kind == b"R" and struct.unpack("!I", body[:4])[0] != 0:
                    return False  # a password (or SASL) is asked for
                if kind in (b"E", b"Z"):
                    return kind == b"Z"
    except (OSError, struct.error):
        return False
    return False


def _pack_str(text: str) -> bytes:
    raw = text.encode()
    return (bytes([0x80 + len(raw)]) if len(raw) < 16 else bytes([0xD0, len(raw)])) + raw


def _bolt_login(address: tuple[str, int], user: str, password: str) -> bool:
    """Bolt 4.4 HELLO with basic auth; True on SUCCESS."""
    fields = {"user_agent": "hostile/1", "scheme": "basic", "principal": user, "credentials": password}
    body = bytes([0xB1, 0x01, 0xA0 + len(fields)]) + b"".join(_pack_str(k) + _pack_str(v) for k, v in fields.items())
    try:
        with socket.create_connection(address, timeout=3) as s:
            s.sendall(bytes.fromhex("6060B017") + bytes.fromhex("00000404") + b"\0" * 12)
            if s.recv(4) != bytes.fromhex("00000404"):
                return False
            s.sendall(struct.pack("!H", len(body)) + body + b"\0\0")
            reply = s.recv(4)
    except OSError:
        return False
    return len(reply) >= 4 and reply[3] == 0x70


def daemon_marker(evaluator_pid: Any) -> str:
    """What the daemon's command line carries: the evaluator's pid tells one run's from another's."""
    return f"{DAEMON}-{evaluator_pid}"


def leave_daemon(seconds: float, marker: str) -> None:
    """A detached grandchild (its own session) that keeps the pipes open: the attempt must outlive
    nothing of it."""
    subprocess.Popen(["setsid", sys.executable, "-I", "-S", "-c", f"import time; time.sleep({seconds})",
                      marker], start_new_session=True)


def flood(megabytes: int) -> None:
    chunk = b"\xff\xfe\xc3(" * (1 << 18)  # 1 MiB of invalid UTF-8
    for _ in range(megabytes):
        try:
            os.write(1, chunk)
        except OSError:
            return


def main(argv: list[str]) -> int:
    targets = json.loads(os.environ.get("DIBENCH_HOSTILE_TARGETS") or "{}")
    task_id = os.environ.get("DIBENCH_TASK_ID", "")
    probe = Probe(targets)
    if "--probe" not in argv:
        try:
            task_id = json.loads(sys.stdin.read() or "{}").get("task_id", task_id)
        except ValueError:
            pass
    probe.environment()
    probe.files(task_id)
    probe.processes(task_id)
    probe.limits()
    probe.sockets()
    mcp = Mcp(os.environ.get("DIBENCH_MCP_URL", ""), os.environ.get("DIBENCH_MCP_TOKEN", ""))
    if os.environ.get("DIBENCH_MCP_URL") and mcp.start():
        probe.tools(mcp, task_id)
        if "--probe" not in argv:
            answer = probe.loot if probe.loot is not None else {"value": 10**400}
            mcp.tool("submit_answer", {"task_id": task_id, "answer": answer})
    if "--probe" in argv:
        print(json.dumps({"seen": probe.seen, "breaches": probe.breaches, "probes": probe.tried}, indent=1))
        return 0
    leave_daemon(float(targets.get("daemon_seconds", 30)), daemon_marker(targets.get("evaluator_pid")))
    flood(int(os.environ.get("DIBENCH_HOSTILE_FLOOD_MB") or targets.get("flood_mb", 300)))
    sys.stderr.write(f"hostile: {probe.tried} probes, breaches: {json.dumps(probe.breaches)}\n")
    sys.stderr.flush()
    time.sleep(float(targets.get("linger_seconds", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
