"""Whether the leaderboard can take uploads: the database answers, and can be written to.

A database that answers reads but cannot be written to (a read-only file system, a file this
process may not write, a full disk, a PostgreSQL standby) would answer every upload 503;
``problems`` names what is wrong instead, in words an organizer can act on. The server says
them at start and answers them at ``GET /readyz``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from evaluation.server.db._engine import scrub, shown_url

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db._session import Database

#: Fewest free bytes on an SQLite database's file system for it to be ready: an upload's row
#: and its write-ahead log need a few times the body's size (1 MiB at most).
MIN_FREE_BYTES = 16 * 1024 * 1024


def readiness(db: Database) -> list[str]:
    """What keeps the database from taking writes, one sentence each (empty: ready)."""
    url = db.engine.url
    backend = db.engine.dialect.name
    # an SQLite file's own problems first: they explain why it may not even open
    found = sqlite_problems(Path(url.database)) if backend == "sqlite" and url.database else []
    try:
        db.ping()
    except SQLAlchemyError as exc:
        reason = scrub(str(getattr(exc, "orig", None) or exc), url).strip()
        return found + [f"the database {shown_url(url)} does not answer: {reason}"]
    if backend == "postgresql":
        found += _postgresql_problems(db)
    return found


def sqlite_problems(path: Path) -> list[str]:
    """What keeps the SQLite file ``path`` (and its folder) from taking writes."""
    folder = path.resolve().parent
    try:
        stats = os.statvfs(folder)
    except OSError as exc:
        return [f"the folder {folder} of the database cannot be read: {exc.strerror}"]
    if stats.f_flag & os.ST_RDONLY:
        return [f"the database {path} is on a read-only file system: remount {folder} "
                f"read-write, or copy the database to a writable folder"]
    found = []
    for what, where in (("file", path), ("folder", folder)):
        if where.exists() and not os.access(where, os.W_OK):
            found.append(f"the database's {what} {where} is not writable by this process "
                         f"(user id {os.getuid()}): give it write permission")
    free = stats.f_bavail * stats.f_frsize
    if free < MIN_FREE_BYTES:
        found.append(f"the database's file system ({folder}) has {free // 1024} KiB free, "
                     f"fewer than {MIN_FREE_BYTES // 2**20} MiB: uploads would fail with "
                     f"'disk full'; free some space or move the database")
    return found


def _postgresql_problems(db: Database) -> list[str]:
    with db.reading() as session:
        standby = session.execute(text("SELECT pg_is_in_recovery()")).scalar_one()
        read_only = session.execute(text("SHOW default_transaction_read_only")).scalar_one()
    if standby:
        return ["the PostgreSQL server is a standby (in recovery): point --db at the primary"]
    if read_only == "on":
        return ["the PostgreSQL database is read-only (default_transaction_read_only = on)"]
    return []
