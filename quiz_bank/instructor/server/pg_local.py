"""A throw-away PostgreSQL server for the quiz server's tests and benchmark (never for a course).

:func:`find_bindir` looks for the server's binaries where packages put them:
``pg_config --bindir``, ``/usr/lib/postgresql/<version>/bin`` (Debian and
Ubuntu's ``apt-get install postgresql``, newest first), ``/usr/pgsql-*/bin``
(RHEL), then ``initdb`` on ``PATH``. :class:`LocalPostgres` runs ``initdb``
into a temporary folder and starts the server on loopback on a free port
(its unix socket in the same folder), with trust authentication for the
``postgres`` role; :meth:`LocalPostgres.stop` stops it and removes the folder.

``initdb`` and ``postgres`` refuse to run as root. As root (CI on a fresh
machine), both run as an unprivileged user through ``runuser``: ``postgres``
(the user the Debian package creates) when it exists, else ``nobody``, with
the temporary folder handed to that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries here, or the server would not start; the message says which."""


def find_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres`` (None when none is installed)."""
    candidates: list[str] = []
    if shutil.which("pg_config"):
        try:
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
            candidates.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass

    def version(path: str) -> float:
        try:
            return float(Path(path).parent.name.removeprefix("pgsql-"))
        except ValueError:
            return 0.0

    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    candidates += sorted(glob.glob("/usr/pgsql-*/bin"), key=version, reverse=True)
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb")).resolve().parent))
    for folder in candidates:
        if folder and all((Path(folder) / exe).is_file() for exe in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPostgres:
    """``initdb`` + ``pg_ctl start`` in a temporary folder (see the module docstring).

    Args:
        bindir: the binaries (default :func:`find_bindir`). durable: keep fsync on (the benchmark);
            off for tests, which kill the quiz server, never PostgreSQL. max_connections: the server's limit.

    Raises:
        PostgresUnavailable: from :meth:`start` when no binaries are found or the server fails to start.
    """

    def __init__(self, bindir: Path | None = None, *, durable: bool = False, max_connections: int = 300) -> None:
        self.bindir = bindir or find_bindir()
        self.durable, self.max_connections = durable, max_connections
        self.port = 0
        self.folder: Path | None = None

    def _as_user(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        for name in ("postgres", "nobody"):
            try:
                pwd.getpwnam(name)
            except KeyError:
                continue
            return ["runuser", "-u", name, "--"]
        raise PostgresUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists")

    def _run(self, argv: list[str], timeout: float = 120.0) -> None:
        result = subprocess.run(self._as_user() + argv, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            log = (self.folder / "server.log") if self.folder else None
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise PostgresUnavailable(f"{' '.join(argv[:2])} failed ({result.returncode}): "
                                      f"{result.stderr.strip()[-2000:]}\n{tail}")

    def start(self) -> "LocalPostgres":
        """initdb and start the server; returns once it accepts connections."""
        if self.bindir is None:
            raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl, postgres) were found: "
                                      "install them (Debian/Ubuntu: apt-get install postgresql; `make postgres`)")
        user = self._as_user()
        parent = Path(tempfile.gettempdir())
        if user and not all(os.stat(p).st_mode & 0o001 for p in (parent, *parent.parents)):
            parent = Path("/tmp")  # the unprivileged user must be able to reach its folder
        self.folder = Path(tempfile.mkdtemp(prefix="ppo-quiz-pg-", dir=parent))
        if user:
            shutil.chown(self.folder, user=user[2])
        data = self.folder / "data"
        self._run([str(self.bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                   "-E", "UTF8", "--no-sync", "--no-instructions"])
        self.port = _free_port()
        settings = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                    f"-c max_connections={self.max_connections} -c shared_buffers=64MB")
        if not self.durable:
            settings += " -c fsync=off -c full_page_writes=off"
        self._run([str(self.bindir / "pg_ctl"), "-D", str(data), "-l", str(self.folder / "server.log"),
                   "-w", "-t", "120", "-o", settings, "start"])
        return self

    def url(self, database: str = "postgres") -> str:
        """``postgresql://postgres@127.0.0.1:PORT/database``."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (letters, digits, ``_``); returns its URL."""
        import psycopg

        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name {name!r}: letters, digits and _ only")
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder; idempotent."""
        folder, self.folder = self.folder, None
        if folder is None:
            return
        try:
            self.folder = folder
            self._run([str(self.bindir / "pg_ctl"), "-D", str(folder / "data"), "-m", "fast", "-w", "stop"], timeout=60)
        except (PostgresUnavailable, subprocess.SubprocessError):
            pass
        finally:
            self.folder = None
            shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> "LocalPostgres":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
