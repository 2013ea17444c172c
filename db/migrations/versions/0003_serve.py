"""Serve runs: runs.kind, and the serve_configs, serve_results, serve_profile tables.

Revision ID: 0003_serve
Revises: 0002_jobs
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_serve"
down_revision = "0002_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN with its CHECK inline, not a batch table copy: on SQLite a copy
    # drops and recreates `runs`, and with foreign keys on, that DROP would cascade-delete
    # every measurement. Existing runs are sweeps.
    op.add_column('runs', sa.Column(
        'kind', sa.String(length=16),
        sa.CheckConstraint("kind IN ('sweep', 'serve')", name='ck_run_kind'),
        server_default='sweep', nullable=False))
    op.create_table('serve_configs',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('batch_dist', sa.String(length=1000), nullable=False),
    sa.Column('requests', sa.Integer(), nullable=False),
    sa.Column('seed', sa.BigInteger(), nullable=False),
    sa.Column('strategies', sa.JSON(), nullable=False),
    sa.Column('stream', sa.JSON(), nullable=False),
    sa.CheckConstraint('requests >= 1', name='ck_serve_config_requests'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id')
    )
    op.create_table('serve_profile',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('batch_size', sa.Integer(), nullable=False),
    sa.Column('bucket_ms', sa.Float(), nullable=True),
    sa.Column('eager_ms', sa.Float(), nullable=True),
    sa.Column('pool_bytes', sa.BigInteger(), nullable=True),
    sa.Column('pool_extra_bytes', sa.BigInteger(), nullable=True),
    sa.Column('capture_s', sa.Float(), nullable=True),
    sa.Column('execution', sa.String(length=32), nullable=True),
    sa.CheckConstraint('batch_size >= 1', name='ck_serve_profile_batch_size'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'batch_size', name='uq_serve_profile_size')
    )
    op.create_table('serve_results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('strategy', sa.String(length=2000), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('buckets', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('execution', sa.String(length=32), nullable=True),
    sa.Column('requests', sa.Integer(), nullable=True),
    sa.Column('real_rows', sa.BigInteger(), nullable=True),
    sa.Column('latency_ms_mean', sa.Float(), nullable=True),
    sa.Column('latency_ms_p50', sa.Float(), nullable=True),
    sa.Column('latency_ms_p99', sa.Float(), nullable=True),
    sa.Column('requests_per_s', sa.Float(), nullable=True),
    sa.Column('rows_per_s', sa.Float(), nullable=True),
    sa.Column('padding_waste', sa.Float(), nullable=True),
    sa.Column('wasted_fraction', sa.Float(), nullable=True),
    sa.Column('hit_rate', sa.Float(), nullable=True),
    sa.Column('fallback_rate', sa.Float(), nullable=True),
    sa.Column('graphs', sa.Integer(), nullable=True),
    sa.Column('graph_pool_bytes', sa.BigInteger(), nullable=True),
    sa.Column('setup_s', sa.Float(), nullable=True),
    sa.Column('host_launches_per_request', sa.Float(), nullable=True),
    sa.Column('graph_launches_per_request', sa.Float(), nullable=True),
    sa.Column('max_abs_err', sa.Float(), nullable=True),
    sa.Column('correct', sa.Boolean(), nullable=True),
    sa.Column('latencies_ms', sa.JSON(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.CheckConstraint("kind IN ('eager', 'compile', 'reduce-overhead', 'buckets')", name='ck_serve_result_kind'),
    sa.CheckConstraint("status IN ('ok', 'error', 'unsupported')", name='ck_serve_result_status'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'strategy', name='uq_serve_result_strategy')
    )


def downgrade() -> None:
    op.drop_table('serve_results')
    op.drop_table('serve_profile')
    op.drop_table('serve_configs')
    # On SQLite the column stays (its default keeps older code's inserts valid): dropping
    # it needs a table copy, whose DROP TABLE would cascade-delete every measurement.
    if op.get_bind().dialect.name != "sqlite":
        op.drop_column('runs', 'kind')
