"""Indexes on the LTI tables' time columns, which every login and launch prunes by.

``lti_state.created``: each login deletes the states older than their lifetime; without an index that is a scan
of every login in flight, which an outsider's flood of logins makes long. ``lti_nonce_used.used``: each launch
deletes the used nonces older than the lifetime of the states they came with (``lms.lti.launch.NONCE_KEEP_S``).

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``ix_lti_state_created`` and ``ix_lti_nonce_used_used``."""
    op.create_index("ix_lti_state_created", "lti_state", ["created"])
    op.create_index("ix_lti_nonce_used_used", "lti_nonce_used", ["used"])


def downgrade() -> None:
    """Drop both indexes."""
    op.drop_index("ix_lti_nonce_used_used", table_name="lti_nonce_used")
    op.drop_index("ix_lti_state_created", table_name="lti_state")
