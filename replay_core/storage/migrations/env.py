"""Alembic environment: runs against the engine the Store hands over."""

from alembic import context

from replay_core.storage.tables import metadata

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
