"""The store's handle on the database: read sessions, write transactions one at a time, the clock.

Every concern of the store (teams, submissions, the board, reproductions) takes a ``Database``
and opens its sessions through it: ``reading()`` for a read-only session (a plain ``BEGIN`` on
SQLite), ``writing()`` for a write transaction, committed at the end unless it raises.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from evaluation.errors import ConfigError
from evaluation.server.db._lock import READ_ONLY, write_lock

if TYPE_CHECKING:  # the competition module needs pandas; teams and tokens do not
    from evaluation.server.core import Competition

#: Seconds a board request waits at most for its statistics before it answers with the
#: latest reading there is (marked as being updated).
STANDINGS_WAIT_S = 0.05
#: Least seconds between the starts of two computations of the same board, for requests that
#: do not wait (the statistics of a board under a stream of uploads are at most this old, plus
#: the time of one computation). A reading of 200 teams costs ~0.6 s of CPU per process:
#: recomputed every second under a stream of uploads, it would take most of a core.
STANDINGS_MIN_INTERVAL_S = 10.0


def utc_now() -> datetime:
    """The current time, aware, in UTC (the default clock)."""
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """A time as it is shown in messages: ISO 8601 to the second, in UTC, with a Z."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(now: datetime) -> datetime:
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise TypeError(f"the clock must return an aware datetime, got {now!r}")
    return now.astimezone(timezone.utc)


class Database:
    """The database, the competition and the clock that the store's transactions share.

    Parameters
    ----------
    engine : sqlalchemy.engine.Engine
        The database (from ``make_engine``; its schema migrated by ``upgrade``).
    competition : Competition, optional
        The competition; needed for submissions, boards and baselines, not for teams and
        tokens.
    clock : callable, optional
        Returns the current time as an aware datetime (default: the system clock in UTC).

    Attributes
    ----------
    standings_wait : float
        The most seconds a board waits for its paired statistics, computed in the background
        (``STANDINGS_WAIT_S``), when it has none yet or the wait is at least ``FRESH_WAIT_S``.
    standings_interval : float
        The least seconds between two computations of a board's statistics started for
        requests that do not wait (``STANDINGS_MIN_INTERVAL_S``).
    writes : int
        How many write transactions this object has ended (committed or not): the board cache
        of a process answers its own writes at once (see ``BoardCache``).
    """

    standings_wait: float = STANDINGS_WAIT_S
    standings_interval: float = STANDINGS_MIN_INTERVAL_S

    def __init__(self, engine: Engine, competition: Competition | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.engine = engine
        self.competition = competition
        self.clock = clock or utc_now
        self._write = sessionmaker(engine, expire_on_commit=False)
        self.read_engine = engine.execution_options(**{READ_ONLY: True})
        self._read = sessionmaker(self.read_engine, expire_on_commit=False)
        self.write_lock = write_lock(engine)
        self.writes = 0
        self._ended = itertools.count(1)  # next() is atomic: no write is missed by a count

    def reading(self) -> Session:
        """A read-only session (use it in a ``with`` block)."""
        return self._read()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction (committed at the end unless it raises), one at a time in this
        process on SQLite."""
        try:
            with self.write_lock, self._write() as session, session.begin():
                yield session
        finally:
            self.writes = next(self._ended)

    def now(self) -> datetime:
        """The clock's time in UTC."""
        return _utc(self.clock())

    def require_competition(self) -> Competition:
        """The competition; ConfigError when the store was opened without one."""
        if self.competition is None:
            raise ConfigError("this store was opened without a competition file.")
        return self.competition

    def ping(self) -> None:
        """Run a trivial query; raises the driver's error when the database does not answer."""
        with self.reading() as session:
            session.execute(text("SELECT 1")).one()
