"""Test fixtures: the real local Neo4j and PostgreSQL, started by the project's own code."""
from __future__ import annotations

import pytest

from dibench.core.config import get_settings
from dibench.stores import local
from dibench.stores.graph import Graph, apply_schema, get_graph
from dibench.stores.warehouse import Warehouse, get_warehouse


@pytest.fixture(scope="session", autouse=True)
def services_up() -> None:
    local.up(get_settings())
    apply_schema(get_graph())


@pytest.fixture(scope="session")
def graph() -> Graph:
    return get_graph()


@pytest.fixture(scope="session")
def warehouse() -> Warehouse:
    return get_warehouse()
