"""Schema version 1: roster, stop attempts, answers, revocations, completions (the pre-SQLAlchemy store).

An SQLite file written before Alembic holds exactly these tables; it is
stamped with this revision instead of running it (``database.migrate``).

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the version-1 tables."""
    op.create_table("meta", sa.Column("key", sa.Text, primary_key=True), sa.Column("value", sa.Text, nullable=False))
    op.create_table("students", sa.Column("student_id", sa.Text, primary_key=True),
                    *(sa.Column(c, sa.Text, nullable=False, server_default=sa.text("''"))
                      for c in ("name", "section", "sis_user_id", "sis_login_id", "canvas_id", "email")))
    op.create_table(
        "stop_attempts",
        sa.Column("student_id", sa.Text, nullable=False),
        sa.Column("stop", sa.Integer, sa.CheckConstraint("stop BETWEEN 1 AND 8"), nullable=False),
        sa.Column("attempt", sa.Integer, sa.CheckConstraint("attempt >= 1"), nullable=False),
        sa.Column("question_order", sa.Text, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("n_correct", sa.Integer),
        sa.Column("passed", sa.Integer),
        sa.PrimaryKeyConstraint("student_id", "stop", "attempt"),
    )
    op.create_table(
        "answers",
        sa.Column("student_id", sa.Text, nullable=False),
        sa.Column("stop", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("question_id", sa.Text, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("response", sa.Text, nullable=False),
        sa.Column("correct", sa.Integer, nullable=False),
        sa.Column("answered_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("student_id", "stop", "attempt", "question_id"),
        sa.ForeignKeyConstraint(["student_id", "stop", "attempt"],
                                ["stop_attempts.student_id", "stop_attempts.stop", "stop_attempts.attempt"]),
    )
    op.create_table("revocations", sa.Column("student_id", sa.Text, primary_key=True),
                    sa.Column("not_before", sa.Float, nullable=False))
    op.create_table(
        "completions",
        sa.Column("student_id", sa.Text, nullable=False),
        sa.Column("stop", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("completed_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("student_id", "stop"),
    )
    op.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")


def downgrade() -> None:
    """Drop every table (the store is empty afterwards)."""
    for name in ("completions", "revocations", "answers", "stop_attempts", "students", "meta"):
        op.drop_table(name)
