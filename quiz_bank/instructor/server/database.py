"""The quiz store's schema: Alembic migrations over the course store's engine (``lms.engine``).

:func:`migrate` brings the schema to the newest Alembic revision (the
``migrations`` folder beside this module); an SQLite file of schema version 1
written before Alembic is stamped ``0001`` first. It runs under a lock (SQLite's
write lock, a PostgreSQL advisory lock), so several processes may start at once.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, inspect, text

from lms.engine import WRITE

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_PG_MIGRATION_LOCK = 0x5050_4F51  # pg_advisory_xact_lock key of a migration ("PPOQ")


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
