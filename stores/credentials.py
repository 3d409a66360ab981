"""What a person needs to open the install's graph and warehouse with their own tools.

The secrets are the install's own (core.secrets); only the owner of the state folder gets them.
"""
from __future__ import annotations

import os
import shlex

from sqlalchemy.engine import make_url

from dibench.core import secrets
from dibench.core.config import Settings
from dibench.core.errors import ServiceError


def require_owner(settings: Settings) -> None:
    """Refuse anyone but the owner of the state folder (root included, unless root owns it)."""
    folder = settings.state_dir / secrets.SECRETS_DIR
    try:
        owner = folder.stat().st_uid
    except OSError as exc:
        raise ServiceError(f"{folder}: no secrets here ({exc.strerror})", hint="run `dibench services up`") from exc
    if owner != os.geteuid():
        raise ServiceError(f"{folder} belongs to another user: only the install's owner reads its secrets",
                           hint="run it as the user who ran `dibench services up` for this state folder")


def shell_exports(settings: Settings) -> list[tuple[str, str]]:
    """(variable, value) pairs for cypher-shell (NEO4J_*) and psql (PG*)."""
    url = make_url(settings.database_url)
    return [
        ("NEO4J_URI", settings.neo4j_uri),
        ("NEO4J_ADDRESS", settings.neo4j_uri),
        ("NEO4J_USERNAME", settings.neo4j_user),
        ("NEO4J_PASSWORD", settings.neo4j_password),
        ("PGHOST", url.host or "localhost"),
        ("PGPORT", str(url.port or 5432)),
        ("PGUSER", url.username or ""),
        ("PGPASSWORD", str(url.password or "")),
        ("PGDATABASE", url.database or ""),
    ]


def compose_env(settings: Settings) -> list[tuple[str, str]]:
    """The `.env` docker-compose.yml reads: the same secrets, so the CLI works against the containers."""
    return [
        ("DIBENCH_NEO4J_PASSWORD", settings.neo4j_password),
        ("DIBENCH_PG_PASSWORD", secrets.ensure_secret(settings.state_dir, secrets.POSTGRES_ADMIN)),
        ("DIBENCH_NEO4J_BOLT_PORT", str(settings.neo4j_bolt_port)),
        ("DIBENCH_PG_PORT", str(settings.pg_port)),
    ]


def render(pairs: list[tuple[str, str]], *, export: bool) -> str:
    prefix = "export " if export else ""
    return "\n".join(f"{prefix}{name}={shlex.quote(value)}" for name, value in pairs)
