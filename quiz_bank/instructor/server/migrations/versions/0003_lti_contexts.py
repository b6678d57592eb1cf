"""The courses each LTI registration serves, with the course's AGS and NRPS endpoints.

One row per (issuer, client id, context id): the first instructor launch (or deep
linking) of a registration binds its context; an administrator binds more with
``ppo-course lti bind-context``. The row keeps the course's line items and memberships
URLs from its latest launch, so that grades reach the course without a URL copied by
hand. The table is ``grader.platforms.lti.tables.lti_context``.

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
    """Create ``lti_context``."""
    op.create_table("lti_context",
                    *(sa.Column(c, sa.Text, nullable=False) for c in ("issuer", "client_id", "context_id", "slot",
                                                                       "deployment_id", "title", "lineitems",
                                                                       "memberships", "bound_by")),
                    sa.Column("bound", sa.Float, nullable=False), sa.Column("seen", sa.Float, nullable=False),
                    sa.PrimaryKeyConstraint("issuer", "client_id", "context_id"),
                    sa.UniqueConstraint("issuer", "client_id", "slot", name="uq_lti_context_slot"))


def downgrade() -> None:
    """Drop ``lti_context`` (every launch is then refused until a context is bound again)."""
    op.drop_table("lti_context")
