"""Least privilege in the warehouse: one read-only login role per domain schema.

`dibench_ro_<schema>` owns nothing, may not create anything, has USAGE on its schema and SELECT on
its tables only, starts every transaction READ ONLY with a statement timeout, and cannot execute
the server functions that reach files, large objects, other sessions, locks or other servers.
Everything here runs on the admin connection, is idempotent, and is serialised by an advisory lock.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from dibench.core.errors import ConfigError

ROLE_PREFIX = "dibench_ro_"
# PostgreSQL truncates identifiers at 63 bytes; a longer role name would silently collide.
_MAX_IDENT = 63
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]*$")
_LOCK_KEY = 0x64_69_62_72  # 'dibr': one key for every role change in the cluster

# Schemas that are never a domain (system schemas, and `public` where nothing of ours lives).
_NOT_DOMAINS = ("pg_catalog", "information_schema", "public", "pg_toast")

# Functions PUBLIC may execute by default in PostgreSQL 15/16 that a read-only query never needs:
# advisory locks (a lock outlives the query on a pooled connection), signals to other sessions
# of the same role, large objects (server-side storage outside the schema), NOTIFY, and the
# SQL-in-a-string functions whose text the checker never sees. The file, config and admin
# functions (pg_read_file, pg_ls_*, lo_import, pg_reload_conf ...) are already superuser-only.
_REVOKE_PREFIXES = ("pg_advisory", "pg_try_advisory", "lo_", "lowrite", "loread")
_REVOKE_NAMES = (
    "pg_cancel_backend", "pg_terminate_backend", "pg_notify", "ts_stat", "ts_rewrite", "query_to_xml",
    "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema",
    "set_config", "pg_import_system_collations",
)


def readonly_role(schema: str) -> str:
    """The read-only role of a domain schema; the one place its name is made and checked."""
    if not _SCHEMA.fullmatch(schema) or schema in _NOT_DOMAINS or schema.startswith("pg_"):
        raise ConfigError(f"schema {schema!r} cannot have a read-only role (lower-case identifier, not a system schema)")
    role = ROLE_PREFIX + schema
    if len(role.encode()) > _MAX_IDENT:
        raise ConfigError(f"schema {schema!r} is too long for a read-only role name ({_MAX_IDENT} bytes at most)")
    return role


def _ident(name: str) -> sql.Identifier:
    return sql.Identifier(name)


def harden_public(cur: psycopg.Cursor[Any]) -> None:
    """Take from PUBLIC what no domain role may do: create in or use `public`, make temp
    tables, and execute the functions listed above (every overload, wherever they live)."""
    cur.execute(sql.SQL("REVOKE CREATE, USAGE ON SCHEMA public FROM PUBLIC"))
    cur.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(_ident(_database(cur))))
    rows = cur.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p "
        "WHERE p.prokind IN ('f', 'a') AND (p.proname = ANY(%(names)s) OR p.proname LIKE ANY(%(prefixes)s) "
        "OR p.proname LIKE 'dblink%%')",
        {"names": list(_REVOKE_NAMES), "prefixes": [p.replace("_", "\\_") + "%" for p in _REVOKE_PREFIXES]},
    ).fetchall()
    for (signature,) in rows:
        # A regprocedure renders as a qualified, quoted signature, ready to be a function reference.
        cur.execute(sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM PUBLIC").format(sql.SQL(signature)))


def _database(cur: psycopg.Cursor[Any]) -> str:
    row = cur.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])


def ensure_readonly_role(cur: psycopg.Cursor[Any], schema: str, *, timeout_ms: int, password: str) -> str:
    """Create or update the read-only role of `schema` (which must exist) in the caller's
    transaction, logging in with `password` (the server keeps its SCRAM verifier only);
    returns the role name."""
    role = readonly_role(schema)
    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
    exists = cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    verb = "ALTER" if exists else "CREATE"
    if not password:
        raise ConfigError(f"the read-only role of schema {schema!r} needs a password: every login proves one")
    secret = sql.SQL("PASSWORD {}").format(sql.Literal(password))
    cur.execute(sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION "
                        "NOBYPASSRLS CONNECTION LIMIT 50 {}").format(_ident(role), secret))
    for name, value in (("default_transaction_read_only", "on"), ("statement_timeout", str(timeout_ms)),
                        ("search_path", schema), ("idle_in_transaction_session_timeout", str(max(timeout_ms, 60_000)))):
        cur.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(_ident(role), _ident(name), sql.Literal(value)))
    harden_public(cur)
    db = _ident(_database(cur))
    cur.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, _ident(role)))
    cur.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(_ident(schema), _ident(role)))
    cur.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(_ident(schema), _ident(role)))
    # Tables the admin adds later (a user's own loader, a partition) are readable without a re-grant.
    cur.execute(sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}").format(
        _ident(schema), _ident(role)))
    return role


def domain_schemas(cur: psycopg.Cursor[Any]) -> list[str]:
    """Schemas of this database that hold data and may be a domain's (not system, not public)."""
    rows = cur.execute(
        "SELECT n.nspname FROM pg_namespace n WHERE n.nspname <> ALL(%s) AND n.nspname NOT LIKE 'pg\\_%%' "
        "ORDER BY 1", (list(_NOT_DOMAINS),)).fetchall()
    return [str(r[0]) for r in rows if _SCHEMA.fullmatch(str(r[0]))]


def ensure_all_readonly_roles(cur: psycopg.Cursor[Any], *, timeout_ms: int,
                              password_for: Callable[[str], str]) -> list[str]:
    """A read-only role for every domain-like schema (idempotent), each logging in with
    `password_for(role)`; returns the roles."""
    return [ensure_readonly_role(cur, s, timeout_ms=timeout_ms, password=password_for(ROLE_PREFIX + s))
            for s in domain_schemas(cur) if len((ROLE_PREFIX + s).encode()) <= _MAX_IDENT]
