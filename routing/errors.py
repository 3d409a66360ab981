"""Errors of the routing line; all derive from the project's DibenchError."""
from __future__ import annotations

from dibench.core.errors import DibenchError


class RoutingError(DibenchError):
    """A routing catalog, unit or contract problem."""


class CatalogSourceError(RoutingError):
    """A catalog path or database cannot be read; names the path."""

    hint = "pass the folder holding tables.json and database/<db_id>/<db_id>.sqlite"


class UnitSQLError(RoutingError):
    """Gold or submitted SQL that cannot be parsed, is not read-only, or fails to execute."""

    def __init__(self, kind: str, message: str, sql: str) -> None:
        self.kind = kind
        self.sql = sql
        super().__init__(f"{kind}: {message}")


class ContractInvalid(RoutingError):
    """A contract failed one deterministic check; names the contract, check and detail."""

    def __init__(self, task_id: str, check: str, detail: str) -> None:
        self.task_id = task_id
        self.check = check
        self.detail = detail
        super().__init__(f"contract {task_id}: {check}: {detail}")


class RouteInvalid(RoutingError):
    """A submitted route does not have the required shape."""
