"""A sandbox of its own for every command-agent attempt, built on bubblewrap (`bwrap`).

`choose(isolation, spec)` gives a `Sandbox` when bwrap works here (`auto`, the default; `required`
refuses to go on without it) or None (`none`, or `auto` where bwrap cannot run: `warn` gets one line
naming what is lost). `Sandbox.wrap` turns an agent's argv into one that runs it as the unprivileged
user 65534 in new user, PID, network, IPC, UTS and mount namespaces, seeing a read-only /usr, a few
files of /etc, a fresh size-bounded home and /tmp, and the paths the user binds read-only. Its only
reachable endpoint is the run's MCP server: a Unix socket bound in, which `sandbox_init` (PID 1
inside) serves on 127.0.0.1:INNER_PORT. rlimits bound memory, processes, file size and CPU time; the
environment is the allow-list `agent_env` builds. docs/evaluation.md says what is and is not isolated.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dibench.core.errors import ConfigError

Isolation = Literal["auto", "required", "none"]
ISOLATIONS: tuple[Isolation, ...] = ("auto", "required", "none")
AGENT_UID = 65534  # `nobody`: owns nothing of the install
INNER_PORT = 8765  # the MCP server's port inside the sandbox's own network namespace
INNER_URL = f"http://127.0.0.1:{INNER_PORT}/mcp"
HOME = "/home/agent"
RUN = "/run/dibench"
PATH = "/usr/local/bin:/usr/bin:/bin"
BASE_ENV = ("PATH", "HOME", "LANG")
INIT = Path(__file__).with_name("sandbox_init.py")
SYSTEM_PYTHON = "/usr/bin/python3"
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "ssl", "ca-certificates",
       "python3", "python3.11", "python3.12", "python3.13")
LOST = ("the agent runs as the evaluator's user, sees its files (repository, state folder, run folders), its "
        "processes and every local service, and what it starts may outlive the attempt")


@dataclass(frozen=True)
class Limits:
    """rlimits of the agent's process tree, and the size of each of its writable tmpfs."""

    memory_bytes: int = 4 << 30
    processes: int = 256
    file_bytes: int = 256 << 20
    cpu_seconds: int = 900
    tmpfs_bytes: int = 512 << 20

    def rlimits(self) -> dict[str, int]:
        return {"memory_bytes": self.memory_bytes, "processes": self.processes, "file_bytes": self.file_bytes,
                "cpu_seconds": self.cpu_seconds}


@dataclass(frozen=True)
class SandboxSpec:
    """What the user adds: read-only paths (`--agent-bind`), variables (`--agent-env`), limits."""

    binds: tuple[Path, ...] = ()
    env_names: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)


