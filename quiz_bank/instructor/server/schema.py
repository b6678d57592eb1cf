"""The quiz server's tables as SQLAlchemy Core objects (one definition for SQLite and PostgreSQL).

The columns are those of schema version 1 (the store before SQLAlchemy), so a
version-1 SQLite file is adopted as Alembic revision ``0001`` unchanged
(``quiz_bank.instructor.server.database.migrate``). Verdicts and ``passed`` stay integers
(0/1), times stay seconds since the epoch as floats, responses and question
orders stay JSON text: the same values on both engines, and a backup
(``quiz_bank.instructor.server.backup``) is one dialect-neutral file.
"""

from __future__ import annotations

from sqlalchemy import (CheckConstraint, Column, Float, ForeignKeyConstraint, Integer, MetaData, PrimaryKeyConstraint,
                        Table, Text, text)

metadata = MetaData()

meta = Table("meta", metadata, Column("key", Text, primary_key=True), Column("value", Text, nullable=False))

students = Table(
    "students", metadata,
    Column("student_id", Text, primary_key=True),
    *(Column(name, Text, nullable=False, server_default=text("''"))
      for name in ("name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")),
)

stop_attempts = Table(
    "stop_attempts", metadata,
    Column("student_id", Text, nullable=False),
    Column("stop", Integer, CheckConstraint("stop BETWEEN 1 AND 8"), nullable=False),
    Column("attempt", Integer, CheckConstraint("attempt >= 1"), nullable=False),
    Column("question_order", Text, nullable=False),  # JSON list of question ids, as shown
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),  # NULL while open
    Column("n_correct", Integer),
    Column("passed", Integer),
    PrimaryKeyConstraint("student_id", "stop", "attempt"),
)

answers = Table(
    "answers", metadata,
    Column("student_id", Text, nullable=False),
    Column("stop", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("question_id", Text, nullable=False),
    Column("position", Integer, nullable=False),  # 1-based place in the attempt's order
    Column("response", Text, nullable=False),  # JSON, canonical ids (engine.normalise_response)
    Column("correct", Integer, nullable=False),
    Column("answered_at", Float, nullable=False),
    PrimaryKeyConstraint("student_id", "stop", "attempt", "question_id"),
    ForeignKeyConstraint(["student_id", "stop", "attempt"],
                         ["stop_attempts.student_id", "stop_attempts.stop", "stop_attempts.attempt"]),
)

revocations = Table(  # tokens of this id issued before not_before are refused
    "revocations", metadata,
    Column("student_id", Text, primary_key=True),
    Column("not_before", Float, nullable=False),
)

completions = Table(
    "completions", metadata,
    Column("student_id", Text, nullable=False),
    Column("stop", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("completed_at", Float, nullable=False),
    PrimaryKeyConstraint("student_id", "stop"),
)

#: Tables in dependency order (parents first): the order a restore inserts them.
TABLES = (meta, students, stop_attempts, answers, revocations, completions)
