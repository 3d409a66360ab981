"""One writer of a domain's artifact graph at a time.

`dibench ingest` and `dibench update-rule` hold the domain's write lease (a DomainLease node,
created and deleted in their own small transactions) while they write. The ingest
statements create edges where missing instead of MERGEing them (see "Concurrent batches" in
ingest/pipeline.py), so two writers of one domain could otherwise create the same edge twice.

A holder that died leaves its lease behind: a lease of a process on this host that no longer
exists is taken over at once, any other lease when it expires (LEASE_S, renewed while a large
ingest writes).
"""
from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from service.errors import GraphError
from service.graph import Graph

LEASE_S = 600.0
WAIT_S = 30.0


def _now_ms() -> int:
    return int(time.time() * 1000)


def _holder_is_gone(holder: str) -> bool:
    """True if `holder` names a process of this host that has exited."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class DomainLease:
    """The write lease of one domain, held under a token naming this host and process."""

    def __init__(self, graph: Graph, domain: str) -> None:
        self.graph, self.domain = graph, domain
        self.key = domain
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def _try(self, stale: str | None = None) -> dict[str, Any]:
        now = _now_ms()
        rows = self.graph.write_returning("ingest_lease_acquire", key=self.key, token=self.token, stale=stale,
                                          now=now, until=now + int(LEASE_S * 1000))
        return rows[0]

    def acquire(self, wait_s: float | None = None) -> None:
        deadline = time.monotonic() + (WAIT_S if wait_s is None else wait_s)
        while True:
            got = self._try()
            holder = str(got["holder"])
            if holder == self.token:
                return
            if _holder_is_gone(holder) and str(self._try(stale=holder)["holder"]) == self.token:
                return
            if time.monotonic() >= deadline:
                until = time.strftime("%H:%M:%S", time.localtime(int(got["until"] or 0) / 1000))
                raise GraphError(
                    f"domain {self.domain!r} is being written by {holder} (ingest or update-rule); its lease "
                    f"runs until {until}: run this again when that write has finished")
            time.sleep(0.5)

    def renew(self) -> None:
        if str(self._try()["holder"]) != self.token:
            raise GraphError(f"lost the write lease of domain {self.domain!r} (it expired and was taken over)")

    def release(self) -> None:
        self.graph.write("ingest_lease_release", key=self.key, token=self.token)


@contextmanager
def domain_lease(graph: Graph, domain: str, wait_s: float | None = None) -> Iterator[DomainLease]:
    lease = DomainLease(graph, domain)
    lease.acquire(wait_s)
    try:
        yield lease
    finally:
        lease.release()
