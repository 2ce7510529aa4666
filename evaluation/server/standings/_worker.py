"""The board's statistics computed off the request path: one background thread per store.

A board request never computes the statistics: it asks this store's worker for the reading of
its board (a ``Target``: the rows, the versions of their per-user values). The worker (a daemon
thread, started on first need) computes the newest target of each board, team by team, and
keeps the latest complete reading of each board (``Kept``), which the requests show, up to date
or not. A computation that fails is logged and kept as the reason (``Failed``), shown until the
board changes or ``RETRY_AFTER_S`` pass.

When a request waits, and when the computation starts:

* a request waits for the reading of its own board (at most its bound, ``wait``) only when its
  board has no reading yet, or when the bound is ``FRESH_WAIT_S`` or more (a caller that asks
  for up-to-date statistics, as the tests do); otherwise it answers at once with the latest
  reading, marked as being updated;
* a request that waits has its reading started at once; any other starts at most once per
  ``Target.interval`` seconds after the previous start of the same board
  (``STANDINGS_MIN_INTERVAL_S`` by default): uploads that arrive meanwhile are coalesced, and
  only the newest board asked for is computed.

The thread holds its worker through a weak reference between targets and leaves when the
store is gone, when it is stopped (``stop_standings``, at the app's shutdown) or after
``IDLE_EXIT_S`` without work; the next target starts a new one.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from evaluation.server.db import STANDINGS_MIN_INTERVAL_S, scrub

if TYPE_CHECKING:  # the statistics need NumPy; the store's light commands do not
    from evaluation.server.core import Board
    from evaluation.server.db import Database
    from evaluation.server.standings._reading import Reading, ValuesSource
    from evaluation.server.store import ComparedUsers

log = logging.getLogger("evaluation.server")

#: A wait of at least this many seconds asks for the up-to-date statistics: the request waits
#: for them even when a previous reading could be shown, and their computation starts at once.
FRESH_WAIT_S = 1.0
#: Seconds the thread waits for work before it looks whether its store is still there.
POLL_S = 1.0
#: Seconds without work after which the thread leaves (the next target starts another).
IDLE_EXIT_S = 60.0
#: Seconds a failed computation is shown before the same board is computed again.
RETRY_AFTER_S = 60.0
#: Most characters of a failure's reason shown.
MAX_REASON = 200
#: How much lower than the process's the statistics thread's scheduling priority is (its
#: nice value, Linux): the board's requests, in this process or another, get a core first.
BACKGROUND_NICE = 10

#: A board's key: its phase and whether it is revealed (then ranked by private scores).
Key = tuple[str, bool]


@dataclass(frozen=True)
class Target:
    """A board whose reading is wanted: its rows, and what the reading depends on.

    ``inputs``: team -> (submission id, values version, score) for the rows with values;
    ``signature``: all that the reading depends on (two targets with the same one have the
    same reading); ``users``: the test users compared; ``interval``: the least seconds
    since the previous computation of the same board before this one starts, unless a request
    waits for it.
    """

    key: Key
    signature: Hashable
    board: Board
    versions: Mapping[int, Hashable]
    inputs: Mapping[str, tuple]
    source: ValuesSource
    users: ComparedUsers | None = None
    interval: float = STANDINGS_MIN_INTERVAL_S


@dataclass(frozen=True)
class Kept:
    """The latest complete reading of a board, and the target it was computed for."""

    signature: Hashable
    inputs: Mapping[str, tuple]
    reading: Reading
    as_of: datetime


@dataclass(frozen=True)
class Failed:
    """A computation that raised: for which target, why, and when (``time.monotonic``)."""

    signature: Hashable
    reason: str
    at: float


@dataclass(frozen=True)
class Latest:
    """What a request may show: the latest reading, the failure of its own target (if its
    computation failed), and the progress of the computation under way."""

    kept: Kept | None
    failed: Failed | None
    progress: tuple[int, int] | None


class _Stopped(Exception):
    """Raised inside a computation when its worker is stopped."""


class StandingsWorker:
    """The background computation of one store's boards' statistics.

    Parameters
    ----------
    db : Database
        Held weakly: the worker never keeps its store alive.
    compute : callable
        ``compute(db, target, progress) -> Reading`` (``progress(done, total)`` after each
        team; it raises to stop).
    """

    def __init__(self, db: Database,
                 compute: Callable[[Database, Target, Callable[[int, int], None]], Reading]
                 ) -> None:
        self._db = weakref.ref(db)
        self._compute = compute
        self._cond = threading.Condition()
        self._pending: dict[Key, Target] = {}
        self._due: dict[Key, float] = {}  # when each pending target may start (monotonic)
        self._started: dict[Key, float] = {}  # when each board's last computation started
        self._running: dict[Key, Hashable] = {}
        self._progress: dict[Key, tuple[int, int]] = {}
        self._kept: dict[Key, Kept] = {}
        self._failed: dict[Key, Failed] = {}
        self._restored: set[Key] = set()  # boards whose kept reading was looked for
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._last_work = time.monotonic()
        #: Raised whenever a reading is kept, restored or fails, or a computation ends: equal
        #: counts mean that every board's statistics are shown as they were (but progress).
        self.changes = 0

    def latest(self, target: Target, wait: float) -> Latest:
        """The latest reading of ``target``'s board, after waiting at most ``wait`` seconds
        for the reading of ``target`` itself (computed by the thread, asked for here) when the
        board has no reading yet or ``wait`` is at least ``FRESH_WAIT_S`` (see the module's
        docstring)."""
        with self._cond:
            if not self._current(target):
                waits = target.key not in self._kept or wait >= FRESH_WAIT_S
                self._ask(target, now=waits)
                if waits:
                    self._cond.wait_for(lambda: self._current(target),
                                        timeout=max(wait, 0.0))
            failed = self._failed.get(target.key)
            return Latest(kept=self._kept.get(target.key),
                          failed=failed if self._is_failure_of(failed, target) else None,
                          progress=self._progress.get(target.key))

    def restore(self, key: Key, load: Callable[[], Kept | None]) -> None:
        """Before the first reading of a board in this process: keep the one ``load`` gives
        (the last one computed, kept in the database), if any; looked for once per board,
        under the lock (a request meanwhile waits for it rather than for a computation)."""
        with self._cond:
            if key in self._kept or key in self._restored:
                return
            self._restored.add(key)
            kept = load()
            if kept is not None and key not in self._kept:
                self._kept[key] = kept
                self.changes += 1
                self._cond.notify_all()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (after the team it is computing) and wait for it at most
        ``timeout`` seconds; a later target starts a new one."""
        with self._cond:
            self._stopped = True
            self._pending.clear()
            self._due.clear()
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _current(self, target: Target) -> bool:
        """Whether the kept reading (or a recent failure) is that of ``target``."""
        kept = self._kept.get(target.key)
        return ((kept is not None and kept.signature == target.signature)
                or self._is_failure_of(self._failed.get(target.key), target))

    @staticmethod
    def _is_failure_of(failed: Failed | None, target: Target) -> bool:
        return (failed is not None and failed.signature == target.signature
                and time.monotonic() - failed.at < RETRY_AFTER_S)

    def _ask(self, target: Target, now: bool) -> None:
        """Make ``target`` the next computation of its board (unless it is under way), to
        start at once (``now``) or ``target.interval`` after the board's previous start."""
        key = target.key
        if self._running.get(key) != target.signature:
            self._pending[key] = target  # a newer board replaces an older one
            due = 0.0 if now else self._started.get(key, -target.interval) + target.interval
            self._due[key] = min(due, self._due.get(key, due))  # an earlier ask keeps its turn
        else:
            self._pending.pop(key, None)  # under way: nothing older after it
            self._due.pop(key, None)
        if self._thread is None or not self._thread.is_alive():
            self._stopped = False
            self._last_work = time.monotonic()
            self._thread = threading.Thread(target=_run, args=(weakref.ref(self),),
                                            name="board-statistics", daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def _next(self) -> Target | None:
        """The next target due to start, waiting ``POLL_S`` at most (or until the first
        pending target is due); None when none is due.

        Marks the thread gone (under the lock, so that a target asked for meanwhile starts
        another) when it is stopped or idle for ``IDLE_EXIT_S``."""
        with self._cond:
            if not self._stopped and self._due_key() is None:
                first = min(self._due.values(), default=None)
                self._cond.wait(POLL_S if first is None else
                                min(POLL_S, max(first - time.monotonic(), 0.0)))
            idle = time.monotonic() - self._last_work
            if self._stopped or (not self._pending and idle > IDLE_EXIT_S):
                self._thread = None
                raise _Stopped
            key = self._due_key()
            if key is None:
                return None
            target = self._pending.pop(key)
            self._due.pop(key, None)
            self._running[key] = target.signature
            self._progress.pop(key, None)
            self._last_work = self._started[key] = time.monotonic()
            return target

    def _due_key(self) -> Key | None:
        """A board whose pending target may start now (the one due first), or None."""
        now = time.monotonic()
        due = [(when, i, key) for i, (key, when) in enumerate(self._due.items()) if when <= now]
        return min(due)[2] if due else None

    def _work(self, target: Target) -> None:
        """Compute ``target``'s reading and keep it (or why it failed)."""
        db = self._db()
        if db is None:
            return
        try:
            reading = self._compute(db, target, lambda done, total: self._advance(
                target.key, done, total))
        except _Stopped:
            raise
        except Exception as exc:  # any failure is shown, not lost
            log.exception("the board's statistics of phase %r could not be computed",
                          target.key[0])
            reason = scrub(_reason(exc), db.engine.url)  # never a database password
            self._finish(target, failed=Failed(target.signature, reason, time.monotonic()))
        except BaseException:
            self._abandon(target)  # the next request asks for it again
            raise
        else:
            self._finish(target, kept=Kept(target.signature, target.inputs, reading,
                                           target.board.generated_at))

    def _advance(self, key: Key, done: int, total: int) -> None:
        """Show the progress to the requests; stop here when the worker is stopped."""
        with self._cond:
            if self._stopped:
                raise _Stopped
            self._progress[key] = (done, total)

    def _finish(self, target: Target, kept: Kept | None = None,
                failed: Failed | None = None) -> None:
        with self._cond:
            self._running.pop(target.key, None)
            self._progress.pop(target.key, None)
            if kept is not None:
                self._kept[target.key] = kept
                self._failed.pop(target.key, None)
            if failed is not None:
                self._failed[target.key] = failed
            self.changes += 1
            self._cond.notify_all()

    def _abandon(self, target: Target) -> None:
        with self._cond:
            self._running.pop(target.key, None)
            self._progress.pop(target.key, None)
            self.changes += 1
            self._cond.notify_all()


def _run(ref: weakref.ref[StandingsWorker]) -> None:
    """The thread: compute the targets asked for, holding the worker only while it works."""
    _yield_to_requests()
    while True:
        worker = ref()
        if worker is None:
            return  # the store is gone
        try:
            target = worker._next()
            if target is not None:
                try:
                    worker._work(target)
                except _Stopped:
                    worker._abandon(target)
                    raise
        except _Stopped:
            return
        del worker, target


def _yield_to_requests() -> None:
    """Lower the calling thread's priority by ``BACKGROUND_NICE`` (Linux, where a thread has a
    nice value of its own, which the threads it starts inherit); elsewhere nothing.

    A new trusted row makes the statistics thread compute for about a second at full scale
    while requests keep coming: on a busy machine, they would otherwise wait for a core.
    """
    if sys.platform != "linux":
        return  # elsewhere PRIO_PROCESS names processes, not threads: the whole server
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid,
                       min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
    except OSError:  # not allowed here: the thread runs at the process's priority
        log.debug("the board's statistics thread keeps the process's priority")


def _reason(exc: BaseException) -> str:
    """A failure as the board shows it: its kind and its first line, bounded."""
    first = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return "statistics unavailable: " + text[:MAX_REASON]


_WORKERS: weakref.WeakKeyDictionary[Database, StandingsWorker] = weakref.WeakKeyDictionary()
_WORKERS_LOCK = threading.Lock()


def worker_of(db: Database,
              compute: Callable[[Database, Target, Callable[[int, int], None]], Reading]
              ) -> StandingsWorker:
    """The statistics worker of a store (one per store object, made on first need)."""
    with _WORKERS_LOCK:
        found = _WORKERS.get(db)
        if found is None:
            found = _WORKERS[db] = StandingsWorker(db, compute)
        return found


def standings_changes(db: Database) -> int:
    """How often the statistics a board of this store shows have changed in this process
    (``StandingsWorker.changes``; 0 before its worker is made): a board made when the count was
    the same shows them as they are now, but for the progress of a computation under way."""
    with _WORKERS_LOCK:
        found = _WORKERS.get(db)
    return 0 if found is None else found.changes


def stop_standings(db: Database) -> None:
    """Stop the statistics thread of a store, if it has one (at the app's shutdown)."""
    with _WORKERS_LOCK:
        found = _WORKERS.get(db)
    if found is not None:
        found.stop()
