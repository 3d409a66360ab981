"""The install's own secrets: generated once, kept in the state folder, readable by its owner only.

Each secret is one file in `<state_dir>/secrets/` (a 0700 folder, 0600 files) holding a random
URL-safe token. The first process that needs a secret makes it; concurrent first uses agree,
because a secret is published with a hard link, which fails if another process published first.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from dibench.core.errors import ConfigError

SECRETS_DIR = "secrets"
# The secrets of one install: the warehouse's admin role, Neo4j's `neo4j` user, and the key that
# derives each per-domain read-only role's own password.
POSTGRES_ADMIN = "postgres-admin-password"
NEO4J = "neo4j-password"
READONLY_KEY = "readonly-role-key"


def private_dir(path: Path) -> Path:
    """`path` as a folder only its owner can enter (created 0700; an existing one made 0700)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except PermissionError as exc:
        raise ConfigError(f"{path}: not ours to use ({exc.strerror})",
                          hint="run dibench as the install's owner, or set DIBENCH_STATE_DIR") from exc
    return path


def secret_path(state_dir: Path, name: str) -> Path:
    return state_dir / SECRETS_DIR / name


def read_secret(state_dir: Path, name: str) -> str | None:
    """The secret if this install has made it, else None."""
    try:
        return secret_path(state_dir, name).read_text().strip() or None
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise ConfigError(f"{secret_path(state_dir, name)}: unreadable ({exc.strerror})",
                          hint="only the install's owner reads its secrets") from exc


def ensure_secret(state_dir: Path, name: str) -> str:
    """The secret `name` of this install, generated (0600) on first use."""
    found = read_secret(state_dir, name)
    if found:
        return found
    if not state_dir.exists():
        private_dir(state_dir)  # a new state folder is private from the start
    folder = private_dir(state_dir / SECRETS_DIR)
    value = secrets.token_urlsafe(24)
    draft = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(value + "\n")
        try:
            os.link(draft, folder / name)
        except FileExistsError:  # another process published first: its secret is the install's
            return read_secret(state_dir, name) or value
    finally:
        draft.unlink(missing_ok=True)
    return value


def derived_password(key: str, role: str) -> str:
    """A role's own password from the install's key: distinct per role, nothing more to store."""
    return hmac.new(key.encode(), role.encode(), hashlib.sha256).hexdigest()[:40]
