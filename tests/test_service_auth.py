"""The services trust no one: every login proves the install's own secret, and the state is owner-only.

Runs against the suite's real servers, plus one older-style install (a trusting cluster, the
shared Neo4j password, an open state folder) built in a scratch folder and migrated by `up`.
"""
from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from dibench.cli.main import main
from dibench.core import secrets
from dibench.core.config import REPO_ROOT, Settings, get_settings
from dibench.core.errors import ServiceError
from dibench.stores import credentials, local
from dibench.stores.pgroles import readonly_role
from dibench.stores.warehouse import Warehouse

SCHEMA = "auth_probe"


def _refused(**kw: object) -> str:
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect(dbname="dibench", connect_timeout=5, **kw).close()  # type: ignore[arg-type]
    return str(info.value)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_pg_hba_trusts_no_one() -> None:
    pg = local.LocalPostgres(get_settings())
    text = (pg.data / "pg_hba.conf").read_text()
    fields = [line.split("#", 1)[0].split() for line in text.splitlines()]
    methods = {f[-1] for f in fields if f}
    assert methods == {"scram-sha-256"}
    assert not any("replication" in f for f in fields)
    assert not pg.trusts()


@pytest.mark.parametrize("password", [None, "wrong", "dibench-local"])
def test_postgres_refuses_tcp_and_socket_without_the_password(password: str | None) -> None:
    settings = get_settings()
    pg = local.LocalPostgres(settings)
    extra = {} if password is None else {"password": password}
    for user in ("dibench", "postgres", readonly_role("demo")):
        tcp = _refused(host="127.0.0.1", port=settings.pg_port, user=user, **extra)
        assert "password" in tcp or "does not exist" in tcp
        assert pg.socket_dir is not None, "the local cluster listens on a socket in its own folder"
        sock = _refused(host=str(pg.socket_dir), port=settings.pg_port, user=user, **extra)
        assert "password" in sock or "does not exist" in sock


def test_postgres_admits_the_install_secret_on_both() -> None:
    pg = local.LocalPostgres(get_settings())
    for host in ("127.0.0.1", str(pg.socket_dir)):
        with psycopg.connect(host=host, port=pg.port, user="dibench", dbname="dibench",
                             password=secrets.read_secret(pg.settings.state_dir, secrets.POSTGRES_ADMIN)) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)


@pytest.fixture(scope="module")
def probe_schema(warehouse: Warehouse) -> Iterator[str]:
    with warehouse.admin().begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.exec_driver_sql(f"CREATE SCHEMA {SCHEMA}")
        conn.exec_driver_sql(f"CREATE TABLE {SCHEMA}.t (x int)")
        conn.exec_driver_sql(f"INSERT INTO {SCHEMA}.t VALUES (1)")
    warehouse.ensure_role(SCHEMA)
    yield SCHEMA
    with warehouse.admin().begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def test_readonly_roles_log_in_with_their_own_password_only(warehouse: Warehouse, probe_schema: str) -> None:
    settings = get_settings()
    role = readonly_role(probe_schema)
    own = settings.readonly_password_for(role)
    assert own != settings.readonly_password_for(readonly_role("demo"))
    _refused(host="127.0.0.1", port=settings.pg_port, user=role)
    _refused(host="127.0.0.1", port=settings.pg_port, user=role,
             password=settings.readonly_password_for(readonly_role("demo")))
    with psycopg.connect(host="127.0.0.1", port=settings.pg_port, user=role, password=own, dbname="dibench") as c:
        assert c.execute(f"SELECT x FROM {probe_schema}.t").fetchall() == [(1,)]
        assert c.execute("SELECT rolreplication FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT rolpassword FROM pg_authid")
    # Generated SQL runs as that role (through its pooled engine, with its own password).
    assert warehouse.execute_readonly(f"SELECT current_user, x FROM {probe_schema}.t",
                                      schema=probe_schema).rows == [(role, 1)]


def test_neo4j_refuses_documented_passwords() -> None:
    settings = get_settings()
    # Two wrong attempts, then the right one: Neo4j locks a user for a while after a third in a row.
    for password in (local.LEGACY_NEO4J_PASSWORD, "neo4j"):
        assert settings.neo4j_password != password
        with pytest.raises(AuthError):
            with GraphDatabase.driver(settings.neo4j_uri, auth=("neo4j", password), connection_timeout=5) as d:
                d.verify_connectivity()
    with GraphDatabase.driver(settings.neo4j_uri, auth=("neo4j", settings.neo4j_password)) as d:
        d.verify_connectivity()


