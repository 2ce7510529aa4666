"""What a team and the organizers are shown of a stored submission: an upload's receipt, a
submission's view, its stored body.

The scores follow the visibility rule (``evaluation.server.db.visibility``): a phase's public
scores are shown to its teams when the phase is public or revealed, the private scores only
once it is revealed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import select

from evaluation.server.core import FactSheet, Phase
from evaluation.server.db import (
    Caller,
    PredictionsRow,
    ReproductionRow,
    SubmissionRow,
    TeamRow,
    is_public,
    is_published,
    is_revealed,
    iso,
    rank,
    scores_shown,
)
from evaluation.server.store._board import fact_sheet_of, revealed_rank
from evaluation.server.store._carried import predictions_owner
from evaluation.server.store._job_requests import PLATFORM
from evaluation.server.store._jobs import team_failures, team_jobs
from evaluation.server.store._limits import given_back
from evaluation.server.store._own_alternatives import OwnAlternative, own_alternatives

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: What a receipt needs of a stored submission.
STORED_FIELDS = ("id", "team_id", "run_id", "body_sha256", "submitted_at", "phase1_score",
                 "leaderboard_score", "interval_low", "interval_high", "flagged")


@dataclass(frozen=True)
class Stored:
    """A stored submission, as far as the receipt of an upload needs it (``STORED_FIELDS``)."""

    id: int
    team_id: int
    run_id: str
    body_sha256: str
    submitted_at: datetime
    phase1_score: float
    leaderboard_score: float
    interval_low: float
    interval_high: float
    flagged: bool


@dataclass(frozen=True)
class Receipt:
    """The answer to an accepted submission (``status`` "accepted") or a repeat ("duplicate").

    Scores and rank are None when the phase's scores are hidden.
    """

    status: str
    submission_id: int
    phase: str
    phase1_score: float | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    rank: int | None
    flagged: bool
    message: str

    @property
    def http_status(self) -> int:
        """201 for a new submission, 200 for a repeat of a stored one."""
        return 201 if self.status == "accepted" else 200


@dataclass(frozen=True)
class SubmissionView:
    """One stored submission as ``GET /api/v1/submissions/{id}`` shows it."""

    submission_id: int
    team: str
    is_baseline: bool
    phase: str
    run_id: str
    submitted_at: datetime
    phase1_score: float | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    tests: dict[str, float] | None
    num_folds: int
    claimed_score: float | None
    flagged: bool
    reproduction: str
    payload_url: str | None = None
    private_phase1_score: float | None = None
    private_leaderboard_score: float | None = None
    private_interval: tuple[float, float] | None = None
    carried_from: int | None = None
    carried_phase: str | None = None
    fact_sheet: FactSheet | None = None
    #: its results under the declared alternative protocols (``OwnAlternative``), with a
    #: failure's reason: read by its team and the organizers only, as every field here
    alternatives: tuple[OwnAlternative, ...] = ()


def receipt(db: Database, row: Stored, new: bool, phase: Phase, used: int) -> Receipt:
    """The receipt of an upload stored as ``row`` (``new``: now; else a repeat); ``used``: the
    team's submissions to the phase today, this one included."""
    revealed = is_revealed(db, phase.name)
    hidden = not scores_shown(phase.public, revealed, is_published(db, phase.name))
    place = None if hidden else rank(db, phase.name, row.team_id)
    if place is not None and revealed:
        place = revealed_rank(db, phase.name, row.team_id)
    return Receipt(
        status="accepted" if new else "duplicate", submission_id=row.id, phase=phase.name,
        phase1_score=None if hidden else row.phase1_score,
        leaderboard_score=None if hidden else row.leaderboard_score,
        interval=None if hidden else (row.interval_low, row.interval_high),
        rank=place, flagged=row.flagged,
        message=_receipt_message(row, new, phase, used, place, hidden))


def _receipt_message(row: Stored, new: bool, phase: Phase, used: int, place: int | None,
                     hidden: bool) -> str:
    if new:
        message = f"submission {row.id} accepted for phase {phase.name!r}"
        message += f" ({used} of {phase.daily_limit} today, UTC)"
    else:
        message = (f"run {row.run_id} was submitted already as submission {row.id} "
                   f"({iso(row.submitted_at)}); it is not counted again")
    if hidden:
        message += (f"; the scores of phase {phase.name!r} are hidden until the organizers "
                    f"reveal them")
    elif place is not None:
        message += f"; the team's best submission ranks {place}"
    if row.flagged:
        message += ("; the score in the upload differs from the score recomputed from its "
                    "folds: the recomputed one counts, and the submission is flagged for the "
                    "organizers")
    return message + "."


