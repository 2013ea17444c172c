"""Energy per step from the GPU's energy counter (issue 28, bundle version 5): per point
the energy per step with its interval, average and idle power, energy above idle, the
gain over eager, and why the figures are absent where they are.

Revision ID: 0009_energy
Revises: 0008_hosts
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_energy"
down_revision = "0008_hosts"
branch_labels = None
depends_on = None

_FLOATS = ("energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
           "avg_power_w", "idle_power_w", "energy_above_idle_mj_per_step", "energy_gain",
           "energy_gain_ci_low", "energy_gain_ci_high")


def upgrade() -> None:
    # Plain ADD COLUMNs (see 0004): existing points keep null energy, "not measured".
    for name in _FLOATS:
        op.add_column("measurements", sa.Column(name, sa.Float(), nullable=True))
    op.add_column("measurements", sa.Column("energy_unavailable_reason", sa.Text(),
                                            nullable=True))


def downgrade() -> None:
    # On SQLite the columns stay (nullable: older code's inserts stay valid; see 0004).
    if op.get_bind().dialect.name != "sqlite":
        for name in (*_FLOATS, "energy_unavailable_reason"):
            op.drop_column("measurements", name)
