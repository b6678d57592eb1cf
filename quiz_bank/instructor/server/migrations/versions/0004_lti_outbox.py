"""The passback queue: scores waiting to reach the platform, drained by the server's own worker.

One row per (issuer, client id, line item, user): the latest score to post, its status
(``pending``: tried again at ``next_try``; ``failed``: refused for good), the attempts so far
and the last error. The table is ``lms.lti.tables.lti_outbox``.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``lti_outbox``."""
    op.create_table("lti_outbox",
                    *(sa.Column(c, sa.Text, nullable=False) for c in ("issuer", "client_id", "lineitem", "user_id")),
                    sa.Column("score", sa.Float, nullable=False), sa.Column("maximum", sa.Float, nullable=False),
                    sa.Column("status", sa.Text, nullable=False), sa.Column("attempts", sa.Integer, nullable=False),
                    sa.Column("next_try", sa.Float, nullable=False), sa.Column("error", sa.Text, nullable=False),
                    sa.Column("queued", sa.Float, nullable=False),
                    sa.PrimaryKeyConstraint("issuer", "client_id", "lineitem", "user_id"))


def downgrade() -> None:
    """Drop ``lti_outbox`` (scores still queued are lost; the posted record ``lti_score`` stays)."""
    op.drop_table("lti_outbox")