def get_submission(db: Database, submission_id: int, caller: Caller) -> SubmissionView | None:
    """A submission, when ``caller`` may see it (its team, or an organizer); else None.

    The public scores are None when the visibility rule hides them (``scores_shown``) and
    the caller is not an organizer; the private ones are None until the phase is revealed.
    """
    with db.reading() as session:
        found = session.execute(select(SubmissionRow, TeamRow).join(TeamRow).where(
            SubmissionRow.id == submission_id)).one_or_none()
    if found is None:
        return None
    row, team = found
    if not caller.admin and caller.team_id != team.id:
        return None
    revealed = is_revealed(db, row.phase)
    hidden = not caller.admin and not scores_shown(is_public(db, row.phase), revealed,
                                                   is_published(db, row.phase))
    # the private scores: only once the phase is revealed
    private = revealed and row.private_leaderboard_score is not None
    return SubmissionView(
        submission_id=row.id, team=team.name, is_baseline=team.is_baseline, phase=row.phase,
        run_id=row.run_id, submitted_at=row.submitted_at,
        phase1_score=None if hidden else row.phase1_score,
        leaderboard_score=None if hidden else row.leaderboard_score,
        interval=None if hidden else (row.interval_low, row.interval_high),
        tests=None if hidden else dict(row.tests), num_folds=row.num_folds,
        claimed_score=row.claimed_score, flagged=row.flagged, reproduction=row.reproduction,
        payload_url=f"/api/v1/submissions/{row.id}/payload" if caller.admin else None,
        private_phase1_score=row.private_phase1_score if private else None,
        private_leaderboard_score=row.private_leaderboard_score if private else None,
        private_interval=row.private_interval if private else None,
        # its team's and the organizers' only (another team's gets None above)
        carried_from=row.carried_from, carried_phase=row.carried_phase,
        fact_sheet=fact_sheet_of(row),
        # an organizer reads a private protocol's at once, as on the certificate
        alternatives=own_alternatives(db, [(row.id, row.phase)], {
            row.phase: (not hidden, revealed or caller.admin)}).get(row.id, ()))


#: The longest label (a run's name, an upload's description) a listing shows.
MAX_LABEL = 200


@dataclass(frozen=True)
class OwnSubmission:
    """One of a team's submissions as its listing (``GET /api/v1/submissions``) shows it.

    ``name`` is the run's name (``python submission.py --name``), ``description`` the
    upload's (``submit --description``); the scores follow the visibility rule.
    ``reproduction_status`` is the state of its reproduction job ("queued", "running",
    "reproduced", "not reproduced", "failed"; None when none was queued), with
    ``reproduction_reason`` (why it failed, or a note); ``log_tail`` is the end of the log of
    its latest reproduction (the run on the public folds), None before one.
    ``carried_from`` is the earlier phase it was carried from when its phase opened (None:
    the team uploaded it), ``fact_sheet`` the one the team gave at final selection.
    ``failure`` is why its scoring (else its reproduction) job failed, ``failure_cause``
    whose reason it was ("platform": infrastructure, a lost worker, an organizers' timeout;
    "team": the upload itself; "unknown" for a failure older than the distinction), and
    ``counted`` whether it counts against the team's daily limit (a platform failure never
    does; a team's own as the competition's ``count_refused`` says).
    ``alternatives`` are its latest results under the competition's declared alternative
    protocols (status, score, cost, a failure's reason), a private protocol's once the phase
    is revealed.
    """

    submission_id: int
    submitted_at: datetime
    phase: str
    run_id: str
    name: str | None
    description: str | None
    phase1_score: float | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    private_leaderboard_score: float | None
    flagged: bool
    reproduction: str
    final: bool = False
    reproduction_status: str | None = None
    reproduction_reason: str | None = None
    log_tail: str | None = None
    carried_from: str | None = None
    fact_sheet: FactSheet | None = None
    failure: str | None = None
    failure_cause: str | None = None
    counted: bool = True
    alternatives: tuple[OwnAlternative, ...] = ()


