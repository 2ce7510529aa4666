"""The board of a phase: each team's best submission and the pinned baselines, as ``BoardRow``s.

A private score leaves the database only here and in a submission's view, and only for a
revealed phase whose scores are shown; so does a final selection's fact sheet (to others than
its team and the organizers).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, Select, Subquery, and_, case, func, or_, select
from sqlalchemy.orm import Session

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.contract import folded
from evaluation.server.core import Board, BoardRow, FactSheet
from evaluation.server.db import (
    BEST_FIRST,
    PRIVATE_FIRST,
    PhasePublicationRow,
    PhaseRevealRow,
    SubmissionRow,
    TeamRow,
    as_utc,
    scores_shown,
    sort_key,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: The reproduction state a hidden board shows for every row.
HIDDEN = "hidden"


#: What a board row shows of a submission (never its body: SQLite would read all of it).
_SHOWN = (SubmissionRow.id, SubmissionRow.leaderboard_score, SubmissionRow.phase1_score,
          SubmissionRow.interval_low, SubmissionRow.interval_high, SubmissionRow.tests,
          SubmissionRow.submitted_at, SubmissionRow.reproduction, SubmissionRow.flagged,
          SubmissionRow.private_phase1_score, SubmissionRow.private_leaderboard_score,
          SubmissionRow.private_interval_low, SubmissionRow.private_interval_high,
          SubmissionRow.computed, SubmissionRow.carried_phase, SubmissionRow.fact_description,
          SubmissionRow.fact_code_url, SubmissionRow.fact_commit, SubmissionRow.harness_version,
          SubmissionRow.previous_harness_version, SubmissionRow.previous_leaderboard_score,
          SubmissionRow.previous_phase1_score)


@dataclass(frozen=True)
class _Best:
    """A team's best submission of a phase (``_SHOWN`` of it; None on a hidden board, which
    shows nothing of it), with the team's count and last time."""

    submission: Row[Any] | None
    team: str
    is_baseline: bool
    count: int
    last: datetime


def phase_board(db: Database, phase_name: str | None = None, *, admin: bool = False) -> Board:
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
        hidden = not scores_shown(phase.public, revealed, published) and not admin
        # a hidden board does not even look for each team's best submission: nothing in it,
        # its order and the time it takes included, can depend on a score
        best = (_teams(db, session, phase.name) if hidden
                else _best(db, session, phase.name, revealed, phase.final_selections))
    if hidden:
        # the order alone would tell the ranking
        best.sort(key=lambda b: (b.is_baseline, folded(b.team), b.team))
    rows, place = [], 0
    for b in best:
        # a claim (scores the organizers did not compute) has no place: it is shown apart
        ranked = not b.is_baseline and not hidden and b.submission is not None \
            and bool(b.submission.computed)
        if ranked:
            place += 1
        rows.append(_board_row(b, place if ranked else None, hidden, revealed,
                               facts=revealed or admin))
    return Board(competition=competition.name, phase=phase.name,
                 phases=tuple(p.name for p in competition.phases), public=phase.public,
                 rows=tuple(rows), generated_at=now, tests=tuple(LEADERBOARD_TESTS),
                 revealed=revealed, published=published)


def final_candidates(phase: str, selections: int) -> Select:
    """The ids of the submissions of ``phase`` that its private ranking may use: each team's
    final selections, or, for a team that marked none, its ``selections`` best public ones."""
    inner = select(
        SubmissionRow.id.label("sid"), SubmissionRow.final_at.label("final_at"),
        func.row_number().over(partition_by=SubmissionRow.team_id, order_by=BEST_FIRST)
        .label("place"),
        func.count(SubmissionRow.final_at).over(partition_by=SubmissionRow.team_id)
        .label("finals"),
    ).where(SubmissionRow.phase == phase).subquery()
    return select(inner.c.sid).where(or_(
        inner.c.final_at.is_not(None), and_(inner.c.finals == 0, inner.c.place <= selections)))


def fact_sheet_of(row: SubmissionRow) -> FactSheet | None:
    """The fact sheet stored with a submission (None: none given)."""
    if row.fact_description is None:
        return None
    return FactSheet(description=row.fact_description, code_url=row.fact_code_url or "",
                     commit=row.fact_commit or "")


def revealed_rank(db: Database, phase_name: str, team_id: int) -> int | None:
    """The team's place on a revealed phase's board (by private score); it orders in Python,
    which a revealed phase (closed, rarely uploaded to) can afford."""
    with db.reading() as session:
        name = session.get_one(TeamRow, team_id).name
    ranks = {r.team: r.rank for r in phase_board(db, phase_name).rows if not r.is_baseline}
    return ranks.get(name)


def _best(db: Database, session: Session, phase: str, revealed: bool = False,
          selections: int = 1) -> list[_Best]:
    """Each team's best submission of ``phase``: highest leaderboard score, then phase-1 score,
    then the earliest; with the team's number of submissions and last time.

    ``revealed``: among the team's final selections (its ``selections`` best public ones when
    it marked none, see ``final_candidates``), the highest private score first (submissions
    without one after the others), then the order above."""
    query = _revealed_query(phase, selections) if revealed else _public_query(phase)
    best = [_Best(row, row.team, bool(row.is_baseline), int(row.n_submissions),
                  as_utc(row.last))
            for row in session.execute(query)]
    best = _pinned_only(db, best)
    best.sort(key=lambda b: sort_key(b.submission, revealed))
    return best


