"""The courses each LTI registration serves (with their AGS and NRPS endpoints); registrations and tool keys.

One row per (issuer, client id, context id): the first instructor launch (or deep
linking) of a registration binds its context; an administrator binds more with
``ppo-course lti bind-context``. The row keeps the course's line items and memberships
URLs from its latest launch, so that grades reach the course without a URL copied by
hand. The table is ``lms.lti.tables.lti_context``.

``lti_platform`` and ``lti_tool_key`` hold the platform registrations and the tool's
signing keys (formerly only ``platforms.json`` and ``tool_keys.json`` in each machine's
tool folder), so that every server process behind one store serves the same course
(``lms.lti.stored``).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``lti_context``, ``lti_platform`` and ``lti_tool_key``."""
    op.create_table("lti_context",
                    *(sa.Column(c, sa.Text, nullable=False) for c in ("issuer", "client_id", "context_id", "slot",
                                                                       "deployment_id", "title", "lineitems",
                                                                       "memberships", "bound_by")),
                    sa.Column("bound", sa.Float, nullable=False), sa.Column("seen", sa.Float, nullable=False),
                    sa.PrimaryKeyConstraint("issuer", "client_id", "context_id"),
                    sa.UniqueConstraint("issuer", "client_id", "slot", name="uq_lti_context_slot"))
    op.create_table("lti_platform", sa.Column("issuer", sa.Text, nullable=False),
                    sa.Column("client_id", sa.Text, nullable=False), sa.Column("registration", sa.Text, nullable=False),
                    sa.Column("updated", sa.Float, nullable=False), sa.PrimaryKeyConstraint("issuer", "client_id"))
    op.create_table("lti_tool_key", sa.Column("kid", sa.Text, primary_key=True),
                    sa.Column("jwk", sa.Text, nullable=False), sa.Column("created", sa.Float, nullable=False),
                    sa.Column("retire_after", sa.Float, nullable=True))


def downgrade() -> None:
    """Drop the three tables (registrations and keys then come from the tool folder's files again)."""
    for name in ("lti_tool_key", "lti_platform", "lti_context"):
        op.drop_table(name)
