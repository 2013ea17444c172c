"""A mode's memory cost (issue 44, bundle version 7): what running it keeps on the GPU
beyond what eager keeps at the same batch size, each mode measured alone from a clean
state (runner/core/memory.py).

Existing points keep their figures and get no cost: their memory was read around each
mode's setup while the modes before it were alive, so it cannot be told apart from an
earlier mode's pool. Their pages say so instead of deriving a figure.

Revision ID: 0012_memory_cost
Revises: 0011_host_split
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_memory_cost"
down_revision = "0011_host_split"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN (see 0004); a SQLite downgrade keeps it, so add only if missing.
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("measurements")}
    if "memory_cost_bytes" not in have:
        op.add_column("measurements",
                      sa.Column("memory_cost_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # SQLite before 3.35 cannot drop a column
        op.drop_column("measurements", "memory_cost_bytes")