def test_state_folder_is_owner_only() -> None:
    settings = get_settings()
    state = settings.state_dir
    assert _mode(state) == 0o700
    assert _mode(state / secrets.SECRETS_DIR) == 0o700
    for name in (secrets.POSTGRES_ADMIN, secrets.NEO4J, secrets.READONLY_KEY):
        path = secrets.secret_path(state, name)
        assert _mode(path) == 0o600
        assert path.stat().st_uid == os.geteuid()
    pg = local.LocalPostgres(settings)
    for folder in (state / "neo4j", pg.dir.resolve(), pg.data.resolve()):
        assert _mode(folder) == 0o700, folder
    assert _mode(pg.data / "pg_hba.conf") == 0o600


def test_explicit_settings_win_and_a_local_url_gets_the_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DIBENCH_NEO4J_PASSWORD", "DIBENCH_DATABASE_URL", "DIBENCH_READONLY_PASSWORD", "DIBENCH_CONFIG"):
        monkeypatch.delenv(name, raising=False)  # whatever an earlier test left in the process
    monkeypatch.chdir(tmp_path)  # no ./dibench.toml
    s = Settings(state_dir=tmp_path / "state", pg_port=5999,
                 database_url="postgresql+psycopg://dibench@127.0.0.1:5999/dibench")
    generated = secrets.read_secret(s.state_dir, secrets.POSTGRES_ADMIN)
    assert generated and s.database_url == f"postgresql+psycopg://dibench:{generated}@127.0.0.1:5999/dibench"
    assert s.neo4j_password == secrets.read_secret(s.state_dir, secrets.NEO4J)
    assert _mode(s.state_dir) == 0o700
    mine = Settings(state_dir=tmp_path / "state", pg_port=5999, neo4j_password="mine-1234",
                    database_url="postgresql+psycopg://dibench:theirs@127.0.0.1:5999/dibench",
                    readonly_password="ro-1234")
    assert (mine.neo4j_password, mine.database_url.split("//")[1].split("@")[0]) == ("mine-1234", "dibench:theirs")
    assert mine.readonly_password_for("dibench_ro_x") == "ro-1234"
    remote = Settings(state_dir=tmp_path / "state", database_url="postgresql+psycopg://dibench@db.example:5432/w")
    assert remote.database_url == "postgresql+psycopg://dibench@db.example:5432/w"


