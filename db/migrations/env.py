"""Alembic environment: always run against the connection db.migrate hands over."""

from alembic import context

from db.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=True)  # SQLite can only ALTER through table copies
with context.begin_transaction():
    context.run_migrations()
