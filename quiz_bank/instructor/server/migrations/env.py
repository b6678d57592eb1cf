"""Alembic environment of the quiz store: run on the connection ``database.migrate`` passes in."""

from alembic import context

from quiz_bank.instructor.server.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
