"""The board's version: a counter in the database that every change of what a board shows
raises, whichever process or tool made it.

On SQLite, triggers on the tables a board reads (made by the migration of ``board_changes``)
raise it in the writer's own transaction. Elsewhere (PostgreSQL), and on a database whose
triggers are missing (a table rebuilt by a later migration drops them), there is no version:
every board is made afresh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db._session import Database


#: The tables a board reads, and the writes whose triggers raise the version.
BOARD_TABLES = ("submissions", "teams", "phase_reveals", "phase_publications",
                "user_values")
EVENTS = ("insert", "update", "delete")
#: The triggers' names (as the migration makes them).
TRIGGERS = tuple(f"board_change_{table}_{event}" for table in BOARD_TABLES for event in EVENTS)

_VERSION = text(
    "SELECT version, (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ("
    + ", ".join(f"'{name}'" for name in TRIGGERS) + ")) FROM board_changes WHERE id = 1")


def board_version(db: Database) -> int | None:
    """The board's version now: equal versions mean equal boards (for the same phase, caller
    and clock); None when the database keeps none (not SQLite, or a trigger is missing)."""
    if db.engine.dialect.name != "sqlite":
        return None
    try:
        with db.read_engine.connect() as conn:
            found = conn.execute(_VERSION).one_or_none()
    except SQLAlchemyError:  # no such table: a database older than the counter
        return None
    if found is None or found[1] != len(TRIGGERS):
        return None
    return int(found[0])
