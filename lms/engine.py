"""The course store's engine (the quiz store, and the LTI tables in it): SQLite (the embedded default) or
PostgreSQL, one SQLAlchemy 2 Core data layer.

``--db quiz.sqlite`` (any path) is SQLite; ``--db postgresql://user@host/db``
is PostgreSQL through psycopg 3 (``postgresql+psycopg://``). :func:`engine_for`
makes the engine with each engine's settings for the store's guarantees:

- **SQLite**: WAL, ``synchronous=FULL`` (a committed transaction survives a
  crash or a power cut), foreign keys on; a write transaction starts with
  ``BEGIN IMMEDIATE`` (writers are serialised across threads and processes,
  the busy timeout waits up to 60 s), a read with a plain ``BEGIN`` (WAL lets
  it run beside the writer).
- **PostgreSQL**: READ COMMITTED with row locks taken by the writer
  (``SELECT … FOR UPDATE`` on the attempt, by the quiz store); a commit
  returns once the WAL is flushed (the server's default ``synchronous_commit``).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

WRITE = {"quiz_write": True}  # execution option of a write transaction (SQLite: BEGIN IMMEDIATE)


def is_url(target: str | Path) -> bool:
    """True when ``--db`` names a database server (``scheme://…``), False for an SQLite file path."""
    return "://" in str(target)


def describe(target: str | Path) -> str:
    """``target`` for a log line: a server URL without its password, or the file path."""
    return make_url(str(target)).render_as_string(hide_password=True) if is_url(target) else str(target)


def engine_for(target: str | Path, *, pool_size: int = 8, durable: bool = True) -> Engine:
    """The engine of ``--db``: an SQLite file (created with its folder) or a ``postgresql://`` URL.

    ``durable=False`` (throw-away benchmark stores only) skips the flush at each commit
    (SQLite ``synchronous=OFF``, PostgreSQL ``synchronous_commit=off``).

    Raises:
        ValueError: a URL of another database (only SQLite files and PostgreSQL are supported).
    """
    if not is_url(target):
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(f"sqlite+pysqlite:///{path}", pool_size=pool_size, max_overflow=64,
                               connect_args={"timeout": 60.0, "check_same_thread": False})
        _sqlite_settings(engine, durable)
        return engine
    url = make_url(str(target))
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"--db {describe(target)}: only an SQLite file or a postgresql:// URL is supported")
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    options = {} if durable else {"options": "-c synchronous_commit=off"}
    # No pre-ping (a round trip per checkout, and every page checks out several times): connections are
    # recycled hourly, and a connection the server dropped fails one request and is discarded.
    return create_engine(url, pool_size=pool_size, max_overflow=32, pool_recycle=3600, connect_args=options)


def _sqlite_settings(engine: Engine, durable: bool) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's begin event below issues BEGIN itself
        for pragma in ("journal_mode=WAL", "synchronous=" + ("FULL" if durable else "OFF"), "foreign_keys=ON"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:
        write = connection.get_execution_options().get("quiz_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
