"""A throwaway PostgreSQL cluster for the tests: `initdb` and `pg_ctl` in a temporary folder.

The cluster listens on a free loopback port (password authentication, SCRAM) and on a unix
socket in its own folder (trust, for the fixtures' administration). `initdb` refuses to run
as root: as root, every server command runs as the `postgres` system user (`runuser`), and
the folders it writes are owned by that user. Nothing outside the temporary folder is
touched; `stop()` stops the server and removes the folder.

`find_binaries()` looks for `pg_ctl` on PATH, then in /usr/lib/postgresql/*/bin (where the
Debian package puts it). `ClusterUnavailable` says in one line why no cluster could start.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

#: The unprivileged user that runs the server when the tests run as root.
SERVER_USER = "postgres"
#: Roles of the cluster: an administrator (superuser) and a reader with SELECT only.
ADMIN_ROLE = "postgres"
READER_ROLE = "graphrag_reader"


class ClusterUnavailable(RuntimeError):
    """No PostgreSQL cluster can be started here (the message is one line)."""


@dataclass(frozen=True)
class Binaries:
    bindir: Path

    def tool(self, name: str) -> str:
        return str(self.bindir / name)


def find_binaries() -> Binaries:
    found = shutil.which("pg_ctl")
    candidates = [Path(os.path.realpath(found)).parent] if found else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for bindir in candidates:
        if all((bindir / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return Binaries(bindir)
    raise ClusterUnavailable("PostgreSQL is not installed (no initdb/pg_ctl/postgres on PATH or in /usr/lib/postgresql/*/bin)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresCluster:
    """One running cluster. `url(db)` is a TCP URL with the role's password; `admin_conninfo`
    reaches the cluster through its socket as the superuser, for the fixtures."""

    root: Path
    binaries: Binaries
    port: int
    admin_password: str
    reader_password: str
    as_user: str | None  # run server commands as this user (None: as ourselves)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str, *, role: str = READER_ROLE, password: str | None = None) -> str:
        """postgresql://role:password@127.0.0.1:port/database (the role's own password by default)."""
        if password is None:
            password = self.admin_password if role == ADMIN_ROLE else self.reader_password
        return f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}@127.0.0.1:{self.port}/{quote(database, safe='')}"

    def admin_url(self, database: str) -> str:
        return self.url(database, role=ADMIN_ROLE)

    def admin_conninfo(self, database: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user={ADMIN_ROLE} dbname={database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self.as_user is not None:
            command = ["runuser", "-u", self.as_user, "--", *command]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=self.root, timeout=120)

    def start(self) -> None:
        initdb = self._run(
            self.binaries.tool("initdb"), "-D", str(self.data_dir), "-U", ADMIN_ROLE, "-E", "UTF8",
            "--locale=C.UTF-8", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
        )
        if initdb.returncode != 0:
            raise ClusterUnavailable("initdb failed: " + _last_line(initdb.stderr or initdb.stdout))
        options = (
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
        )
        started = self._run(
            self.binaries.tool("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_file), "-o", options, "-w",
            "-t", "60", "start",
        )
        if started.returncode != 0:
            log = self.log_file.read_text(errors="replace") if self.log_file.exists() else ""
            raise ClusterUnavailable("pg_ctl start failed: " + _last_line(log or started.stderr or started.stdout))
        self._set_up_roles()

    def _set_up_roles(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_conninfo(), autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {ADMIN_ROLE} PASSWORD '{self.admin_password}'")
            conn.execute(f"CREATE ROLE {READER_ROLE} LOGIN PASSWORD '{self.reader_password}'")

    def create_database(self, name: str, *, icu_locale: str | None = None, sql_ascii: bool = False) -> None:
        """A new empty database; the reader may connect and read every table created in it
        by the administrator. `icu_locale` (e.g. "en-US") makes the database's default
        collation that ICU locale; `sql_ascii`, its encoding SQL_ASCII (bytes, no charset)."""
        import psycopg

        clause = f" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}'" if icu_locale else ""
        if sql_ascii:
            clause = " TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C'"
        with psycopg.connect(self.admin_conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{clause}')
        with psycopg.connect(self.admin_conninfo(name), autocommit=True) as conn:
            conn.execute(f"GRANT CONNECT ON DATABASE \"{name}\" TO {READER_ROLE}")
            conn.execute(f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}")
            conn.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {READER_ROLE}")

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if (self.data_dir / "postmaster.pid").exists():
                self._run(self.binaries.tool("pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def start_cluster() -> PostgresCluster:
    """Start a cluster, or raise ClusterUnavailable with the reason in one line."""
    binaries = find_binaries()
    as_user: str | None = None
    if os.geteuid() == 0:
        try:
            server_user = pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise ClusterUnavailable(f"running as root and there is no {SERVER_USER!r} system user to run the server") from None
        if shutil.which("runuser") is None:
            raise ClusterUnavailable("running as root and runuser is missing")
        as_user = SERVER_USER
    root = Path(tempfile.mkdtemp(prefix="graphrag-tui-pg-"))
    root.chmod(0o755)
    for folder in (root / "data", root / "socket"):
        folder.mkdir(mode=0o700)
        if as_user is not None:
            os.chown(folder, server_user.pw_uid, server_user.pw_gid)
    if as_user is not None:
        os.chown(root, server_user.pw_uid, server_user.pw_gid)
    cluster = PostgresCluster(
        root=root, binaries=binaries, port=_free_port(), admin_password="adm-" + secrets.token_hex(8),
        reader_password="rdr-" + secrets.token_hex(8), as_user=as_user,
    )
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
