"""The LTI tool's tables (SQLAlchemy 2 Core), kept in the quiz store beside the answers.

Six tables; the first five have the columns of the tool's former ``lti.sqlite`` file so that a
folder's file is imported unchanged (:func:`import_folder_file`):

- ``lti_state``: one row per OIDC login in flight (state, its nonce, issuer, client id);
  a launch deletes its row with ``DELETE … RETURNING``, so exactly one launch gets it.
- ``lti_nonce_used``: the nonces of accepted id_tokens; the primary key makes "a nonce is
  used once" one ``INSERT`` that a second process cannot also win (LTI Security Framework
  1.0 §5.1.3 step 9; OpenID Connect Core 1.0 §3.1.3.7 item 11).
- ``lti_score``: the passback record (``lms.lti.passback``).
- ``lti_pending_link``: deep linking launches waiting for the instructor's pick (DL 2.0 §4.4).
- ``lti_link``: per student and resource link, the AGS line item the quiz posts to.
- ``lti_context``: the courses (LTI contexts) each registration serves, with the course's AGS line
  items and NRPS memberships URLs from its latest launch (``lms.lti.contexts``).
- ``lti_platform`` and ``lti_tool_key``: the platform registrations and the tool's signing keys, so
  that every server machine behind one store has the same ones (``lms.lti.stored``).
- ``lti_outbox``: scores waiting to reach the platform, one row per (platform, client, line item, user),
  drained by the server's passback worker (``lms.lti.outbox``).

The quiz store (``quiz_bank.instructor.server``) creates them by its Alembic revisions
``0002``, ``0003``, ``0004`` and ``0005`` (the time columns' indexes); a tool folder used without a quiz store (``ppo-course lti`` on its own) keeps them
in ``lti.sqlite`` in the folder, through the same data layer (:func:`engine_of`).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy import Column, Engine, Float, Index, Integer, MetaData, PrimaryKeyConstraint, Table, Text, UniqueConstraint

from lms.engine import WRITE, engine_for

metadata = MetaData()

lti_state = Table(
    "lti_state", metadata,
    Column("state", Text, primary_key=True),
    Column("nonce", Text, nullable=False),
    Column("issuer", Text, nullable=False),
    Column("client_id", Text, nullable=False),
    Column("created", Float, nullable=False),
    UniqueConstraint("nonce", name="uq_lti_state_nonce"),
    Index("ix_lti_state_created", "created"),
)

lti_nonce_used = Table(
    "lti_nonce_used", metadata,
    Column("nonce", Text, primary_key=True),
    Column("used", Float, nullable=False),
    Index("ix_lti_nonce_used_used", "used"),
)

lti_score = Table(
    "lti_score", metadata,
    Column("issuer", Text), Column("client_id", Text), Column("lineitem", Text), Column("user_id", Text),
    Column("score", Float), Column("maximum", Float), Column("status", Text), Column("attempts", Integer),
    Column("error", Text), Column("updated", Float),
    PrimaryKeyConstraint("issuer", "client_id", "lineitem", "user_id"),
)

lti_pending_link = Table(
    "lti_pending_link", metadata,
    Column("ticket", Text, primary_key=True),
    Column("launch", Text),
    Column("created", Float),
)

lti_link = Table(
    "lti_link", metadata,
    Column("student_id", Text), Column("issuer", Text), Column("client_id", Text), Column("link", Text),
    Column("user_id", Text), Column("lineitem", Text), Column("stop", Integer),
    PrimaryKeyConstraint("student_id", "issuer", "link"),
)

lti_context = Table(
    "lti_context", metadata,
    Column("issuer", Text, nullable=False), Column("client_id", Text, nullable=False),
    Column("context_id", Text, nullable=False),
    Column("slot", Text, nullable=False),  # "first" for the binding by launch (one per registration), else the id
    Column("deployment_id", Text, nullable=False), Column("title", Text, nullable=False),
    Column("lineitems", Text, nullable=False), Column("memberships", Text, nullable=False),
    Column("bound_by", Text, nullable=False), Column("bound", Float, nullable=False), Column("seen", Float, nullable=False),
    PrimaryKeyConstraint("issuer", "client_id", "context_id"),
    UniqueConstraint("issuer", "client_id", "slot", name="uq_lti_context_slot"),
)

lti_platform = Table(
    "lti_platform", metadata,
    Column("issuer", Text, nullable=False), Column("client_id", Text, nullable=False),
    Column("registration", Text, nullable=False),  # PlatformRegistration as JSON
    Column("updated", Float, nullable=False),
    PrimaryKeyConstraint("issuer", "client_id"),
)

lti_tool_key = Table(
    "lti_tool_key", metadata,
    Column("kid", Text, primary_key=True),
    Column("jwk", Text, nullable=False),  # the private RSA JWK as JSON
    Column("created", Float, nullable=False),
    Column("retire_after", Float, nullable=True),  # None: published; else dropped from the JWKS after this time
)

lti_outbox = Table(
    "lti_outbox", metadata,
    Column("issuer", Text, nullable=False), Column("client_id", Text, nullable=False),
    Column("lineitem", Text, nullable=False), Column("user_id", Text, nullable=False),
    Column("score", Float, nullable=False), Column("maximum", Float, nullable=False),
    Column("status", Text, nullable=False),  # "pending" (tried again at next_try) or "failed" (refused for good)
    Column("attempts", Integer, nullable=False), Column("next_try", Float, nullable=False),
    Column("error", Text, nullable=False), Column("queued", Float, nullable=False),
    PrimaryKeyConstraint("issuer", "client_id", "lineitem", "user_id"),
)

FOLDER_TABLES = (lti_state, lti_nonce_used, lti_score, lti_pending_link, lti_link)  # the former folder file's
TABLES = (*FOLDER_TABLES, lti_context, lti_platform, lti_tool_key, lti_outbox)
FOLDER_FILE = "lti.sqlite"  # the tool folder's own store, when no quiz store holds the tables


def engine_of(target: Engine | Path | str) -> Engine:
    """The engine holding the LTI tables: ``target`` itself, or an SQLite file (tables created when missing).

    Args:
        target: the quiz store's engine (its migrations made the tables), or the path of an SQLite file.
    """
    if isinstance(target, Engine):
        return target
    engine = engine_for(Path(target), pool_size=2)
    metadata.create_all(engine)
    return engine


def upsert(conn, table: Table, row: dict, keys: tuple[str, ...]) -> None:
    """Insert ``row`` into ``table``, or replace the row with the same ``keys`` (SQLite and PostgreSQL)."""
    statement = dialect_insert(conn)(table).values(**row)
    conn.execute(statement.on_conflict_do_update(index_elements=list(keys),
                                                 set_={k: v for k, v in row.items() if k not in keys}))


def import_folder_file(folder: Path | str, engine: Engine) -> dict[str, int] | None:
    """Copy the tool folder's ``lti.sqlite`` into ``engine``'s tables once; None when there is no such file.

    Rows already there are kept (an import run twice adds nothing). The file is renamed
    ``lti.sqlite.imported`` afterwards, so later starts neither import it again nor read it.

    Returns:
        rows copied per table (those the file had; a table the file lacks counts 0).
    """
    path = Path(folder) / FOLDER_FILE
    if not path.exists():
        return None
    counts: dict[str, int] = {}
    with closing(sqlite3.connect(path, timeout=30)) as old, engine.connect().execution_options(**WRITE) as conn:
        have = {r[0] for r in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        with conn.begin():
            for table in FOLDER_TABLES:
                names = [c.name for c in table.columns]
                rows = ([dict(zip(names, r)) for r in old.execute(f"SELECT {', '.join(names)} FROM {table.name}")]
                        if table.name in have else [])
                for row in rows:
                    insert_or_keep(conn, table, row)
                counts[table.name] = len(rows)
    try:
        path.rename(path.with_name(FOLDER_FILE + ".imported"))
    except FileNotFoundError:
        pass  # another process of the same server imported it at the same moment (the inserts keep what is there)
    return counts


def insert_or_keep(conn, table: Table, row: dict) -> bool:
    """Insert ``row`` unless a row with the same key (or unique value) is there; True when it was inserted.

    One statement (``INSERT … ON CONFLICT DO NOTHING``), so of two processes inserting the same key at
    once exactly one gets True: the database's unique index decides, not a read before the write.
    """
    statement = dialect_insert(conn)(table).values(**row).on_conflict_do_nothing()
    # RETURNING, not rowcount: psycopg's rowcount is not the rows inserted once SQLAlchemy adds its own RETURNING.
    return conn.execute(statement.returning(*table.primary_key.columns)).first() is not None


def dialect_insert(conn):
    """The ``insert`` construct with ``on_conflict_…`` of the connection's dialect (SQLite or PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert

