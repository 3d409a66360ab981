"""Local PostgreSQL and Neo4j servers, started from the repo's git-ignored state folder.

No Docker: PostgreSQL comes from Debian's packages (initdb / pg_ctl on a cluster of our
own), Neo4j 5.26 Community from Maven Central jars (scripts/neo4j/pom.xml) started through
its own entry point `org.neo4j.server.CommunityEntryPoint` on JDK 17. Both are idempotent:
`up` on a running server only checks it answers.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from dibench.core.config import REPO_ROOT, Settings
from dibench.core.errors import ServiceError

NEO4J_MAIN = "org.neo4j.server.CommunityEntryPoint"
ADMIN_MAIN = "org.neo4j.cli.AdminTool"
# The only procedures the server loads: the version check of `services status` and the server
# information of the benchmarks (cypher/bench_server_info.cypher).
NEO4J_PROCEDURES = "dbms.components,dbms.listConfig"
# The JVM options the official `neo4j` launcher adds (bin/neo4j, conf/neo4j.conf defaults).
NEO4J_JVM_OPTS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+AlwaysPreTouch",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    running: bool
    pid: int | None
    uri: str
    version: str | None = None
    detail: str = ""


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex((host, port)) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _java() -> str:
    candidates = [os.environ.get("DIBENCH_JAVA", ""), "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"]
    for c in candidates:
        if c and Path(c).exists():
            return c
    found = shutil.which("java")
    if not found:
        raise ServiceError("no Java 17 runtime found", hint="run scripts/install.sh (installs openjdk-17-jre-headless)")
    return found


def _pg_bin(tool: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"))
    if found:
        return found[-1]
    which = shutil.which(tool)
    if not which:
        raise ServiceError(f"PostgreSQL tool {tool} not found", hint="run scripts/install.sh (installs postgresql)")
    return which


# --------------------------------------------------------------------------- PostgreSQL


class LocalPostgres:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.dir = settings.state_dir / "postgres"
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.port = settings.pg_port

    @property
    def uri(self) -> str:
        return f"postgresql://dibench@127.0.0.1:{self.port}/dibench"

    def _run_as_owner(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        # initdb and postgres refuse to run as root; run them as the owner of the state folder.
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True)

    def _pid(self) -> int | None:
        pid = _read_pid(self.data / "postmaster.pid")
        return pid if pid and _pid_alive(pid) else None

    def _relocate_if_unreachable(self) -> None:
        """As root, the cluster runs as `postgres`, which must reach the data folder. When the
        repo lives under a private home (e.g. /root), keep the cluster in /var/tmp and leave a
        symlink in the state folder, so the state stays discoverable from the repo. Commands
        get the resolved path, since `postgres` cannot walk through the private folders."""
        if os.geteuid() != 0 or self.dir.exists():
            return
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        probe = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(self.dir.parent)])
        if probe.returncode == 0:
            return
        import hashlib

        tag = hashlib.sha1(str(self.dir.resolve()).encode()).hexdigest()[:10]
        target = Path("/var/tmp") / f"dibench-postgres-{tag}"
        target.mkdir(parents=True, exist_ok=True)
        self.dir.symlink_to(target, target_is_directory=True)

    def init(self) -> None:
        self._relocate_if_unreachable()
        if (self.data / "PG_VERSION").exists():
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.dir.resolve(), "postgres", "postgres")
        res = self._run_as_owner(
            [_pg_bin("initdb"), "-D", str(self.data.resolve()), "-U", "dibench", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]
        )
        if res.returncode != 0:
            raise ServiceError(f"initdb failed: {res.stderr.strip().splitlines()[-1:]}")
        conf = self.data / "postgresql.conf"
        with conf.open("a") as fh:
            fh.write(
                "\n# dibench local cluster\n"
                "listen_addresses = '127.0.0.1'\n"
                f"port = {self.port}\n"
                "unix_socket_directories = ''\n"
                "shared_buffers = '1GB'\n"
                "work_mem = '64MB'\n"
                "maintenance_work_mem = '256MB'\n"
                "max_connections = 100\n"
                "fsync = on\n"
                "logging_collector = off\n"
            )

    def start(self) -> None:
        self.init()
        if self._pid():
            self.ensure_readonly_roles()
            return
        stale = self.data / "postmaster.pid"
        if stale.exists():
            stale.unlink()
        if _port_open(self.port):
            raise ServiceError(
                f"port {self.port} is in use by another process",
                hint="set DIBENCH_PG_PORT (and DIBENCH_DATABASE_URL) to a free port",
            )
        res = self._run_as_owner(
            [_pg_bin("pg_ctl"), "-D", str(self.data.resolve()), "-l", str(self.log.resolve()), "-w", "-t", "60",
             "-o", f"-p {self.port}", "start"]
        )
        if res.returncode != 0:
            tail = self.log.read_text()[-400:] if self.log.exists() else res.stderr
            raise ServiceError(f"PostgreSQL did not start: {tail.strip()}")
        self._ensure_database()
        self.ensure_readonly_roles()

    def ensure_readonly_roles(self) -> None:
        """Every domain schema already loaded (by us or by hand) gets its read-only role."""
        from dibench.stores.warehouse import Warehouse

        wh = Warehouse(self.settings)
        try:
            wh.ensure_all_roles()
        finally:
            wh.dispose()

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=dibench dbname=postgres", autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = 'dibench'").fetchone():
                c.execute("CREATE DATABASE dibench")

    def stop(self) -> None:
        if not self._pid():
            return
        res = self._run_as_owner([_pg_bin("pg_ctl"), "-D", str(self.data.resolve()), "-m", "fast", "-w", "stop"])
        if res.returncode != 0:
            raise ServiceError(f"pg_ctl stop failed: {res.stderr.strip()}")

    def status(self) -> ServiceStatus:
        pid = self._pid()
        if not pid:
            return ServiceStatus("postgres", False, None, self.uri)
        if not _port_open(self.port):
            return ServiceStatus("postgres", True, pid, self.uri, None, "starting: port not open yet")
        try:
            import psycopg

            with psycopg.connect(f"host=127.0.0.1 port={self.port} user=dibench dbname=dibench", connect_timeout=3) as c:
                row = c.execute("SELECT 1, current_setting('server_version')").fetchone()
            version = str(row[1]) if row else None
            return ServiceStatus("postgres", True, pid, self.uri, version)
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed
            return ServiceStatus("postgres", True, pid, self.uri, None, f"not answering: {exc}")


# --------------------------------------------------------------------------- Neo4j


def _mebibytes(size: str) -> int:
    """A Neo4j memory setting (`2g`, `512m`, `1048576k`) in MiB."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgKMG]?)[bB]?\s*", size)
    if m is None:
        raise ServiceError(f"memory size {size[:40]!r}: expected a number with k, m or g (e.g. 2g)",
                           hint="set DIBENCH_NEO4J_HEAP to e.g. 2g")
    n, unit = int(m.group(1)), m.group(2).lower()
    return n // 1024 // 1024 if unit == "" else n // 1024 if unit == "k" else n if unit == "m" else n * 1024


