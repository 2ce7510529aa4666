"""The board of a phase: each team's best submission and the pinned baselines, as ``BoardRow``s.

A private score leaves the database only here and in a submission's view, and only for a
revealed phase whose scores are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session, defer

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.server._board import Board, BoardRow
from evaluation.server._store_finals import final_candidates
from evaluation.server._store_ranking import BEST_FIRST, PRIVATE_FIRST, as_utc, sort_key
from evaluation.server._store_reveals import scores_shown
from evaluation.server._store_session import Database
from evaluation.server._tables import PhasePublicationRow, PhaseRevealRow, SubmissionRow, TeamRow
from evaluation.server._team_names import folded

#: The reproduction state a hidden board shows for every row.
HIDDEN = "hidden"


@dataclass(frozen=True)
class _Best:
    """A team's best submission of a phase, with the team's count and last time."""

    submission: SubmissionRow
    team: str
    is_baseline: bool
    count: int
    last: datetime


def board(db: Database, phase_name: str | None = None, *, admin: bool = False) -> Board:
    """The board of a phase: each team's best submission, and the baselines, best first.

    Parameters
    ----------
    db : Database
    phase_name : str, optional
        The phase (default: the current one, see ``Competition.current_phase``).
    admin : bool
        Show the public scores of a phase whose scores are hidden.

    Returns
    -------
    Board
        Teams ranked 1, 2, ... (baselines among them, unranked). The scores are hidden when
        the phase is neither public nor revealed (``scores_shown``); then
        the rows are in the order of the team names, without scores or ranks. When the phase
        is revealed (``reveal_phase``), each team's row is its submission with the best
        private score, ranked by it (then by the public score, then the earliest), teams
        without a private score after those with one; the rows show both scores. Before the
        reveal, no private score is in the board.

    Raises
    ------
    SubmissionRejected
        404 when there is no such phase.
    """
    competition = db.require_competition()
    now = db.now()
    phase = (competition.current_phase(now) if phase_name is None
             else competition.phase(phase_name))
    with db.reading() as session:
        revealed = session.get(PhaseRevealRow, phase.name) is not None
        published = session.get(PhasePublicationRow, phase.name) is not None
        best = _best(db, session, phase.name, revealed, phase.final_selections)
    hidden = not scores_shown(phase.public, revealed, published) and not admin
    if hidden:
        # the order alone would tell the ranking
        best.sort(key=lambda b: (b.is_baseline, folded(b.team), b.team))
    rows, place = [], 0
    for b in best:
        if not b.is_baseline and not hidden:
            place += 1
        rows.append(_board_row(b, None if b.is_baseline or hidden else place, hidden,
                               revealed))
    return Board(competition=competition.name, phase=phase.name,
                 phases=tuple(p.name for p in competition.phases), public=phase.public,
                 rows=tuple(rows), generated_at=now, tests=tuple(LEADERBOARD_TESTS),
                 revealed=revealed, published=published)


def revealed_rank(db: Database, phase_name: str, team_id: int) -> int | None:
    """The team's place on a revealed phase's board (by private score); it orders in Python,
    which a revealed phase (closed, rarely uploaded to) can afford."""
    with db.reading() as session:
        name = session.get_one(TeamRow, team_id).name
    ranks = {r.team: r.rank for r in board(db, phase_name).rows if not r.is_baseline}
    return ranks.get(name)


def _best(db: Database, session: Session, phase: str, revealed: bool = False,
          selections: int = 1) -> list[_Best]:
    """Each team's best submission of ``phase``: highest leaderboard score, then phase-1 score,
    then the earliest; with the team's number of submissions and last time.

    ``revealed``: among the team's final selections (its ``selections`` best public ones when
    it marked none, see ``final_candidates``), the highest private score first (submissions
    without one after the others), then the order above."""
    order: tuple = BEST_FIRST
    if revealed:
        candidate = SubmissionRow.id.in_(final_candidates(phase, selections))
        order = (case((candidate, 0), else_=1).asc(), *PRIVATE_FIRST)
    ranked = select(
        SubmissionRow.id.label("sid"),
        func.row_number().over(partition_by=SubmissionRow.team_id, order_by=order).label("n"),
        func.count().over(partition_by=SubmissionRow.team_id).label("count"),
        func.max(SubmissionRow.submitted_at).over(partition_by=SubmissionRow.team_id)
        .label("last"),
    ).where(SubmissionRow.phase == phase).subquery()
    query = (select(SubmissionRow, TeamRow.name, TeamRow.is_baseline, ranked.c.count,
                    ranked.c.last)
             .join(ranked, ranked.c.sid == SubmissionRow.id).join(TeamRow)
             .where(ranked.c.n == 1).options(defer(SubmissionRow.payload)))
    best = [_Best(row, name, bool(baseline), int(count), as_utc(last))
            for row, name, baseline, count, last in session.execute(query)]
    if db.competition is not None:
        # a baseline no longer in the competition file is not shown
        pinned = {b.name for b in db.competition.baselines}
        best = [b for b in best if not b.is_baseline or b.team in pinned]
    best.sort(key=lambda b: sort_key(b.submission, revealed))
    return best


def _board_row(best: _Best, rank: int | None, hidden: bool, revealed: bool = False
               ) -> BoardRow:
    row = best.submission
    # a private score leaves the database only here, and only for a revealed phase whose
    # scores are shown
    private = revealed and not hidden and row.private_leaderboard_score is not None
    # a hidden row names nothing of the best submission: its id, time, flag or reproduction
    # would tell a team which of its submissions scores best on the hidden data
    return BoardRow(
        team=best.team, is_baseline=best.is_baseline,
        submission_id=None if hidden else row.id, rank=rank,
        leaderboard_score=None if hidden else row.leaderboard_score,
        interval=None if hidden else (row.interval_low, row.interval_high),
        phase1_score=None if hidden else row.phase1_score,
        tests=None if hidden else {t: row.tests[t] for t in LEADERBOARD_TESTS if t in row.tests},
        submissions=best.count, best_submitted=None if hidden else row.submitted_at,
        last_submitted=best.last, reproduction=HIDDEN if hidden else row.reproduction,
        flagged=not hidden and bool(row.flagged),
        private_score=row.private_leaderboard_score if private else None,
        private_interval=row.private_interval if private else None,
        private_phase1_score=row.private_phase1_score if private else None)
