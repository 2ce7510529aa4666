"""The queue of an SQLite database's writers, within a process and across the processes of one
machine (``serve --workers``)."""

from __future__ import annotations

import os
import threading
from contextlib import AbstractContextManager, nullcontext

try:
    import fcntl
except ImportError:  # not POSIX: the thread lock alone
    fcntl = None  # type: ignore[assignment]

from sqlalchemy.engine import URL, Engine


class SQLiteWriteLock:
    """The queue of an SQLite database's writers: a thread lock, and an ``flock`` on the file
    ``<database>-writer.lock`` for the writers of other processes (``serve --workers``).

    Only an addition: ``BEGIN IMMEDIATE`` still makes the transactions exact, whatever holds
    this lock or not (another program, a database the lock file cannot be created for). The
    lock only spares the writers SQLite's busy handler, which polls with sleeps of up to
    100 ms, so that the next writer starts as soon as the last one has committed. The kernel
    releases an ``flock`` when its process dies. SQLite's write-ahead log needs every process
    on one machine, so a lock of that machine is enough.
    """

    def __init__(self, url: URL) -> None:
        self._thread = threading.Lock()
        database = url.database or ""
        plain_file = (fcntl is not None and database not in ("", ":memory:")
                      and not database.startswith("file:") and not url.query.get("uri"))
        self._path = f"{database}-writer.lock" if plain_file else None
        self._fd: int | None = None

    def __enter__(self) -> None:
        self._thread.acquire()
        try:
            if self._fd is None and self._path is not None:
                try:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    self._path = None  # e.g. a read-only folder: the thread lock alone
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread.release()

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def write_lock(engine: Engine) -> AbstractContextManager[None]:
    """The lock a writer of ``engine`` holds around its transaction.

    SQLite has one writer at a time (``BEGIN IMMEDIATE``, which keeps the rules exact across
    processes); a writer that finds the database locked sleeps in SQLite's busy handler, in
    ever longer naps. Writers queue on a ``SQLiteWriteLock`` instead, and each starts as soon
    as the one before has committed. Other databases lock rows themselves: no lock.
    """
    return SQLiteWriteLock(engine.url) if engine.dialect.name == "sqlite" else nullcontext()
