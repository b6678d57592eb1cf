"""The quiz store's engine: SQLite (the embedded default) or PostgreSQL, one SQLAlchemy 2 Core data layer.

``--db quiz.sqlite`` (any path) is SQLite; ``--db postgresql://user@host/db``
is PostgreSQL through psycopg 3 (``postgresql+psycopg://``). :func:`engine_for`
makes the engine with each engine's settings for the store's guarantees:

- **SQLite**: WAL, ``synchronous=FULL`` (a committed transaction survives a
  crash or a power cut), foreign keys on; a write transaction starts with
  ``BEGIN IMMEDIATE`` (writers are serialised across threads and processes,
  the busy timeout waits up to 60 s), a read with a plain ``BEGIN`` (WAL lets
  it run beside the writer).
- **PostgreSQL**: READ COMMITTED with row locks taken by the writer
  (``SELECT … FOR UPDATE`` on the attempt, ``quiz_bank.instructor.server.db``); a commit
  returns once the WAL is flushed (the server's default ``synchronous_commit``).

:func:`migrate` brings the schema to the newest Alembic revision (the
``migrations`` folder beside this module); an SQLite file of schema version 1
written before Alembic is stamped ``0001`` first. It runs under a lock (SQLite's
write lock, a PostgreSQL advisory lock), so several processes may start at once.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_PG_MIGRATION_LOCK = 0x5050_4F51  # pg_advisory_xact_lock key of a migration ("PPOQ")
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


def _alembic_config(connection):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision of the ``migrations`` folder."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config(None)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The store's Alembic revision (None: no ``alembic_version`` table yet)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: Engine) -> tuple[str | None, str]:
    """Upgrade the store to the head revision (a no-op when it is there); returns (before, after).

    ``before`` is None for an empty store, and ``"schema version 1 (before Alembic)"`` for a file
    of the store before Alembic (adopted as revision 0001).

    Raises:
        RuntimeError: the database holds tables of something else, or a schema newer than this code.
    """
    before = current_revision(engine)
    if before == head_revision():
        return before, before
    from alembic import command

    with engine.connect().execution_options(**WRITE) as conn:
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            config = _alembic_config(conn)
            tables = set(inspect(conn).get_table_names())
            if "alembic_version" not in tables and "stop_attempts" in tables:
                version = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
                if version != "1":
                    raise RuntimeError(f"the quiz store has schema version {version!r}; this code knows 1 and later")
                command.stamp(config, "0001")  # the pre-Alembic file: its tables are revision 0001's
                before = "schema version 1 (before Alembic)"
            command.upgrade(config, "head")
        after = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return before, after
