"""The board's order of submissions, in SQL and in Python, and a team's place on a board.

A team's row is its best submission: one whose scores the organizers computed before any
claim, then the highest leaderboard score, then highest phase-1 score, then the earliest (then
the lowest id, which only a tie in time reaches). Only computed rows have a place. Once a phase is
revealed, submissions with a private score come first, by private score, then the order above.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, and_, bindparam, case, func, or_, select
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import BindParameter

from evaluation.server.db._tables import SubmissionRow, TeamRow

if TYPE_CHECKING:  # annotations only: the order of a board needs no session
    from evaluation.server.db._session import Database

#: The board's order of submissions: computed scores before claims (true before false, on
#: every backend: the board's index holds the column), then highest leaderboard score, then
#: highest phase-1 score, then the earliest (then the lowest id, which only a tie in time
#: reaches).
BEST_FIRST = (SubmissionRow.computed.desc(), SubmissionRow.leaderboard_score.desc(),
              SubmissionRow.phase1_score.desc(), SubmissionRow.submitted_at.asc(),
              SubmissionRow.id.asc())
#: The order of a revealed phase: submissions with a private score first, by private score,
#: then the public order. (A CASE rather than NULLS LAST: the same SQL on every backend.)
PRIVATE_FIRST = (case((SubmissionRow.private_leaderboard_score.is_(None), 1), else_=0).asc(),
                 SubmissionRow.private_leaderboard_score.desc(), *BEST_FIRST)


def _rank_statement() -> Select:
    """The query of ``rank`` (parameters ``team_id`` and ``phase``): built once, so that a
    request runs it without building and compiling it again."""
    s, other = SubmissionRow, aliased(SubmissionRow)
    team_id: BindParameter[Any] = bindparam("team_id")
    phase: BindParameter[Any] = bindparam("phase")
    best = (select(s.leaderboard_score.label("score"), s.phase1_score.label("phase1"),
                   s.submitted_at.label("at"), s.id.label("sid"))
            .where(s.team_id == team_id, s.phase == phase, s.computed.is_(True))
            .order_by(*BEST_FIRST).limit(1).subquery("best"))
    earlier = or_(other.submitted_at < best.c.at,
                  and_(other.submitted_at == best.c.at, other.id < best.c.sid))
    by_phase1 = or_(other.phase1_score > best.c.phase1,
                    and_(other.phase1_score == best.c.phase1, earlier))
    better = select(other.id).where(
        other.team_id == TeamRow.id, other.phase == phase, other.computed.is_(True),
        # implied by the next condition; it lets the index seek to the better scores
        other.leaderboard_score >= best.c.score,
        or_(other.leaderboard_score > best.c.score,
            and_(other.leaderboard_score == best.c.score, by_phase1))).correlate(best, TeamRow)
    ahead = (select(func.count()).select_from(TeamRow)
             .where(TeamRow.id != team_id, TeamRow.is_baseline.is_(False), better.exists())
             .correlate(best).scalar_subquery())
    return select(ahead).select_from(best)


_RANK = _rank_statement()


def rank(db: Database, phase: str, team_id: int) -> int | None:
    """The place of a team on a phase's board (None when it has no submission there whose
    scores the organizers computed: a claim has no place).

    One more than the number of other teams (not baselines) with a submission better than
    the team's best (in the board's order). One query: the team's best, then, for each
    other team, whether it has a better submission, a seek in the index on (team, phase,
    leaderboard score); so it costs a few index lookups per team and does not grow with the
    number of submissions.
    """
    with db.read_engine.connect() as conn:
        found = conn.execute(_RANK, {"team_id": team_id, "phase": phase}).one_or_none()
    return None if found is None else int(found[0]) + 1


def sort_key(row: Any, revealed: bool) -> tuple:
    """The board's order as a Python sort key (``BEST_FIRST``, or ``PRIVATE_FIRST``) of a
    ``SubmissionRow`` or a row of its columns."""
    public = (not row.computed, -row.leaderboard_score, -row.phase1_score, row.submitted_at,
              row.id)
    if not revealed:
        return public
    private = row.private_leaderboard_score
    return (private is None, 0.0 if private is None else -private, *public)


def as_utc(value: datetime | str) -> datetime:
    """A time from a window function: SQLite may give text, PostgreSQL an aware datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None \
        else value.astimezone(timezone.utc)
