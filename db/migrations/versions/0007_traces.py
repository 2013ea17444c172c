"""Traces: one profiled step per point, in a table of its own (issue 12).

Revision ID: 0007_traces
Revises: 0006_heartbeats
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_traces"
# The lead re-chains this after 0006 when both branches meet.
down_revision = "0006_heartbeats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A new table only: existing points have no trace, which reads as "none kept".
    op.create_table(
        "traces",
        sa.Column("measurement_id", sa.Integer(),
                  sa.ForeignKey("measurements.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("trace", sa.JSON(), nullable=False))


def downgrade() -> None:
    op.drop_table("traces")