def own_submissions(db: Database, team_id: int, phase: str | None = None
                    ) -> list[OwnSubmission]:
    """Every submission of team ``team_id`` (of ``phase`` only, when given), newest first,
    with its scores where the visibility rule shows them to the team (the public ones when
    the phase is public or revealed, the private ones once it is revealed).

    Raises
    ------
    SubmissionRejected
        404 when ``phase`` is not a phase of the competition.
    """
    query = select(SubmissionRow).where(SubmissionRow.team_id == team_id)
    if phase is not None:
        query = query.where(SubmissionRow.phase == db.require_competition().phase(phase).name)
    with db.reading() as session:
        rows = list(session.scalars(query.order_by(SubmissionRow.submitted_at.desc(),
                                                   SubmissionRow.id.desc())))
    shown = {phase: (scores_shown(is_public(db, phase), is_revealed(db, phase),
                                  is_published(db, phase)),
                     is_revealed(db, phase)) for phase in {r.phase for r in rows}}
    jobs = team_jobs(db, team_id)
    failures = team_failures(db, team_id)
    free = set(given_back(db.require_competition())) if db.competition is not None \
        else {PLATFORM}
    tails = _log_tails(db, team_id)
    alternatives = own_alternatives(db, [(r.id, r.phase) for r in rows], shown)
    listing = []
    for row in rows:
        public, private = shown[row.phase]
        status, reason = jobs.get(row.id, (None, None))
        name, description = _labels(row.payload)
        _, cause, failure = failures.get(row.id, (None, None, None))
        listing.append(OwnSubmission(
            submission_id=row.id, submitted_at=row.submitted_at, phase=row.phase,
            run_id=row.run_id, name=name, description=description,
            phase1_score=row.phase1_score if public else None,
            leaderboard_score=row.leaderboard_score if public else None,
            interval=(row.interval_low, row.interval_high) if public else None,
            private_leaderboard_score=row.private_leaderboard_score if private else None,
            flagged=row.flagged, reproduction=row.reproduction, final=row.final_at is not None,
            reproduction_status=status, reproduction_reason=reason, log_tail=tails.get(row.id),
            carried_from=row.carried_phase, fact_sheet=fact_sheet_of(row),
            failure=failure, failure_cause=cause, counted=cause not in free,
            alternatives=alternatives.get(row.id, ())))

    return listing


def _log_tails(db: Database, team_id: int) -> dict[int, str]:
    """``{submission_id: log tail of its latest reproduction}`` of team ``team_id``."""
    with db.reading() as session:
        found = session.execute(
            select(ReproductionRow.submission_id, ReproductionRow.log_tail)
            .join(SubmissionRow, SubmissionRow.id == ReproductionRow.submission_id)
            .where(SubmissionRow.team_id == team_id)
            .order_by(ReproductionRow.recorded_at, ReproductionRow.id)).all()
    return {sid: tail for sid, tail in found}  # the latest one last, so it stays


def _labels(stored: str) -> tuple[str | None, str | None]:
    """The run's name and the upload's description in a stored body (None when absent or
    not text), cut to ``MAX_LABEL`` characters."""
    document = json.loads(stored)
    results = document.get("results")
    name = results.get("name") if isinstance(results, dict) else None
    return _label(name), _label(document.get("description"))


def _label(value: object) -> str | None:
    """``value`` cut to ``MAX_LABEL`` characters when it is text; else None."""
    return value[:MAX_LABEL] if isinstance(value, str) else None


def payload(db: Database, submission_id: int, caller: Caller) -> str | None:
    """The body of a submission as stored (canonical JSON), for an organizer; else None.

    Parameters
    ----------
    db : Database
    submission_id : int
    caller : Caller
        Only an organizer reads payloads (a team gets None, as for a missing one).

    Returns
    -------
    str or None
        The stored JSON text: the uploaded document with sorted keys.
    """
    if not caller.admin:
        return None
    with db.reading() as session:
        return session.scalars(select(SubmissionRow.payload).where(
            SubmissionRow.id == submission_id)).one_or_none()


def predictions(db: Database, submission_id: int, caller: Caller) -> bytes | None:
    """A submission's uploaded predictions stream (a carried one's: the upload it was carried
    from), for an organizer (a scoring job); None for a team's token, a missing submission or
    one uploaded without predictions."""
    if not caller.admin:
        return None
    with db.reading() as session:
        # a carried submission scores the predictions uploaded to the phase it came from
        owner = predictions_owner(session, submission_id)
        return session.scalars(select(PredictionsRow.body).where(
            PredictionsRow.submission_id == owner)).one_or_none()
