"""Host and GPU apart (issue 39, bundle version 6): per point the step split into the GPU's
busy time, the launches at the host's launch cost and the rest of the host's time.

Existing points get the split computed from their own stored figures (step_ms,
gpu_busy_ms, host and graph launches a step, launch_us) by the same rule the runner
applies (contract/host_split.py split); points without those figures stay null.

Revision ID: 0011_host_split
Revises: 0010_graph_memory
"""

import sqlalchemy as sa
from alembic import op

from contract.host_split import split

revision = "0011_host_split"
down_revision = "0010_graph_memory"
branch_labels = None
depends_on = None

_FLOATS = ("split_gpu_ms", "split_launch_ms", "split_rest_ms")


def upgrade() -> None:
    # Plain ADD COLUMNs (see 0004), then the split of every point that has the figures.
    # A SQLite downgrade keeps the columns (below): an upgrade after it adds only what is
    # missing.
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("measurements")}
    for name in _FLOATS:
        if name not in have:
            op.add_column("measurements", sa.Column(name, sa.Float(), nullable=True))
    m = sa.table("measurements", sa.column("id", sa.Integer), sa.column("step_ms", sa.Float),
                 sa.column("gpu_busy_ms", sa.Float),
                 sa.column("host_launches_per_step", sa.Float),
                 sa.column("graph_launches_per_step", sa.Float),
                 sa.column("launch_us", sa.Float),
                 *(sa.column(n, sa.Float) for n in _FLOATS))
    bind = op.get_bind()
    rows = bind.execute(sa.select(m.c.id, m.c.step_ms, m.c.gpu_busy_ms,
                                  m.c.host_launches_per_step, m.c.graph_launches_per_step,
                                  m.c.launch_us)
                        .where(m.c.step_ms.is_not(None), m.c.gpu_busy_ms.is_not(None),
                               m.c.launch_us.is_not(None),
                               m.c.host_launches_per_step.is_not(None))).all()
    for r in rows:
        s = split(r.step_ms, r.gpu_busy_ms,
                  r.host_launches_per_step + (r.graph_launches_per_step or 0), r.launch_us)
        if s is not None:
            bind.execute(m.update().where(m.c.id == r.id).values(
                split_gpu_ms=s.gpu_ms, split_launch_ms=s.launch_ms, split_rest_ms=s.rest_ms))


def downgrade() -> None:
    # On SQLite the columns stay (nullable: older code's inserts stay valid; see 0004).
    if op.get_bind().dialect.name != "sqlite":
        for name in _FLOATS:
            op.drop_column("measurements", name)
