"""The LTI tool's state in the quiz store: login states, used nonces, passback record, pending deep links, line items.

Before this revision the tool kept them in ``lti.sqlite`` in its folder, one file per
machine; here every server process behind one database shares them, and the nonce
table's primary key makes "a nonce is used once" hold across processes and machines.
The tables are those of ``lms.lti.tables`` (same columns as the former
file, which ``lms.lti.tables.import_folder_file`` copies in once).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the five LTI tables."""
    op.create_table("lti_state", sa.Column("state", sa.Text, primary_key=True),
                    sa.Column("nonce", sa.Text, nullable=False), sa.Column("issuer", sa.Text, nullable=False),
                    sa.Column("client_id", sa.Text, nullable=False), sa.Column("created", sa.Float, nullable=False),
                    sa.UniqueConstraint("nonce", name="uq_lti_state_nonce"))
    op.create_table("lti_nonce_used", sa.Column("nonce", sa.Text, primary_key=True),
                    sa.Column("used", sa.Float, nullable=False))
    op.create_table("lti_score", *(sa.Column(c, sa.Text) for c in ("issuer", "client_id", "lineitem", "user_id")),
                    sa.Column("score", sa.Float), sa.Column("maximum", sa.Float), sa.Column("status", sa.Text),
                    sa.Column("attempts", sa.Integer), sa.Column("error", sa.Text), sa.Column("updated", sa.Float),
                    sa.PrimaryKeyConstraint("issuer", "client_id", "lineitem", "user_id"))
    op.create_table("lti_pending_link", sa.Column("ticket", sa.Text, primary_key=True), sa.Column("launch", sa.Text),
                    sa.Column("created", sa.Float))
    op.create_table("lti_link", *(sa.Column(c, sa.Text) for c in ("student_id", "issuer", "client_id", "link",
                                                                  "user_id", "lineitem")),
                    sa.Column("stop", sa.Integer), sa.PrimaryKeyConstraint("student_id", "issuer", "link"))


def downgrade() -> None:
    """Drop the LTI tables (launches in flight are lost; the LMS keeps the scores it received)."""
    for name in ("lti_link", "lti_pending_link", "lti_score", "lti_nonce_used", "lti_state"):
        op.drop_table(name)
