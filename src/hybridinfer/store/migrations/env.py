"""Alembic environment: migrations run on a connection handed in by ``SqlStore.migrate``."""

from __future__ import annotations

from alembic import context

from hybridinfer.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # offline mode: emit SQL for the configured URL
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
    )
else:
    context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
