"""One writer of a domain's artifact graph at a time.

`dibench ingest`, `dibench update-rule` / `remove-rule` (while they plan and write) and
`dibench generate` (for its whole run) hold the domain's write lease (a DomainLease node, created
and deleted in their own small transactions); why each needs it: docs/architecture.md.

A holder that died leaves its lease behind: a lease of a process on this host that no longer
exists is taken over at once, any other lease when it expires (LEASE_S, renewed while a large
ingest writes). `dibench domain unlock` releases a stale lease by hand (or, with --force, a live one).
"""
from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dibench.core.config import get_settings
from dibench.core.errors import GraphError
from dibench.stores.graph import Graph

LEASE_S = 600.0


def _now_ms() -> int:
    return int(time.time() * 1000)


def process_id() -> str:
    """`host:pid` of this process: what leases, claims and runs record as their holder."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    # A killed process nobody reaped (an orphan under a PID 1 that does not wait) still answers
    # kill(0): it is a zombie, and writes nothing any more.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def holder_is_gone(holder: str) -> bool:
    """True if `holder` (`host:pid[:...]`) names a process of this host that has exited."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _pid_gone(int(pid))


class DomainLease:
    """The write lease of one domain, held under a token naming this host and process."""

    def __init__(self, graph: Graph, domain: str, purpose: str = "ingest or update-rule") -> None:
        self.graph, self.domain, self.purpose = graph, domain, purpose
        self.key = domain
        self.token = f"{process_id()}:{uuid.uuid4().hex[:8]}"
        self.renewed = time.monotonic()

    def _try(self, stale: str | None = None) -> dict[str, Any]:
        now = _now_ms()
        rows = self.graph.write_returning("ingest_lease_acquire", key=self.key, token=self.token, stale=stale,
                                          now=now, until=now + int(LEASE_S * 1000), purpose=self.purpose)
        return rows[0]

    def acquire(self, wait_s: float | None = None) -> None:
        """Take the lease, waiting up to `wait_s` (default: Settings.lease_wait_s) for its holder."""
        deadline = time.monotonic() + (get_settings().lease_wait_s if wait_s is None else wait_s)
        while True:
            got = self._try()
            holder = str(got["holder"])
            if holder == self.token:
                return
            if holder_is_gone(holder) and str(self._try(stale=holder)["holder"]) == self.token:
                return
            if time.monotonic() >= deadline:
                until = time.strftime("%H:%M:%S", time.localtime(int(got["until"] or 0) / 1000))
                raise GraphError(
                    f"domain {self.domain!r} is being written by {holder} ({got.get('purpose') or 'ingest or update-rule'}); "
                    f"its lease runs until {until}: run this again when that write has finished")
            time.sleep(0.5)

    def renew(self) -> None:
        if str(self._try()["holder"]) != self.token:
            raise GraphError(f"lost the write lease of domain {self.domain!r} (it expired and was taken over)")
        self.renewed = time.monotonic()

    def keep(self) -> None:
        """Renew the lease if a tenth of its term has passed since the last renewal (call it often)."""
        if time.monotonic() - self.renewed >= LEASE_S / 10:
            self.renew()

    def release(self) -> None:
        self.graph.write("ingest_lease_release", key=self.key, token=self.token)


@contextmanager
def domain_lease(graph: Graph, domain: str, wait_s: float | None = None,
                 purpose: str = "ingest or update-rule") -> Iterator[DomainLease]:
    lease = DomainLease(graph, domain, purpose)
    lease.acquire(wait_s)
    try:
        yield lease
    finally:
        lease.release()


@dataclass(frozen=True)
class LeaseState:
    domain: str
    holder: str
    until_ms: int
    stale: bool
    why: str

    @property
    def until(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.until_ms / 1000))


def lease_state(graph: Graph, domain: str) -> LeaseState | None:
    """The domain's write lease, judged: stale when its holder is a dead process of this host or
    it has expired."""
    rows = graph.read("ingest_lease_state", key=domain)
    if not rows:
        return None
    holder, until = str(rows[0]["holder"]), int(rows[0]["until"] or 0)
    if holder_is_gone(holder):
        return LeaseState(domain, holder, until, True, "its process has exited")
    if until < _now_ms():
        return LeaseState(domain, holder, until, True, "it has expired")
    return LeaseState(domain, holder, until, False, "its process is alive and the lease is current")


def unlock(graph: Graph, domain: str, force: bool = False) -> LeaseState | None:
    """Release the domain's lease if it is stale (or at all, with `force`); None when there was none."""
    state = lease_state(graph, domain)
    if state is None:
        return None
    if not state.stale and not force:
        raise GraphError(f"domain {domain!r} is being written by {state.holder} ({state.why}, until {state.until})",
                         hint="wait for that write to finish, or pass --force if you know it is not writing")
    graph.write("ingest_lease_unlock", key=domain, holder=state.holder)
    return state
