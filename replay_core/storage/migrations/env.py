"""Alembic environment: runs against the engine the Store hands over.

Under a lock, so that processes opening a fresh database at once do not race to create
the tables: SQLite's write lock taken at BEGIN (IMMEDIATE, see engine._sqlite_begin),
PostgreSQL's transaction-scoped advisory lock. The version is read after the lock, so
the second process finds the schema at head and does nothing.
"""

from alembic import context

from replay_core.storage.tables import metadata

engine = context.config.attributes["engine"]
MIGRATION_LOCK = 7_402_113_901  # any constant: the advisory lock key of agent-replay migrations

with engine.connect().execution_options(sqlite_immediate=True) as connection, connection.begin():
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
