"""The tiers a board would show if a rescore were applied, beside the tiers it shows now.

The board of the phase as it is, and the same board with each team's row its best submission
under the rescore's numbers (rows in that order), both read by the paired statistics: the
rescore's per-user values stand in for the submissions it scored (``pending_values``), every
other submission's are the store's. Computed here, at the organizers' request (``admin
rescore``, ``GET /api/v1/phases/{phase}/rescore``): nothing is kept, nothing the board shows
changes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from evaluation.server.core import Board, BoardRow
from evaluation.server.standings._reading import StoreValues, board_reading
from evaluation.server.store import (
    ComparedUsers,
    RescoreLine,
    RescoreTable,
    UserValues,
    pending_values,
    phase_board,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


class _Pending:
    """The store's values, the rescore's standing in for the submissions it scored."""

    def __init__(self, base: StoreValues, pending: Mapping[int, UserValues], rescore_id: int
                 ) -> None:
        self.base, self.pending, self.rescore_id = base, pending, rescore_id

    def versions(self, phase: str, submission_ids: Sequence[int], private: bool
                 ) -> dict[int, Hashable]:
        """The store's versions, a token of the rescore for the submissions it scored."""
        found = self.base.versions(phase, submission_ids, private)
        for sid in submission_ids:
            if sid in self.pending and not private:
                found[sid] = ("rescore", self.rescore_id, sid)
        return found

    def values(self, phase: str, submission_ids: Sequence[int], private: bool
               ) -> Mapping[int, UserValues]:
        """The store's values, the rescore's for the submissions it scored."""
        theirs = [] if private else [sid for sid in submission_ids if sid in self.pending]
        found = dict(self.base.values(
            phase, [sid for sid in submission_ids if sid not in theirs], private))
        found.update({sid: self.pending[sid] for sid in theirs})
        return found

    def users(self, phase: str, private: bool) -> ComparedUsers | None:
        """The users the board compares now (a rescore scores the same users)."""
        return self.base.users(phase, private)


def with_tiers(db: Database, table: RescoreTable) -> RescoreTable:
    """``table`` with each line's team's tier now and once the rescore is applied (unchanged
    when the rescore is applied or cancelled, or the board has no statistics)."""
    if table.state not in ("running", "ready"):
        return table
    board = phase_board(db, table.phase, admin=True)
    source = StoreValues(db)
    now = board_reading(db, board, source)
    after = board_reading(db, _rescored(board, table.lines),
                          _Pending(source, pending_values(db, table.rescore_id),
                                   table.rescore_id))
    if now is None or after is None:
        return table

    def tier(reading, team: str) -> int | None:
        standing = reading.rows.get(team)
        return None if standing is None else standing.tier

    return replace(table, lines=tuple(
        replace(line, old_tier=tier(now, line.team), new_tier=tier(after, line.team))
        for line in table.lines))


def _rescored(board: Board, lines: Sequence[RescoreLine]) -> Board:
    """``board`` with each team's row its best submission under the rescore's numbers (the
    board's order: score, then phase-1 score, highest first; then the lowest id), the computed
    rows in that order."""
    best: dict[str, RescoreLine] = {}
    for line in lines:
        if line.team not in best or _key(line) < _key(best[line.team]):
            best[line.team] = line
    rows = []
    for row in board.rows:
        found = best.get(row.team)
        if found is not None and row.computed and not row.is_baseline:
            row = replace(row, submission_id=found.submission_id,
                          leaderboard_score=_new(found)[0], phase1_score=_new(found)[1])
        rows.append(row)
    computed = sorted((r for r in rows if r.computed), key=_order)
    teams = [r for r in computed if not r.is_baseline]
    ranks = {r.team: place for place, r in enumerate(teams, start=1)}
    ordered = [replace(r, rank=ranks.get(r.team)) if not r.is_baseline else r
               for r in computed] + [r for r in rows if not r.computed]
    return replace(board, rows=tuple(ordered))


def _new(line: RescoreLine) -> tuple[float | None, float | None]:
    """A line's numbers once applied: the new ones where scored, else the old ones."""
    if line.new_score is None:
        return line.old_score, line.old_phase1_score
    return line.new_score, line.new_phase1_score


def _key(line: RescoreLine) -> tuple:
    score, phase1 = _new(line)
    return (-(score if score is not None else float("-inf")),
            -(phase1 if phase1 is not None else float("-inf")), line.submission_id)


def _order(row: BoardRow) -> tuple:
    score, phase1 = row.leaderboard_score, row.phase1_score
    return (-(score if score is not None else float("-inf")),
            -(phase1 if phase1 is not None else float("-inf")))
