"""Boards a server process made, answered again while nothing they show has changed.

An entry is a rendered board (the page, the JSON or the CSV) of one phase, for the public or
for an organizer, with what it was made from, read before the board was made: the database's
board version (``board_version``, raised by every write of any process or tool that changes a
board) and the count of the changes of this process's statistics (``standings_changes``). A
request that finds both unchanged, within ``max_age`` seconds of the entry
(``UPDATING_MAX_AGE_S`` while the statistics are being computed, so that their progress
moves), gets the same answer.

When an entry is out of date, who makes the board anew:

* the request itself, before it answers (the answer is current), when the board changed by a
  write of this process (the version and this process's count of writes,
  ``Database.writes``, both moved: a team sees its own upload at once), when the request asks
  for it (``Cache-Control: no-cache``), when there is no entry, or when the entry has been out
  of date for ``MAX_LAG_S`` already;
* otherwise one background thread per entry, while the requests meanwhile get the entry they
  find: a write of another process or tool, statistics that finished, or an entry grown old
  show on the board within the time one board takes to make (tens of milliseconds at 200
  teams), and no request waits for a board of 200 teams to be made while rows arrive.

Without a version (PostgreSQL) every board is made afresh for each request. A store that makes
requests wait for up-to-date statistics (``standings_wait`` of at least ``FRESH_WAIT_S``, as
tests ask) answers no entry whose statistics are being computed, and nothing out of date.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from evaluation.server.core import Board
from evaluation.server.db import Database, board_version
from evaluation.server.standings import FRESH_WAIT_S, board_with_standings, standings_changes

log = logging.getLogger("evaluation.server")

#: Seconds an entry is answered at most, even when nothing changed (the board's time stays
#: recent).
MAX_AGE_S = 10.0
#: Seconds an entry whose statistics are being computed is answered at most (their progress).
UPDATING_MAX_AGE_S = 2.0
#: Most seconds an out-of-date entry is answered while a background thread makes it anew; a
#: request after that makes the board itself.
MAX_LAG_S = 2.0

_T = TypeVar("_T")
#: (kind, phase, organizer)
_Key = tuple[str, str, bool]
#: (board version, statistics changes)
_State = tuple[int, int]


@dataclass(frozen=True)
class _Entry:
    state: _State
    writes: int  # this process's writes when its board was asked for
    made: float  # time.monotonic() when its board was asked for
    max_age: float
    final: bool  # its statistics are not being computed (``is_final``)
    answer: Any


class BoardCache:
    """The rendered boards of one app (one entry per kind, phase and caller).

    Parameters
    ----------
    store : Database
    max_age : float
        Seconds an entry is answered at most.
    """

    def __init__(self, store: Database, max_age: float = MAX_AGE_S) -> None:
        self.store = store
        self.max_age = max_age
        self._entries: dict[_Key, _Entry] = {}
        self._lock = threading.Lock()
        self._refreshing: dict[_Key, float] = {}  # entry -> when it was found out of date

    def answer(self, kind: str, phase: str | None, admin: bool,
               render: Callable[[Board], _T], fresh: bool = False) -> _T:
        """``render`` of the board of ``phase`` (None: the current one; ``admin``: as an
        organizer sees it), from this cache when the board has not changed since (see the
        module's docstring); ``fresh``: made now if anything changed.

        Raises
        ------
        SubmissionRejected
            404 when there is no such phase.
        """
        # read before the board is made: an entry is never older than its state
        version = board_version(self.store)
        if version is None:
            return render(board_with_standings(self.store, phase, admin=admin))
        state = (version, standings_changes(self.store))
        writes = self.store.writes
        competition = self.store.require_competition()
        name = (competition.current_phase(self.store.now()) if phase is None
                else competition.phase(phase)).name
        key = (kind, name, admin)
        now = time.monotonic()
        found = self._entries.get(key)
        # a store that waits for up-to-date statistics answers no entry still computing them
        waits = self.store.standings_wait >= FRESH_WAIT_S
        if found is not None and waits and not found.final:
            found = None
        if found is not None and found.state == state and now - found.made < found.max_age:
            return found.answer  # stored for `kind` by `_make` (Any: one dict for all kinds)
        # a board changed by this process's own write (both counts moved) is made now
        if (found is not None and not fresh and not waits
                and (found.state[0] == version or found.writes == writes)
                and self._later(key, state, writes, now, render)):
            return found.answer
        return self._make(key, state, writes, now, render)

    def _later(self, key: _Key, state: _State, writes: int, now: float,
               render: Callable[[Board], Any]) -> bool:
        """Whether the out-of-date entry ``key`` may be answered while a background thread
        makes it anew: the thread is started here when there is none, and one that has run
        for ``MAX_LAG_S`` already is waited for no longer."""
        with self._lock:
            since = self._refreshing.get(key)
            if since is not None:
                return now - since < MAX_LAG_S
            self._refreshing[key] = now
        threading.Thread(target=self._refresh, args=(key, state, writes, render),
                         name="board-refresh", daemon=True).start()
        return True

    def _refresh(self, key: _Key, state: _State, writes: int,
                 render: Callable[[Board], Any]) -> None:
        """The background thread: make the entry anew; on failure forget it (the next
        request makes the board itself, and answers the failure)."""
        try:
            self._make(key, state, writes, time.monotonic(), render)
        except Exception:
            log.exception("the board of phase %r could not be made in the background", key[1])
            self._entries.pop(key, None)
        finally:
            with self._lock:
                self._refreshing.pop(key, None)

    def _make(self, key: _Key, state: _State, writes: int, now: float,
              render: Callable[[Board], _T]) -> _T:
        """Make the board, render it and keep the answer."""
        kind, name, admin = key
        board = board_with_standings(self.store, name, admin=admin)
        answer = render(board)
        final = is_final(board)
        self._entries[key] = _Entry(state=state, writes=writes, made=now, answer=answer,
                                    final=final,
                                    max_age=self.max_age if final
                                    else min(self.max_age, UPDATING_MAX_AGE_S))
        return answer


def is_final(board: Board) -> bool:
    """Whether the board's statistics are final for its rows (or it has none): not being
    computed, not unavailable."""
    info = board.standings
    return info is None or not (info.updating or info.unavailable)