def agent_env(spec: SandboxSpec, extra: Mapping[str, str], *, sandboxed: bool) -> dict[str, str]:
    """The agent's whole environment: PATH, HOME, LANG, `extra` (the MCP URL, token, task id) and
    the variables the user named; nothing else of the evaluator's."""
    env = {"PATH": PATH, "HOME": HOME, "LANG": "C.UTF-8"} if sandboxed else \
        {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    env.update({k: os.environ[k] for k in spec.env_names if k in os.environ})
    env.update(extra)
    return env


@functools.cache
def unavailable() -> str | None:
    """Why no sandbox can be made on this machine, or None when bwrap runs one."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian package bubblewrap; scripts/install.sh installs it)"
    probe = [*_drop_privileges(), "bwrap", "--unshare-all", "--unshare-user", "--uid", str(AGENT_UID), "--gid",
             str(AGENT_UID), "--die-with-parent", "--as-pid-1", *_system_binds(), "--", SYSTEM_PYTHON, "-I", "-S",
             "-c", "pass"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return f"bwrap cannot create namespaces here: {last[:200]}"
    return None


def choose(isolation: Isolation, spec: SandboxSpec, private: Sequence[Path] = (),
           warn: Callable[[str], None] | None = None) -> Sandbox | None:
    """The run's sandbox under `isolation`; `private` are folders no bind may show (state, run folder)."""
    if isolation not in ISOLATIONS:
        raise ConfigError(f"--isolation {isolation!r}: expected one of {', '.join(ISOLATIONS)}")
    if isolation == "none":
        return None
    problem = unavailable()
    if problem is not None:
        if isolation == "required":
            raise ConfigError(f"--isolation required: no sandbox can be made: {problem}",
                              hint="install bubblewrap, or pass --isolation none to run agents unsandboxed")
        if warn is not None:
            warn(f"isolation: no sandbox ({problem}); {LOST}")
        return None
    check_binds(spec.binds, private)
    return Sandbox(spec)


def check_binds(binds: Iterable[Path], private: Sequence[Path]) -> None:
    for bind in binds:
        path = bind.resolve()
        if not path.exists():
            raise ConfigError(f"--agent-bind {bind}: no such path")
        for secret in (p.resolve() for p in private):
            if path == secret or secret.is_relative_to(path) or path.is_relative_to(secret):
                raise ConfigError(f"--agent-bind {bind} would show {secret} to the agent",
                                  hint="bind only what the agent runs (its program, its virtualenv)")


def _drop_privileges() -> list[str]:
    """As root, bwrap itself runs as the agent's user, so the agent holds no uid of the install."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups", "--"]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


IDENTITY = {"passwd": f"root:x:0:0::/:/usr/sbin/nologin\nagent:x:{AGENT_UID}:{AGENT_UID}::{HOME}:/bin/sh\n",
            "group": f"root:x:0:\nagent:x:{AGENT_UID}:\n",
            "hosts": "127.0.0.1 localhost\n::1 localhost\n"}


class Sandbox:
    """One run's sandboxes: a private folder (the init script, the identity files, the MCP socket)
    that bwrap, running as the agent's user, can read; each `wrap` is one attempt's sandbox."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.dir = Path(tempfile.mkdtemp(prefix="dibench-sandbox-"))
        shutil.copyfile(INIT, self.dir / "init.py")
        for name, text in IDENTITY.items():
            (self.dir / name).write_text(text, encoding="utf-8")
        for path in self.dir.iterdir():
            path.chmod(0o444)
        if os.geteuid() == 0:  # 0700 and owned by the agent's user: only it and root come in
            os.chown(self.dir, AGENT_UID, AGENT_UID)
        self.shared: list[str] = []

    def share(self, name: str, source: Path) -> str:
        """Copy `source` in (bwrap, as the agent's user, may not reach the original); every
        attempt sees it read-only at the path returned."""
        shutil.copyfile(source, self.dir / name)
        (self.dir / name).chmod(0o444)
        self.shared.append(name)
        return f"{RUN}/{name}"

    @property
    def socket_path(self) -> Path:
        return self.dir / "mcp.sock"

    def verify(self) -> None:
        """Start one empty sandbox (once the MCP socket exists), so that a bind bwrap cannot make
        (a path the agent's user may not read) is one line before the run, not a failure per task."""
        from dibench.evaluation.agent_process import run_bounded

        done = run_bounded(self.wrap([SYSTEM_PYTHON, "-I", "-S", "-c", "pass"]), b"", {"PATH": PATH}, 30)
        if done.code != 0:
            last = (done.err.strip().splitlines() or [f"exit status {done.code}"])[-1]
            raise ConfigError(f"the agent sandbox does not start: {last[:200]}",
                              hint=f"every --agent-bind path must be readable by uid {AGENT_UID} (not under a "
                                   f"private home such as /root), or pass --isolation none")

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command running `argv` in a fresh sandbox."""
        limits = self.spec.limits
        args = [*_drop_privileges(), "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
                "--uid", str(AGENT_UID), "--gid", str(AGENT_UID), "--hostname", "agent",
                "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
                *_system_binds(), "--proc", "/proc", "--dev", "/dev",
                "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
                "--size", str(limits.tmpfs_bytes), "--tmpfs", HOME]
        for name in IDENTITY:
            args += ["--ro-bind", str(self.dir / name), f"/etc/{name}"]
        args += ["--ro-bind", str(self.dir / "init.py"), f"{RUN}/init.py",
                 "--ro-bind", str(self.socket_path), f"{RUN}/mcp.sock"]
        for name in self.shared:
            args += ["--ro-bind", str(self.dir / name), f"{RUN}/{name}"]
        for bind in self.spec.binds:
            shown = str(bind.resolve())
            args += ["--ro-bind", shown, shown]
        args += ["--remount-ro", "/", "--chdir", HOME, "--", SYSTEM_PYTHON, "-I", "-S", f"{RUN}/init.py",
                 str(INNER_PORT), f"{RUN}/mcp.sock", json.dumps(limits.rlimits()), "--", *argv]
        return args

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
