"""An SQLite database as files: where it is, whether it is damaged or in use, its backup and
its restore.

SQLite keeps a database in write-ahead-log mode in three files: ``leaderboard.db``,
``leaderboard.db-wal`` (the commits not yet copied into the database) and
``leaderboard.db-shm`` (the log's index). Copying the database file alone misses the log's
commits, and copying a backup over the database while a log is left from a crash mixes the
log of one database into another: both corrupt it. A backup is therefore taken with SQLite's
backup API (a consistent copy, taken while the server writes), and a restore sets the old
files aside together and writes the backup through the same API.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.engine import URL, Engine, make_url

from evaluation.errors import ConfigError

#: What the database's two companion files end with.
COMPANIONS = ("-wal", "-shm")


def sqlite_path(url: str | URL) -> Path | None:
    """The file of an SQLite URL, absolute; None for another database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    return Path(parsed.database).expanduser().absolute()


def describe(url: str | URL) -> str:
    """The database as an organizer reads it: an SQLite file's absolute path, else the URL
    without its password."""
    path = sqlite_path(url)
    if path is not None:
        return f"SQLite file {path}"
    return make_url(url).render_as_string(hide_password=True)


def check_integrity(path: Path) -> None:
    """Refuse a damaged SQLite file (or one that is not a database) with what to do.

    A file that cannot be opened or read now (a read-only folder, a full disk, a lock) is
    not called damaged: the start and ``/readyz`` say what is wrong with it.

    Raises
    ------
    ConfigError
        When ``PRAGMA quick_check`` finds a fault, or the file is not an SQLite database.
    """
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            faults = [row[0] for row in connection.execute("PRAGMA quick_check(5)")]
        finally:
            connection.close()
    except sqlite3.OperationalError:
        return  # cannot be opened or read now (read-only, full disk, locked): not a damage;
        # the start and the readiness check say what is wrong
    except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed"
        faults = [str(exc)]
    if faults != ["ok"]:
        # SQLite's fault lines may hold line breaks: the message stays on one line
        said = " ".join("; ".join(faults).split())
        raise ConfigError(
            f"the database {path} is damaged ({said[:300]}). Stop the server and "
            f"restore the last backup: python -m evaluation admin --db sqlite:///{path} db "
            f"restore BACKUP (it sets the damaged files aside).")


def in_use(path: Path) -> bool:
    """Whether another process has the SQLite database ``path`` open (a server, a shell).

    In write-ahead-log mode every open connection holds a shared lock on the database file;
    an exclusive lock is only granted when there is none.
    """
    connection = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        connection.execute("PRAGMA locking_mode=EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return True
        raise
    finally:
        connection.close()


def backup(engine: Engine, target: Path) -> Path:
    """Copy the SQLite database of ``engine`` to ``target`` with SQLite's backup API (safe
    while the server writes); returns the target, checked.

    Raises
    ------
    ConfigError
        When the database is not SQLite (use ``pg_dump``), ``target`` exists, or its folder
        does not.
    """
    source_path = _require_sqlite(engine, "back up", "pg_dump -Fc -f BACKUP.dump DBNAME")
    target = target.expanduser().absolute()
    if target.exists():
        raise ConfigError(f"{target} exists already; give a new file name (a backup never "
                          f"overwrites a file).")
    if not target.parent.is_dir():
        raise ConfigError(f"the folder {target.parent} of the backup does not exist.")
    source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True, timeout=30)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    check_integrity(target)
    return target


def restore(engine: Engine, source: Path) -> Path | None:
    """Replace the SQLite database of ``engine`` by the backup ``source``; returns where its
    old files were set aside (None: there were none).

    The backup is checked first; the database must not be open in another process (stop the
    server). The old database and its ``-wal``/``-shm`` files are renamed together to
    ``<name>.replaced-<time>`` (a log left by a crash is never applied to the backup), then the
    backup is written with SQLite's backup API.

    Raises
    ------
    ConfigError
        When the database is not SQLite (use ``pg_restore``), the backup is missing or damaged,
        or the database is in use.
    """
    target = _require_sqlite(engine, "restore",
                             "pg_restore --clean --if-exists -d DBNAME BACKUP.dump")
    source = source.expanduser().absolute()
    if not source.is_file():
        raise ConfigError(f"no backup at {source}.")
    check_integrity(source)
    if target.exists() and in_use(target):
        raise ConfigError(f"the database {target} is open in another process (a running "
                          f"server?): stop it, then restore.")
    aside = _set_aside(target)
    original = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    restored = sqlite3.connect(target)
    try:
        original.backup(restored)
        restored.execute("PRAGMA journal_mode=WAL")
    finally:
        restored.close()
        original.close()
    check_integrity(target)
    return aside


def _set_aside(path: Path) -> Path | None:
    """Rename ``path`` and its companion files to ``<path>.replaced-<UTC time>[-wal|-shm]``."""
    if not path.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.replaced-{stamp}")
    for suffix in COMPANIONS:
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(aside.with_name(aside.name + suffix))
    path.rename(aside)
    return aside


def _require_sqlite(engine: Engine, what: str, postgres_command: str) -> Path:
    path = sqlite_path(engine.url)
    if path is None:
        raise ConfigError(f"`admin db` can {what} SQLite databases only; for PostgreSQL use "
                          f"`{postgres_command}` (see docs/organizers/operations.md).")
    if what == "back up" and not path.exists():
        raise ConfigError(f"no database at {path}.")
    return path
