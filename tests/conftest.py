"""Test fixtures: the real local Neo4j and PostgreSQL, started by the project's own code.

Run in parallel (pytest-xdist, `-n 2`), each worker after the first gets servers of its own: a state
folder beside the install's (`.dibench-gw1`, its own secrets, cluster and graph; the Neo4j jars and
the MetricFlow environment linked from the install's) and ports 10 apart per worker. Its tests, and
the commands they start, see only those servers, so a test that stops PostgreSQL, restarts the
services or removes a domain disturbs no other worker."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from dibench.core import secrets
from dibench.core.config import get_settings
from dibench.stores import local
from dibench.stores.graph import Graph, apply_schema, get_graph
from dibench.stores.warehouse import Warehouse, get_warehouse


def _worker() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def _isolate_worker(n: int) -> None:
    """Point this process (and what it starts) at worker n's own servers."""
    base = get_settings()
    state = base.state_dir.with_name(f"{base.state_dir.name}-gw{n}")
    (state / "neo4j").mkdir(mode=0o700, parents=True, exist_ok=True)
    state.chmod(0o700)
    for shared in (("neo4j", "lib"), ("metricflow-venv",)):
        link, target = state.joinpath(*shared), base.state_dir.joinpath(*shared)
        if target.exists() and not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    pg, bolt = base.pg_port + 10 * n, base.neo4j_bolt_port + 10 * n
    # the password given, not left to the state folder: a command that loads the repository's `.env`
    # (`inspect eval` does) would otherwise take the install's
    os.environ.update(DIBENCH_NEO4J_PASSWORD=secrets.ensure_secret(state, secrets.NEO4J),
                      DIBENCH_STATE_DIR=str(state), DIBENCH_PG_PORT=str(pg), DIBENCH_NEO4J_BOLT_PORT=str(bolt),
                      DIBENCH_NEO4J_URI=f"bolt://127.0.0.1:{bolt}",
                      DIBENCH_DATABASE_URL=f"postgresql+psycopg://dibench@127.0.0.1:{pg}/dibench")
    get_settings.cache_clear()


if _worker():
    _isolate_worker(_worker())


@pytest.fixture(scope="session", autouse=True)
def services_up() -> Iterator[None]:
    local.up(get_settings())
    apply_schema(get_graph())
    yield
    if _worker():  # a worker's own servers end with it; the install's are the test command's to stop
        local.down(get_settings())


@pytest.fixture(scope="session")
def graph() -> Graph:
    return get_graph()


@pytest.fixture(scope="session")
def warehouse() -> Warehouse:
    return get_warehouse()
