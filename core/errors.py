"""One root exception and its specific subclasses.

Each subclass carries what is at fault (file, field, statement) so that the CLI can
print one line and the API can map it to a status code. Nothing here is swallowed.
"""
from __future__ import annotations


class DibenchError(Exception):
    """Root of every error dibench raises on purpose."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class ConfigError(DibenchError):
    hint = "check the DIBENCH_* environment variables or dibench.toml"


class ServiceError(DibenchError):
    """A local service could not be installed, started, stopped or reached."""

    hint = "run `dibench services status`; `scripts/install.sh` installs what is missing"


class GraphError(DibenchError):
    """A Cypher statement failed or a named statement does not exist."""


class WarehouseError(DibenchError):
    """A SQL statement failed in the warehouse."""


class ReadOnlyViolation(WarehouseError):
    """Generated SQL that is not a single read-only SELECT/WITH statement."""

    def __init__(self, kind: str, sql: str) -> None:
        self.kind = kind
        self.sql = sql
        super().__init__(
            f"refused {kind}: only a single SELECT or WITH query may run on the read-only path",
            hint="generated SQL must be one SELECT; write statements are never executed",
        )


class QueryTimeout(WarehouseError):
    hint = "raise DIBENCH_STATEMENT_TIMEOUT_S or narrow the query"


class PackError(DibenchError):
    """A domain pack file is malformed: names file, field and problem."""

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file = file
        self.field = field
        self.problem = problem
        super().__init__(f"{file}: {field}: {problem}")


class PackErrors(DibenchError):
    """Several pack problems at once; each is a PackError printed on its own line."""

    def __init__(self, errors: list[PackError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class RewriteError(DibenchError):
    """A rule operation cannot be applied to a metric's SQL tree."""


class ExtractionError(DibenchError):
    """An LLM reply could not be turned into a valid structured object."""


class NotFound(DibenchError):
    """A metric, rule, task or other artifact does not exist in the graph."""