def transaction_memory(heap: str) -> tuple[str, str]:
    """(db.memory.transaction.max, dbms.memory.transaction.total.max) for a heap: an eighth of
    the heap per transaction (at least 64 MiB), a quarter for all transactions together, so a
    runaway query fails on its own pool long before the JVM runs out of heap (the pools count
    estimates: a quarter per transaction still left a 1 GiB heap collecting for seconds)."""
    mib = _mebibytes(heap)
    return f"{max(64, mib // 8)}m", f"{max(128, mib // 4)}m"


class LocalNeo4j:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.state_dir / "neo4j"
        self.lib = self.home / "lib"
        self.conf_dir = self.home / "conf"
        self.pidfile = self.home / "neo4j.pid"
        self.log = self.home / "logs" / "console.log"
        self.port = settings.neo4j_bolt_port

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def installed(self) -> bool:
        return any(self.lib.glob("neo4j-server-5.26.*.jar"))

    def _classpath(self) -> str:
        if not self.installed():
            raise ServiceError(
                f"Neo4j jars missing in {self.lib}", hint="run scripts/install.sh (Maven Central, scripts/neo4j/pom.xml)"
            )
        return str(self.lib / "*")

    def write_config(self) -> None:
        for sub in ("conf", "data", "logs", "plugins", "import", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        s = self.settings
        tx_max, total_max = transaction_memory(s.neo4j_heap)
        # Sized for a 2-core, 24 GiB machine shared with PostgreSQL and the Python workers.
        (self.conf_dir / "neo4j.conf").write_text(
            "# generated by dibench (stores/local.py); edits are overwritten at start\n"
            f"server.directories.data={self.home / 'data'}\n"
            f"server.directories.logs={self.home / 'logs'}\n"
            f"server.directories.plugins={self.home / 'plugins'}\n"
            f"server.directories.import={self.home / 'import'}\n"
            f"server.directories.run={self.home / 'run'}\n"
            "server.default_listen_address=127.0.0.1\n"
            "server.bolt.enabled=true\n"
            f"server.bolt.listen_address=127.0.0.1:{self.port}\n"
            f"server.bolt.advertised_address=127.0.0.1:{self.port}\n"
            "server.http.enabled=false\n"
            "server.https.enabled=false\n"
            "dbms.usage_report.enabled=false\n"
            f"server.memory.heap.initial_size={s.neo4j_heap}\n"
            f"server.memory.heap.max_size={s.neo4j_heap}\n"
            f"server.memory.pagecache.size={s.neo4j_pagecache}\n"
            # Every transaction is bounded in memory (one, and all at once) and in time, so a
            # query that builds a huge list or string fails fast with MemoryPoolOutOfMemoryError
            # instead of exhausting the heap; user Cypher also gets its own shorter timeout.
            f"db.memory.transaction.max={tx_max}\n"
            f"dbms.memory.transaction.total.max={total_max}\n"
            "db.transaction.timeout=300s\n"
            # User Cypher (export) runs only after its plan is checked; these make the server
            # itself refuse what the check could miss: LOAD CSV reaches no file and no address,
            # and only the procedures dibench calls exist (none may run unrestricted).
            "dbms.security.allow_csv_import_from_file_urls=false\n"
            "internal.dbms.cypher_ip_blocklist=0.0.0.0/0,::/0\n"
            f"dbms.security.procedures.allowlist={NEO4J_PROCEDURES}\n"
            "dbms.security.procedures.unrestricted=\n"
            # Keep transaction logs bounded: benchmarks write millions of elements.
            "db.tx_log.rotation.retention_policy=1G size\n"
            "server.jvm.additional=-XX:+UseG1GC\n"
        )

    def _pid(self) -> int | None:
        pid = _read_pid(self.pidfile)
        return pid if pid and _pid_alive(pid) else None

    def _set_initial_password(self) -> None:
        marker = self.home / "data" / ".password-set"
        if marker.exists():
            return
        env = dict(os.environ, NEO4J_CONF=str(self.conf_dir), NEO4J_HOME=str(self.home))
        res = subprocess.run(
            [_java(), "-cp", self._classpath(), f"-Dneo4j.home={self.home}", f"-Dneo4j.conf={self.conf_dir}",
             ADMIN_MAIN, "dbms", "set-initial-password", self.settings.neo4j_password],
            capture_output=True, text=True, env=env,
        )
        if res.returncode != 0:
            raise ServiceError(f"neo4j-admin set-initial-password failed: {res.stderr.strip()[-300:]}")
        marker.write_text("1")

    def start(self) -> None:
        if self._pid():
            return
        if self.pidfile.exists():
            self.pidfile.unlink()  # stale: the process it names is gone
        if _port_open(self.port):
            raise ServiceError(
                f"port {self.port} is in use by another process",
                hint="set DIBENCH_NEO4J_BOLT_PORT (and DIBENCH_NEO4J_URI) to a free port",
            )
        self.write_config()
        self._set_initial_password()
        heap = self.settings.neo4j_heap
        argv = [
            _java(), f"-Xms{heap}", f"-Xmx{heap}", *NEO4J_JVM_OPTS,
            "-cp", f"{self.conf_dir}:{self._classpath()}",
            f"-Dneo4j.home={self.home}", f"-Dfile.encoding=UTF-8",
            NEO4J_MAIN, f"--home-dir={self.home}", f"--config-dir={self.conf_dir}",
        ]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.home,
            )
        self.pidfile.write_text(str(proc.pid))

    def stop(self, timeout: float = 60) -> None:
        pid = self._pid()
        if not pid:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _pid_alive(pid):
            time.sleep(0.2)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        self.pidfile.unlink(missing_ok=True)

    def status(self) -> ServiceStatus:
        pid = self._pid()
        if not pid:
            return ServiceStatus("neo4j", False, None, self.uri)
        if not _port_open(self.port):
            return ServiceStatus("neo4j", True, pid, self.uri, None, "starting: Bolt port not open yet")
        try:
            from neo4j import GraphDatabase

            auth = (self.settings.neo4j_user, self.settings.neo4j_password)
            with GraphDatabase.driver(self.uri, auth=auth, connection_timeout=3) as d:
                rec = d.execute_query(
                    "CALL dbms.components() YIELD versions, edition RETURN versions[0] AS v, edition AS e",
                    database_="system",
                ).records[0]
            return ServiceStatus("neo4j", True, pid, self.uri, f"{rec['v']} {rec['e']}")
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed
            return ServiceStatus("neo4j", True, pid, self.uri, None, f"not answering: {exc}")


