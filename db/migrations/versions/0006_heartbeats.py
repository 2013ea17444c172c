"""Heartbeats for runs, so a sweep that died (a SIGKILLed `runner sweep`, not only a
worker's job) shows as lost; the dashboard session that queued a job, for the per-session
queue cap.

Revision ID: 0006_heartbeats
Revises: 0005_slurm
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_heartbeats"
down_revision = "0005_slurm"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (see 0004). Runs running before this have no heartbeat: readers
    # fall back to created_at, so an old stuck run shows as lost too.
    op.add_column("runs", sa.Column("heartbeat_at", sa.DateTime(timezone=True),
                                    nullable=True))
    op.add_column("jobs", sa.Column("session", sa.String(length=64), nullable=True))
    op.create_index("ix_jobs_session", "jobs", ["session", "status"])


def downgrade() -> None:
    op.drop_index("ix_jobs_session", table_name="jobs")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_column("jobs", "session")
        op.drop_column("runs", "heartbeat_at")