def _teams(db: Database, session: Session, phase: str) -> list[_Best]:
    """Each team of ``phase`` with its number of submissions and last time, and none of its
    submissions: what a hidden board shows."""
    stats = _team_stats(phase)
    query = select(TeamRow.name, TeamRow.is_baseline, stats.c.count, stats.c.last).join(
        stats, stats.c.team_id == TeamRow.id)
    return _pinned_only(db, [_Best(None, name, bool(baseline), int(count), as_utc(last))
                             for name, baseline, count, last in session.execute(query)])


def _team_stats(phase: str) -> Subquery:
    """Per team with a submission to ``phase``: ``team_id``, ``count`` and ``last`` (time);
    read from the board's index alone."""
    return (select(SubmissionRow.team_id, func.count().label("count"),
                   func.max(SubmissionRow.submitted_at).label("last"))
            .where(SubmissionRow.phase == phase).group_by(SubmissionRow.team_id)
            .subquery("stats"))


def _public_query(phase: str) -> Select[Any]:
    """Each team's best submission by ``BEST_FIRST`` (``_SHOWN``), its name, baseline flag,
    count and last time: for each team, a seek in the board's index to its best one."""
    stats = _team_stats(phase)
    best_id = (select(SubmissionRow.id)
               .where(SubmissionRow.team_id == stats.c.team_id, SubmissionRow.phase == phase)
               .order_by(*BEST_FIRST).limit(1).correlate(stats).scalar_subquery())
    teams = (select(TeamRow.name.label("team"), TeamRow.is_baseline, stats.c.count,
                    stats.c.last, best_id.label("best"))
             .join(stats, stats.c.team_id == TeamRow.id).subquery("teams"))
    return (select(*_SHOWN, teams.c.team, teams.c.is_baseline,
                   teams.c.count.label("n_submissions"), teams.c.last)
            .join(teams, teams.c.best == SubmissionRow.id))


def _revealed_query(phase: str, selections: int) -> Select[Any]:
    """Each team's best submission of a revealed phase by ``PRIVATE_FIRST`` among its final
    candidates, as ``_public_query`` gives it."""
    candidate = SubmissionRow.id.in_(final_candidates(phase, selections))
    order = (case((candidate, 0), else_=1).asc(), *PRIVATE_FIRST)
    ranked = select(
        SubmissionRow.id.label("sid"),
        func.row_number().over(partition_by=SubmissionRow.team_id, order_by=order).label("n"),
        func.count().over(partition_by=SubmissionRow.team_id).label("count"),
        func.max(SubmissionRow.submitted_at).over(partition_by=SubmissionRow.team_id)
        .label("last"),
    ).where(SubmissionRow.phase == phase).subquery()
    return (select(*_SHOWN, TeamRow.name.label("team"), TeamRow.is_baseline,
                   ranked.c.count.label("n_submissions"), ranked.c.last)
            .join(ranked, ranked.c.sid == SubmissionRow.id).join(TeamRow)
            .where(ranked.c.n == 1))


def _pinned_only(db: Database, best: list[_Best]) -> list[_Best]:
    """``best`` without the baselines no longer in the competition file (not shown)."""
    if db.competition is None:
        return best
    pinned = {b.name for b in db.competition.baselines}
    return [b for b in best if not b.is_baseline or b.team in pinned]


def _board_row(best: _Best, rank: int | None, hidden: bool, revealed: bool = False,
               facts: bool = False) -> BoardRow:
    """The board's row of ``best``; its fact sheet only when ``facts`` (a revealed phase, or
    an organizer's board)."""
    row = best.submission
    if hidden or row is None:
        # a hidden row names nothing of the best submission: its id, time, flag or
        # reproduction would tell a team which of its submissions scores best on the hidden
        # data
        return BoardRow(
            team=best.team, is_baseline=best.is_baseline, submission_id=None, rank=rank,
            leaderboard_score=None, interval=None, phase1_score=None, tests=None,
            submissions=best.count, best_submitted=None, last_submitted=best.last,
            reproduction=HIDDEN, flagged=False)
    # a private score leaves the database only here, and only for a revealed phase whose
    # scores are shown
    private = revealed and row.private_leaderboard_score is not None
    low, high = row.private_interval_low, row.private_interval_high
    return BoardRow(
        team=best.team, is_baseline=best.is_baseline,
        submission_id=row.id, rank=rank,
        leaderboard_score=row.leaderboard_score,
        interval=(row.interval_low, row.interval_high),
        phase1_score=row.phase1_score,
        tests={t: row.tests[t] for t in LEADERBOARD_TESTS if t in row.tests},
        submissions=best.count, best_submitted=row.submitted_at,
        last_submitted=best.last, reproduction=row.reproduction,
        flagged=bool(row.flagged), computed=bool(row.computed),
        private_score=row.private_leaderboard_score if private else None,
        private_interval=(None if not private or low is None or high is None
                          else (low, high)),
        private_phase1_score=row.private_phase1_score if private else None,
        carried_from=row.carried_phase,
        # a fact sheet leaves the database for others only here, once the phase is revealed
        fact_sheet=(FactSheet(description=row.fact_description, code_url=row.fact_code_url,
                              commit=row.fact_commit)
                    if facts and row.fact_description is not None else None),
        harness_version=row.harness_version,
        previous_harness_version=row.previous_harness_version,
        previous_score=row.previous_leaderboard_score,
        previous_phase1_score=row.previous_phase1_score)