def test_credentials_shell_opens_both_services() -> None:
    res = CliRunner().invoke(main, ["services", "credentials", "--shell"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert all(line.startswith("export ") for line in lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "NEO4J_"))}
    script = "\n".join(lines) + '\npsql -X -tA -c "SELECT current_user"\n'
    psql_dir = str(Path(local._pg_bin("psql")).parent)
    out = subprocess.run(["bash", "-c", script], env={**env, "PATH": f"{psql_dir}:{env['PATH']}"},
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "dibench", out.stderr
    exported = dict(line.removeprefix("export ").split("=", 1) for line in lines)
    with GraphDatabase.driver(exported["NEO4J_URI"], auth=(exported["NEO4J_USERNAME"],
                                                           exported["NEO4J_PASSWORD"].strip("'"))) as d:
        d.verify_connectivity()
    plain = CliRunner().invoke(main, ["services", "credentials"])
    assert plain.exit_code == 0
    assert get_settings().neo4j_password not in plain.output


def test_credentials_refused_to_anyone_but_the_owner(tmp_path: Path) -> None:
    s = Settings(state_dir=tmp_path / "state")
    credentials.require_owner(s)
    if os.geteuid() != 0:
        pytest.skip("giving the folder to another user needs root")
    os.chown(s.state_dir / secrets.SECRETS_DIR, 65534, 65534)
    with pytest.raises(ServiceError, match="belongs to another user"):
        credentials.require_owner(s)


def test_no_default_secret_in_the_repository() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.split()
    offenders = []
    for name in tracked:
        path = REPO_ROOT / name
        if path.suffix not in {".py", ".md", ".yml", ".yaml", ".sh", ".toml", ".cfg"} or name.startswith("tests/"):
            continue
        text = path.read_text(errors="replace")
        # the migration of an older install, and the hostile agent that tries every password ever documented
        if "dibench-local" in text and name not in ("stores/local.py", "evaluation/agents/hostile_agent.py"):
            offenders.append(name)
        if "HOST_AUTH_METHOD: trust" in text or "--auth=trust" in text:
            offenders.append(name)
    assert not offenders
    assert ".env" in (REPO_ROOT / ".gitignore").read_text().split()


# --------------------------------------------------------------------------- an older install


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture
def legacy_install() -> Iterator[Settings]:
    """A state folder as the older code left it: open folders, a cluster that trusts every login
    (inside the state folder, as root too), Neo4j with the password every install shared."""
    scratch = Path(tempfile.mkdtemp(prefix="dibench-legacy-", dir="/var/tmp"))
    scratch.chmod(0o755)
    state = scratch / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    pg_port, bolt = _free_port(), _free_port()
    # Any command of this version makes the install's secrets; the older cluster and Neo4j ignore them.
    settings = Settings(state_dir=state, pg_port=pg_port, neo4j_bolt_port=bolt, neo4j_uri=f"bolt://127.0.0.1:{bolt}",
                        neo4j_heap="256m", neo4j_pagecache="32m",
                        database_url=f"postgresql+psycopg://dibench@127.0.0.1:{pg_port}/dibench")
    pg, neo = local.services(settings)
    pg_dir = state / "postgres"
    pg_dir.mkdir(mode=0o755)
    if os.geteuid() == 0:
        shutil.chown(pg_dir, "postgres", "postgres")
    initdb = subprocess.run(_as_postgres([local._pg_bin("initdb"), "-D", str(pg_dir / "data"), "-U", "dibench",
                                          "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]),
                            capture_output=True, text=True)
    assert initdb.returncode == 0, initdb.stderr
    with (pg_dir / "data" / "postgresql.conf").open("a") as fh:
        fh.write("listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nshared_buffers = '32MB'\n")
    started = subprocess.run(_as_postgres([local._pg_bin("pg_ctl"), "-D", str(pg_dir / "data"), "-l",
                                           str(pg_dir / "postgres.log"), "-w", "-o", f"-p {settings.pg_port}",
                                           "start"]), capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    neo.home.mkdir(parents=True)
    neo.lib.symlink_to(local.LocalNeo4j(get_settings()).lib.resolve(), target_is_directory=True)
    neo.write_config()
    legacy = settings.model_copy(update={"neo4j_password": local.LEGACY_NEO4J_PASSWORD})
    local.LocalNeo4j(legacy)._set_initial_password()
    (neo.home / "data" / ".password-set").write_text("1")
    try:
        yield settings
    finally:
        local.down(settings)
        target = pg_dir.resolve()
        shutil.rmtree(scratch, ignore_errors=True)
        if target.is_relative_to("/var/tmp") and target.name.startswith("dibench-postgres-"):
            shutil.rmtree(target, ignore_errors=True)


def test_services_up_migrates_an_older_install(legacy_install: Settings) -> None:
    settings = legacy_install
    pg = local.LocalPostgres(settings)
    assert pg.trusts()
    said: list[str] = []
    statuses = local.up(settings, say=said.append)
    assert all(s.version for s in statuses)
    assert len(said) == 1
    assert said[0].startswith("migrated this install:")
    assert "PostgreSQL now requires a password" in said[0]
    assert "Neo4j's password is now the install's own" in said[0]
    assert not pg.trusts()
    _refused(host="127.0.0.1", port=settings.pg_port, user="dibench")
    with psycopg.connect(host="127.0.0.1", port=settings.pg_port, user="dibench", dbname="dibench",
                         password=secrets.read_secret(settings.state_dir, secrets.POSTGRES_ADMIN)) as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(AuthError):
        with GraphDatabase.driver(settings.neo4j_uri, auth=("neo4j", local.LEGACY_NEO4J_PASSWORD)) as d:
            d.verify_connectivity()
    with GraphDatabase.driver(settings.neo4j_uri, auth=("neo4j", settings.neo4j_password)) as d:
        d.verify_connectivity()
    assert _mode(settings.state_dir) == 0o700
    assert _mode(pg.dir.resolve()) == 0o700
    if os.geteuid() == 0:
        assert pg.dir.is_symlink()
    # A second `up` has nothing left to migrate.
    again: list[str] = []
    local.up(settings, say=again.append)
    assert again == []


def test_a_clone_made_again_in_the_same_folder_gets_a_cluster_of_its_own(tmp_path: Path) -> None:
    """As root the cluster lives outside the state folder; a removed install's cluster stays there.
    A new install in the same folder (new secrets) must not reuse it: it could not log in."""
    state = tmp_path / "state"
    first = local.LocalPostgres(Settings(state_dir=state, pg_port=5999))._outside_folder()
    shutil.rmtree(state)  # the clone is removed; /var/tmp keeps its cluster
    again = local.LocalPostgres(Settings(state_dir=state, pg_port=5999))._outside_folder()
    assert first != again and first.parent == again.parent == Path("/var/tmp")
    same = local.LocalPostgres(Settings(state_dir=state, pg_port=5999))._outside_folder()
    assert same == again  # one install always finds its own cluster
