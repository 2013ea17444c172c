"""Job queue: jobs (queued sweeps) and workers (processes that claim them).

Revision ID: 0002_jobs
Revises: 0001_initial
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_jobs"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('workers',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('hostname', sa.String(length=255), nullable=True),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('gpu_name', sa.String(length=200), nullable=True),
    sa.Column('has_cuda', sa.Boolean(), nullable=False),
    sa.Column('torch_version', sa.String(length=100), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('stopped_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.create_index('ix_workers_heartbeat_at', ['heartbeat_at'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('device', sa.String(length=8), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=True),
    sa.Column('label', sa.String(length=200), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('worker_id', sa.Integer(), nullable=True),
    sa.Column('worker_name', sa.String(length=200), nullable=True),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('points_done', sa.Integer(), nullable=False),
    sa.Column('points_total', sa.Integer(), nullable=True),
    sa.Column('current_point', sa.String(length=100), nullable=True),
    sa.Column('message', sa.Text(), nullable=False),
    sa.CheckConstraint("device IN ('auto', 'cuda', 'cpu')", name='ck_job_device'),
    sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed', 'cancelled')", name='ck_job_status'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['worker_id'], ['workers.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_status', ['status', 'id'], unique=False)


def downgrade() -> None:
    op.drop_table("jobs")
    op.drop_table("workers")
