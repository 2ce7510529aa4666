"""The queue of an SQLite database's writers, within a process and across the processes of one
machine (``serve --workers``), and the bound on how long a write waits for it.

Every write has a deadline (``WRITE_WAIT_S`` from its start unless the caller set one with
``write_deadline``): the queue, SQLite's busy handler and PostgreSQL's row locks wait until
then at most, and a write still waiting gets ``WriteBusy`` (answered 503 with ``Retry-After``),
well before a client's read timeout. A writer that another process keeps waiting (a
``sqlite3`` shell in a transaction, a PostgreSQL session holding a team's row) so costs its
client a bounded wait, and never a thread for longer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: the thread lock alone
    fcntl = None  # type: ignore[assignment]  # the module's name, None where there is none

from sqlalchemy.engine import URL, Engine

#: Execution option that makes an SQLite transaction a plain (deferred, read-only) ``BEGIN``:
#: such a connection takes no write lock.
READ_ONLY = "evalrs_read_only"
#: Most seconds a write waits for the database's write lock (or a row lock) in all; the
#: upload client's read timeout is 60 s, and it retries a 503 after ``Retry-After``.
WRITE_WAIT_S = 10.0
#: How often a writer polls another process's ``flock`` while it waits (s).
_POLL_S = 0.005

# the monotonic time by which the current write must hold its locks (None: no write)
_DEADLINE: ContextVar[float | None] = ContextVar("evalrs_write_deadline", default=None)


class WriteBusy(Exception):
    """A write did not get the database's write lock (or a row lock) by its deadline."""


@contextmanager
def write_deadline(seconds: float = WRITE_WAIT_S) -> Iterator[None]:
    """Within this block, writes wait ``seconds`` from now at most for their locks (a block
    inside another keeps the earlier deadline)."""
    if _DEADLINE.get() is not None:
        yield
        return
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left() -> float:
    """Seconds left to the current write's deadline (``WRITE_WAIT_S`` outside a write)."""
    deadline = _DEADLINE.get()
    return WRITE_WAIT_S if deadline is None else deadline - time.monotonic()


def _busy(what: str) -> WriteBusy:
    return WriteBusy(f"{what} was not free within the write's {WRITE_WAIT_S:g} s")


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
        if not self._thread.acquire(timeout=max(0.0, time_left())):
            raise _busy("the write queue of this process")
        try:
            if self._fd is None and self._path is not None:
                try:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    self._path = None  # e.g. a read-only folder: the thread lock alone
            if self._fd is not None:
                self._flock()
        except BaseException:
            self._thread.release()
            raise

    def _flock(self) -> None:
        """Take the ``flock`` of the other processes' writers, polling until the deadline
        (a blocking ``flock`` cannot be given a timeout)."""
        assert self._fd is not None
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time_left() <= 0:
                    raise _busy("the write queue of the server's processes") from None
                time.sleep(_POLL_S)

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread.release()

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


class _Bounded:
    """A lock whose holder gets a write deadline (``write_deadline``) unless it has one."""

    def __init__(self, lock: AbstractContextManager | None) -> None:
        self._lock = lock
        self._deadlines: threading.local = threading.local()

    def __enter__(self) -> None:
        stack = getattr(self._deadlines, "stack", None)
        if stack is None:
            stack = self._deadlines.stack = []
        bound = write_deadline()
        bound.__enter__()
        try:
            if self._lock is not None:
                self._lock.__enter__()
        except BaseException as exc:
            bound.__exit__(type(exc), exc, exc.__traceback__)
            raise
        stack.append(bound)

    def __exit__(self, *exc: Any) -> None:
        bound = self._deadlines.stack.pop()
        try:
            if self._lock is not None:
                self._lock.__exit__(*exc)
        finally:
            bound.__exit__(None, None, None)


def write_lock(engine: Engine) -> AbstractContextManager[None]:
    """The lock a writer of ``engine`` holds around its transaction, with a write deadline.

    SQLite has one writer at a time (``BEGIN IMMEDIATE``, which keeps the rules exact across
    processes); a writer that finds the database locked sleeps in SQLite's busy handler, in
    ever longer naps. Writers queue on a ``SQLiteWriteLock`` instead, and each starts as soon
    as the one before has committed. Other databases lock rows themselves: no lock, only the
    deadline (which bounds their lock waits, see ``make_engine``).
    """
    return _Bounded(SQLiteWriteLock(engine.url) if engine.dialect.name == "sqlite" else None)
