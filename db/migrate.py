"""Schema versions through Alembic: `upgrade(engine)` brings any database to head."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def head() -> str:
    return ScriptDirectory.from_config(_config()).get_current_head()


def current(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    if revision == "head" and current(engine) == head():
        return  # the common case: skip Alembic's machinery on every engine creation
    with engine.begin() as conn:
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
