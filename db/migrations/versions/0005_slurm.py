"""Slurm executor: which executor runs a job, the GPU type asked for, Slurm's job id.

Revision ID: 0005_slurm
Revises: 0004_intervals
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_slurm"
down_revision = "0004_intervals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (see 0004): existing jobs are local jobs.
    op.add_column("jobs", sa.Column(
        "executor", sa.String(length=8),
        sa.CheckConstraint("executor IN ('local', 'slurm')", name="ck_job_executor"),
        nullable=False, server_default="local"))
    op.add_column("jobs", sa.Column("gpu_type", sa.String(length=64), nullable=True))
    op.add_column("jobs", sa.Column("slurm_job_id", sa.String(length=32), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        for name in ("executor", "gpu_type", "slurm_job_id"):
            op.drop_column("jobs", name)
