"""Graph-memory runs (issue 27): runs.kind may be 'graph-memory', and their captures go to
the graph_memory_captures table.

Revision ID: 0010_graph_memory
Revises: 0009_energy
"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0010_graph_memory"
down_revision = "0009_energy"
branch_labels = None
depends_on = None

KIND = "graph-memory"
_CHECK = re.compile(r"(CONSTRAINT ck_run_kind CHECK \(kind IN \()([^)]*)(\)\))")


def _kinds(listed: str) -> list[str]:
    return re.findall(r"'([^']*)'", listed)


def _quoted(kinds: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in kinds)


def _set_kinds(change) -> None:
    """Rewrite ck_run_kind's list with `change(kinds) -> kinds`. The list is read from the
    database, not restated here, so a migration that adds another kind beside this one
    keeps it whichever runs first."""
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        text = bind.execute(sa.text(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = "
            "'ck_run_kind' AND conrelid = 'runs'::regclass")).scalar_one()
        kinds = change(_kinds(text))
        op.drop_constraint("ck_run_kind", "runs", type_="check")
        op.create_check_constraint("ck_run_kind", "runs", f"kind IN ({_quoted(kinds)})")
        return
    # SQLite cannot alter a CHECK, and the table copy Alembic's batch mode makes would
    # DROP `runs`, which with foreign keys on cascade-deletes every measurement (0003's
    # note); the pragma cannot be turned off inside the migration's transaction. SQLite's
    # documented procedure for loosening a constraint in place instead (lang_altertable,
    # "simpler procedure"): edit the stored CREATE TABLE and bump schema_version. Every
    # stored row satisfies the wider list, so nothing on disk changes.
    sql = bind.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND "
                               "name = 'runs'").scalar_one()
    m = _CHECK.search(sql)
    if m is None:
        raise RuntimeError("runs.kind has no ck_run_kind CHECK to widen: " + sql[:200])
    new = sql[:m.start(2)] + _quoted(change(_kinds(m.group(2)))) + sql[m.end(2):]
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    bind.execute(sa.text("UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND "
                         "name = 'runs'"), {"sql": new})
    bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    _set_kinds(lambda kinds: kinds if KIND in kinds else [*kinds, KIND])
    op.create_table(
        "graph_memory_captures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("pool", sa.String(length=16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("capture_s", sa.Float(), nullable=False),
        sa.Column("pool_reserved_bytes", sa.BigInteger(), nullable=False),
        sa.Column("allocated_bytes", sa.BigInteger(), nullable=False),
        sa.Column("device_used_bytes", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("pool IN ('shared', 'private')", name="ck_graph_memory_pool"),
        sa.CheckConstraint("batch_size >= 1", name="ck_graph_memory_batch_size"),
        sa.CheckConstraint("pool_reserved_bytes >= 0", name="ck_graph_memory_pool_bytes"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "pool", "position", name="uq_graph_memory_capture"),
    )


def downgrade() -> None:
    # Their captures go with the table: the runs would be headers of nothing, and the
    # narrower CHECK would refuse them on PostgreSQL.
    op.execute(sa.text("DELETE FROM runs WHERE kind = :k").bindparams(k=KIND))
    op.drop_table("graph_memory_captures")
    _set_kinds(lambda kinds: [k for k in kinds if k != KIND])
