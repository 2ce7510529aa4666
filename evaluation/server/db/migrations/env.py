"""Alembic's environment for the leaderboard database.

``evaluation.server.db.upgrade`` runs the migrations on a connection it passes in
``config.attributes["connection"]`` (the engine of ``make_engine``, with SQLite's settings).
Without one (the ``alembic`` command with an ``alembic.ini`` whose ``sqlalchemy.url`` is set,
e.g. to write a new revision with ``--autogenerate``), an engine is made from that URL.
"""

from alembic import context

from evaluation.server.db import make_engine, metadata

config = context.config


def run_offline() -> None:
    """Write the SQL of the migrations instead of running them (``alembic upgrade --sql``)."""
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Run the migrations on the given connection, or on one to ``sqlalchemy.url``."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("the migrations need a database: set sqlalchemy.url in the Alembic "
                           "configuration or pass a connection")
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


def _run(connection) -> None:
    # render_as_batch: SQLite changes a table by copying it; Alembic's batch mode does that
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
