"""The local servers are real, answer real queries, and `up` is idempotent."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from dibench.core.config import Settings, get_settings
from dibench.core.errors import ServiceError
from dibench.stores import local


def test_both_servers_answer() -> None:
    statuses = {s.name: s for s in local.status(get_settings())}
    assert statuses["postgres"].version is not None
    assert statuses["postgres"].version.startswith("1")
    assert statuses["neo4j"].version is not None
    assert statuses["neo4j"].version.startswith("5.26")


def test_up_twice_is_harmless() -> None:
    before = {s.name: s.pid for s in local.status(get_settings())}
    local.up(get_settings())
    after = {s.name: s.pid for s in local.status(get_settings())}
    assert before == after


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        neo = local.LocalNeo4j(Settings(state_dir=tmp_path, neo4j_bolt_port=port))
        with pytest.raises(ServiceError, match=f"port {port} is in use"):
            neo.start()


def test_stale_pid_file_is_ignored(tmp_path: Path) -> None:
    neo = local.LocalNeo4j(Settings(state_dir=tmp_path, neo4j_bolt_port=1))
    neo.home.mkdir(parents=True)
    neo.pidfile.write_text("999999")
    assert neo.status().running is False