def wait_until_answering(svc: LocalPostgres | LocalNeo4j, timeout: float = 120) -> ServiceStatus:
    deadline = time.monotonic() + timeout
    st = svc.status()
    while time.monotonic() < deadline:
        st = svc.status()
        if st.running and st.version:
            return st
        if not st.running and isinstance(svc, LocalNeo4j) and svc.pidfile.exists() is False:
            break
        time.sleep(0.5)
    log = getattr(svc, "log", None)
    tail = log.read_text(errors="replace")[-600:] if log and log.exists() else ""
    raise ServiceError(f"{svc.__class__.__name__} did not answer within {timeout:.0f}s: {st.detail} {tail}".strip())


def services(settings: Settings) -> tuple[LocalPostgres, LocalNeo4j]:
    return LocalPostgres(settings), LocalNeo4j(settings)


def up(settings: Settings) -> list[ServiceStatus]:
    pg, neo = services(settings)
    pg.start()
    neo.start()
    return [wait_until_answering(pg), wait_until_answering(neo)]


def down(settings: Settings) -> None:
    pg, neo = services(settings)
    neo.stop()
    pg.stop()


def status(settings: Settings) -> list[ServiceStatus]:
    pg, neo = services(settings)
    return [pg.status(), neo.status()]


__all__ = ["LocalNeo4j", "LocalPostgres", "ServiceStatus", "down", "status", "up", "REPO_ROOT"]
