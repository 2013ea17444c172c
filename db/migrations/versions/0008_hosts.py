"""One host, several GPUs: each worker's per-host slot (the GPU it is pinned to), its CPU
set and its host policy, so "4 workers on host X" can be read from the workers table.

Revision ID: 0008_hosts
Revises: 0007_traces
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_hosts"
down_revision = "0007_traces"
branch_labels = None
depends_on = None

COLUMNS = ("host_slot", "host_policy", "cuda_visible_devices", "cpus")


def upgrade() -> None:
    # Plain ADD COLUMNs (see 0004): older workers' rows say nothing (null).
    op.add_column("workers", sa.Column("host_slot", sa.Integer(), nullable=True))
    op.add_column("workers", sa.Column(
        "host_policy", sa.String(length=16),
        sa.CheckConstraint("host_policy IS NULL OR host_policy IN ('exclusive', 'shared')",
                           name="ck_worker_host_policy"), nullable=True))
    op.add_column("workers", sa.Column("cuda_visible_devices", sa.String(length=200),
                                       nullable=True))
    op.add_column("workers", sa.Column("cpus", sa.String(length=1000), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        for name in COLUMNS:
            op.drop_column("workers", name)
