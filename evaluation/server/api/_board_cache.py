"""Boards a server process made, answered again while nothing they show has changed.

An entry is a rendered board (the page, the JSON or the CSV) of one phase, for the public or
for an organizer, with the database's board version (``board_version``) read before the board
was made: a request that reads the same version gets the same answer, whichever process wrote
last. An entry is also made afresh after ``MAX_AGE_S`` seconds (the board's time stays recent).
Without a version (PostgreSQL) every board is made afresh. A board whose statistics are still
being computed (or could not be) is never kept: the next request asks for them again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from evaluation.server.core import Board
from evaluation.server.db import Database, board_version
from evaluation.server.standings import board_with_standings

#: Seconds an entry is answered at most, even when nothing changed.
MAX_AGE_S = 10.0

_T = TypeVar("_T")


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
        self._entries: dict[tuple[str, str, bool], tuple[int, float, object]] = {}

    def answer(self, kind: str, phase: str | None, admin: bool,
               render: Callable[[Board], _T]) -> _T:
        """``render`` of the board of ``phase`` (None: the current one; ``admin``: as an
        organizer sees it), from this cache when the board has not changed since.

        Raises
        ------
        SubmissionRejected
            404 when there is no such phase.
        """
        # read before the board is made: an entry is never older than its version
        version = board_version(self.store)
        if version is None:
            return render(board_with_standings(self.store, phase, admin=admin))
        competition = self.store.require_competition()
        name = (competition.current_phase(self.store.now()) if phase is None
                else competition.phase(phase)).name
        key = (kind, name, admin)
        found = self._entries.get(key)
        now = time.monotonic()
        if found is not None and found[0] == version and now - found[1] < self.max_age:
            return found[2]  # type: ignore[return-value]  # stored by this method for `kind`
        board = board_with_standings(self.store, name, admin=admin)
        answer = render(board)
        if is_final(board):
            self._entries[key] = (version, now, answer)
        else:
            self._entries.pop(key, None)
        return answer


def is_final(board: Board) -> bool:
    """Whether the board's statistics are final for its rows (or it has none): not being
    computed, not unavailable."""
    info = board.standings
    return info is None or not (info.updating or info.unavailable)
