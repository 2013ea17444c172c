"""Intervals over interleaved rounds: per-point CI, paired speedup, host launch cost.

Revision ID: 0004_intervals
Revises: 0003_serve
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_intervals"
down_revision = "0003_serve"
branch_labels = None
depends_on = None

_FLOATS = ("step_ms_ci_low", "step_ms_ci_high", "speedup", "speedup_ci_low",
           "speedup_ci_high", "launch_us")


def upgrade() -> None:
    # Plain ADD COLUMNs, not a batch table copy: on SQLite a copy recreates the table
    # (see 0003). Existing points keep null intervals: "no interval".
    for name in _FLOATS:
        op.add_column("measurements", sa.Column(name, sa.Float(), nullable=True))
    op.add_column("measurements", sa.Column(
        "stop_reason", sa.String(length=16),
        sa.CheckConstraint("stop_reason IS NULL OR stop_reason IN ('converged', 'budget')",
                           name="ck_measurement_stop_reason"), nullable=True))
    op.add_column("measurements", sa.Column("noisy", sa.Boolean(), nullable=True))
    op.add_column("measurements", sa.Column("host_unstable", sa.Boolean(), nullable=True))
    op.add_column("measurements", sa.Column("launch_us_rounds", sa.JSON(), nullable=False,
                                            server_default="[]"))


def downgrade() -> None:
    # On SQLite the columns stay (nullable or defaulted, so older code's inserts stay
    # valid): dropping them needs a table copy (see 0003).
    if op.get_bind().dialect.name != "sqlite":
        for name in (*_FLOATS, "stop_reason", "noisy", "host_unstable", "launch_us_rounds"):
            op.drop_column("measurements", name)
