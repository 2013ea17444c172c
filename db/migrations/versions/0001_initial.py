"""Initial schema: environments, runs, measurements.

Revision ID: 0001_initial
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('environments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('device', sa.String(length=8), nullable=False),
    sa.Column('gpu_name', sa.String(length=200), nullable=True),
    sa.Column('gpu_count', sa.Integer(), nullable=True),
    sa.Column('sm_count', sa.Integer(), nullable=True),
    sa.Column('gpu_memory_bytes', sa.BigInteger(), nullable=True),
    sa.Column('driver_version', sa.String(length=100), nullable=True),
    sa.Column('cuda_version', sa.String(length=100), nullable=True),
    sa.Column('torch_version', sa.String(length=100), nullable=True),
    sa.Column('triton_version', sa.String(length=100), nullable=True),
    sa.Column('python_version', sa.String(length=100), nullable=True),
    sa.Column('hostname', sa.String(length=255), nullable=True),
    sa.Column('cpu_model', sa.String(length=255), nullable=True),
    sa.CheckConstraint("device IN ('cuda', 'cpu')", name='ck_env_device'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('uuid', sa.String(length=64), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('workload', sa.String(length=200), nullable=False),
    sa.Column('workload_params', sa.JSON(), nullable=False),
    sa.Column('dtype', sa.String(length=32), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('label', sa.String(length=200), nullable=True),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('command', sa.Text(), nullable=True),
    sa.CheckConstraint("source IN ('measured', 'published')", name='ck_run_source'),
    sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed', 'cancelled')", name='ck_run_status'),
    sa.ForeignKeyConstraint(['environment_id'], ['environments.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_created_at', ['created_at'], unique=False)
        batch_op.create_index('ix_runs_environment_id', ['environment_id'], unique=False)

    op.create_table('measurements',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('mode', sa.String(length=32), nullable=False),
    sa.Column('batch_size', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('step_ms', sa.Float(), nullable=True),
    sa.Column('step_ms_p10', sa.Float(), nullable=True),
    sa.Column('step_ms_p90', sa.Float(), nullable=True),
    sa.Column('samples', sa.Integer(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('setup_s', sa.Float(), nullable=True),
    sa.Column('host_launches_per_step', sa.Float(), nullable=True),
    sa.Column('graph_launches_per_step', sa.Float(), nullable=True),
    sa.Column('gpu_kernels_per_step', sa.Float(), nullable=True),
    sa.Column('gpu_busy_ms', sa.Float(), nullable=True),
    sa.Column('graph_pool_bytes', sa.BigInteger(), nullable=True),
    sa.Column('peak_allocated_bytes', sa.BigInteger(), nullable=True),
    sa.Column('reserved_delta_bytes', sa.BigInteger(), nullable=True),
    sa.Column('cudagraph_status', sa.String(length=16), nullable=False),
    sa.Column('correct', sa.Boolean(), nullable=True),
    sa.Column('max_abs_err', sa.Float(), nullable=True),
    sa.Column('samples_ms', sa.JSON(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.CheckConstraint("cudagraph_status IN ('replay', 'partial', 'skipped', 'eager-fallback', 'n/a')", name='ck_measurement_cudagraph_status'),
    sa.CheckConstraint("mode IN ('eager', 'compile', 'reduce-overhead', 'cuda-graph')", name='ck_measurement_mode'),
    sa.CheckConstraint("status IN ('ok', 'error', 'unsupported', 'skipped')", name='ck_measurement_status'),
    sa.CheckConstraint('batch_size >= 1', name='ck_measurement_batch_size'),
    sa.CheckConstraint('step_ms IS NULL OR step_ms >= 0', name='ck_measurement_step_ms'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'mode', 'batch_size', name='uq_measurement_point')
    )


def downgrade() -> None:
    op.drop_table("measurements")
    op.drop_table("runs")
    op.drop_table("environments")
