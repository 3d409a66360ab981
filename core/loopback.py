"""One rule for loopback addresses, shared by the MCP server and the HTTP API.

Every address of 127.0.0.0/8, ::1 and the name `localhost` is loopback: a server bound to any of
them gets the same treatment (no token required where loopback is exempt, `--insecure-local`
allowed) and the same Host header check: it answers only the names `local_host_names` gives (its
own address and the loopback names), so a page that points a name of its own at the server
(DNS rebinding) is refused whatever loopback address it listens on.
"""
from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def local_host_names(bound: str) -> list[str]:
    """The Host names (without port) a server bound to loopback address `bound` answers."""
    return sorted({bound.strip("[]"), *LOOPBACK_NAMES})


def host_header(name: str) -> str:
    """`name` as a Host header spells it (IPv6 in brackets)."""
    return f"[{name}]" if ":" in name else name
