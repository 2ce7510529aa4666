"""What a board request shows of the paired statistics: the latest reading, never computed here.

A request reads which rows have per-user values and their versions (one cheap query), asks the
store's worker (``_worker``) for the reading of that board and waits for it at most
the store's ``standings_wait`` when the board has no reading yet (or the wait asks for
up-to-date statistics, ``FRESH_WAIT_S``); the worker starts a board's computations at most once
per the store's ``standings_interval`` for the requests that do not wait. Then it answers with
the latest complete reading there is:

* up to date (computed for these rows): the statistics as computed;
* stale (computed for an earlier board): ``Board.standings`` says they are being updated and
  as of when; a row shows its statistics only when its submission, values and score are those
  the reading was computed from, any other row is "being computed" (no tier, no interval),
  never a tier of another submission;
* none yet: no team compared, the same note.

After a restart, the board's first request reads the last reading computed of it (kept in the
database with its teams' replicates after each computation, ``save_snapshot``): shown as up to
date when nothing changed since, else as stale (being updated, as of its time) until it is
computed again; its teams' replicates are not computed again.

A board none of whose rows has per-user values has nothing to compute: its (empty) reading is
made here. A hidden board gets none of it, and nothing is asked of the worker for it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from evaluation.server.core import (
    Board,
    BoardRow,
    BoardStandings,
    RowStanding,
    TeamStanding,
    references_sha256,
)
from evaluation.server.db import STANDINGS_MIN_INTERVAL_S
from evaluation.server.standings._costs import tiers_by_cost
from evaluation.server.standings._reading import (
    NO_VALUES,
    Reading,
    StoreValues,
    ValuesSource,
    cache_of,
    compared_rows,
    compute_reading,
    empty_standings,
    is_hidden,
    left_out,
    row_inputs,
    unvalued_reading,
    with_pairwise,
)
from evaluation.server.standings._snapshot import (
    SnapshotUnreadable,
    decode_snapshot,
    encode_snapshot,
)
from evaluation.server.standings._worker import Kept, Key, Latest, Target, worker_of
from evaluation.server.store import Snapshot, load_snapshot, phase_board, save_snapshot

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

log = logging.getLogger("evaluation.server")

#: Whose values a row shows while its statistics are being computed.
NOT_READ = "not read yet"


def board_with_standings(db: Database, phase_name: str | None = None, *,
                         admin: bool = False) -> Board:
    """The board of a phase (``phase_board``) with its paired statistics, the latest computed
    in the background (``board_now``): waits ``db.standings_wait`` seconds at most for them
    (when it waits: see ``FRESH_WAIT_S``)."""
    return board_now(db, phase_board(db, phase_name, admin=admin), StoreValues(db),
                     db.standings_wait, db.standings_interval)


def standing_of(db: Database, team: str, phase_name: str | None = None, *,
                admin: bool = False) -> TeamStanding | None:
    """A team's page: its row, win probabilities and place on the Pareto front (``team_now``,
    from the latest statistics as ``board_with_standings`` shows them); None when the team is
    not on the board."""
    return team_now(db, phase_board(db, phase_name, admin=admin), team, StoreValues(db),
                    db.standings_wait, db.standings_interval)


def board_now(db: Database, board: Board, source: ValuesSource, wait: float,
              interval: float = STANDINGS_MIN_INTERVAL_S) -> Board:
    """``board`` with the latest statistics of its rows (see the module's docstring).

    Parameters
    ----------
    db : Database
    board : Board
        A board of the store, rows in the official order.
    source : ValuesSource
    wait : float
        Most seconds to wait for the statistics of this very board (only when the board has
        none yet, or when it is at least ``FRESH_WAIT_S``).
    interval : float
        Least seconds between the starts of two computations of this board, when the request
        does not wait.

    Returns
    -------
    Board
        Unchanged when its scores are hidden.
    """
    return _now(db, board, source, wait, interval)[0]


def team_now(db: Database, board: Board, team: str, source: ValuesSource, wait: float,
             interval: float = STANDINGS_MIN_INTERVAL_S) -> TeamStanding | None:
    """A team's page from the latest statistics of ``board`` (``board_now``): its win
    probabilities and the Pareto front among the teams whose statistics are current; None when
    the team has no row on the board."""
    full, kept, current = _now(db, board, source, wait, interval)
    row = next((r for r in full.rows if r.team == team), None)
    if row is None:
        return None
    base = TeamStanding(competition=board.competition, phase=board.phase, team=team, row=row,
                        standings=full.standings)
    if kept is None:
        return base
    return with_pairwise(base, kept.reading, board, shown=current)


def _now(db: Database, board: Board, source: ValuesSource, wait: float, interval: float
         ) -> tuple[Board, Kept | None, frozenset[str]]:
    """The board with its statistics, the reading they come from and the teams whose
    statistics in it are current."""
    if is_hidden(board):
        return board, None, frozenset()  # nothing may depend on the scores
    rows = compared_rows(board)
    versions = source.versions(board.phase, [r.submission_id for r in rows
                                             if r.submission_id is not None], board.revealed)
    inputs = row_inputs(board, versions)
    if not inputs:  # nothing to compute
        reading = unvalued_reading(db, board, source.users(board.phase, board.revealed))
        return (_with(board, reading.rows, replace(reading.standings,
                                                   as_of=board.generated_at)),
                None, frozenset())
    target = replace(_target(db, board, source, versions, inputs), interval=interval)
    worker = worker_of(db, _compute)
    worker.restore(target.key, lambda: _restored(db, target.key))
    latest = worker.latest(target, wait)
    return _shown(db, board, target, latest)


def _target(db: Database, board: Board, source: ValuesSource,
            versions: Mapping[int, Hashable], inputs: Mapping[str, tuple]) -> Target:
    """The board's reading asked for: everything the reading depends on, in its signature."""
    competition = db.require_competition()
    phase = competition.phase(board.phase)
    settings = competition.board
    key = (board.phase, board.revealed)
    users = source.users(board.phase, board.revealed)
    rows = tuple((row.team, row.submission_id, inputs.get(row.team))
                 for row in compared_rows(board))
    parts = (key, rows, settings, settings.for_phase(phase.min_difference),
             references_sha256(phase.references), users)
    # a digest: the same in every process, so that a reading kept in the database is known
    # current after a restart (every part has a repr that is its value)
    signature = hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()
    return Target(key=key, signature=signature, board=board, versions=dict(versions),
                  inputs=dict(inputs), source=source, users=users)


def _compute(db: Database, target: Target, progress: Callable[[int, int], None]) -> Reading:
    """The worker's computation of a target (in its thread), kept in the database for a
    restart."""
    reading = compute_reading(db, target.board, target.source, target.versions, target.users,
                              progress)
    _keep(db, target, reading)
    return reading


def _keep(db: Database, target: Target, reading: Reading) -> None:
    """Write ``reading`` and its teams' replicates to the database (``save_snapshot``); a
    failure is logged: the reading is shown all the same."""
    cache = cache_of(db)
    with cache.lock:
        teams = {key: cache.teams[key] for key in reading.team_keys.values()
                 if key in cache.teams}
    try:
        payload = encode_snapshot(reading, target.inputs, teams)
        save_snapshot(db, target.key[0], target.key[1],
                      Snapshot(signature=str(target.signature), payload=payload,
                               computed_at=target.board.generated_at))
    except Exception:  # the statistics stand without their copy in the database
        log.exception("the board's statistics of phase %r could not be kept for a restart",
                      target.key[0])


def _restored(db: Database, key: Key) -> Kept | None:
    """The board's last reading kept in the database (its teams' statistics kept again in
    this process), or None when there is none or it cannot be read."""
    try:
        snapshot = load_snapshot(db, key[0], key[1])
        if snapshot is None:
            return None
        reading, inputs, teams = decode_snapshot(snapshot.payload)
    except SnapshotUnreadable as exc:
        log.warning("the board's statistics kept for phase %r are not read: %s", key[0], exc)
        return None
    except Exception:  # the board is computed afresh, as without a kept reading
        log.exception("the board's statistics kept for phase %r could not be read", key[0])
        return None
    cache = cache_of(db)
    with cache.lock:
        for team_key, stats in teams.items():
            if team_key not in cache.teams:
                cache.keep(team_key, stats)
    return Kept(signature=snapshot.signature, inputs=inputs, reading=reading,
                as_of=snapshot.computed_at)


def _shown(db: Database, board: Board, target: Target, latest: Latest
           ) -> tuple[Board, Kept | None, frozenset[str]]:
    """The board with what ``latest`` may show of it."""
    kept = latest.kept
    if kept is not None and kept.signature == target.signature:
        standings = replace(kept.reading.standings, as_of=kept.as_of)
        return _with(board, kept.reading.rows, standings), kept, frozenset(kept.reading.teams)
    reason = None if latest.failed is None else latest.failed.reason
    current = frozenset(team for team, made in target.inputs.items()
                        if kept is not None and kept.inputs.get(team) == made)
    rows: dict[str, RowStanding] = {}
    for row in compared_rows(board):
        if row.team not in target.inputs:
            rows[row.team] = RowStanding(values="missing", left_out=NO_VALUES)
        elif kept is not None and row.team in current:
            rows[row.team] = kept.reading.rows[row.team]
        elif reason is not None:
            rows[row.team] = RowStanding(values=NOT_READ, left_out=reason)
        else:
            rows[row.team] = RowStanding(values=NOT_READ, being_computed=True)
    base = empty_standings(db, board, target.users) if kept is None else replace(
        kept.reading.standings, as_of=kept.as_of)
    standings = replace(base, updating=reason is None, unavailable=reason,
                        progress=None if reason is not None else latest.progress)
    return _with(board, rows, standings), kept, current


def _with(board: Board, standing: Mapping[str, RowStanding], standings: BoardStandings
          ) -> Board:
    """``board`` with each row's standing (its own, or why it cannot be compared)."""
    def of(row: BoardRow) -> RowStanding | None:
        return standing.get(row.team, left_out(row, board))

    return tiers_by_cost(replace(board, rows=tuple(replace(row, standing=of(row))
                                                   for row in board.rows),
                                 standings=standings))
