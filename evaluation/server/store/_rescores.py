"""Re-scoring a phase after a harness fix: a batch of scoring jobs whose numbers wait.

``start_rescore`` queues one job of kind "rescore" per scored submission of a phase (its
predictions are kept: nothing is uploaded again), under the server's harness version; a worker
scores it as a scoring job and its numbers are kept beside the old ones, pending
(``rescore_results``): the board reads none of them. ``rescore_table`` shows what would change
(old and new scores and ranks); ``apply_rescore`` switches the board to them at once, keeps the
replaced numbers (the submission's ``previous_*``, until ``drop_old``) and queues the phase's
reproductions again, whose private scores the harness computes too. One rescore of a phase at
a time: another is refused (409) until the open one is applied or cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from evaluation._version import __version__
from evaluation.challenge import decode_user_values
from evaluation.errors import SubmissionRejected
from evaluation.server.db import (
    PredictionsRow,
    ReproductionJobRow,
    RescoreResultRow,
    RescoreRow,
    SubmissionRow,
    TeamRow,
    UserValuesRow,
    iso,
)
from evaluation.server.store._jobs import QUEUED, REPRODUCE, RESCORE, RUNNING
from evaluation.server.store._user_values import (
    SCORED,
    UserValues,
    blob_sha256,
    check_same_users,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database, checked numbers
    from evaluation.server.db import Database
    from evaluation.server.store._scoring import CheckedScoring

#: The verdicts of a reproduction that a rescore queues again.
_REPRODUCED = ("reproduced", "not reproduced")


@dataclass(frozen=True)
class RescoreLine:
    """One submission of a rescore: its old and new numbers and its team's ranks.

    ``new_*`` are None while its job has not scored it (``job_state`` says where it is,
    ``job_reason`` why it failed); ``old_rank`` and ``new_rank`` are its team's places among
    the teams (its best computed submission), before and after; ``old_tier`` and ``new_tier``
    its team's tiers (the board's paired statistics), when they were computed (see
    ``evaluation.server.standings.with_tiers``).
    """

    submission_id: int
    team: str
    run_id: str
    job_state: str
    job_reason: str | None
    old_harness_version: str | None
    old_score: float | None
    old_phase1_score: float | None
    new_harness_version: str | None
    new_score: float | None
    new_phase1_score: float | None
    old_rank: int | None
    new_rank: int | None
    old_tier: int | None = None
    new_tier: int | None = None


@dataclass(frozen=True)
class RescoreTable:
    """A rescore of a phase and what it changes.

    ``state``: "running" (jobs queued or running), "ready" (every job ended: apply or cancel
    it), "applied", "cancelled". ``counts``: its jobs per state.
    """

    rescore_id: int
    phase: str
    harness_version: str
    state: str
    requested_at: datetime
    applied_at: datetime | None
    dropped_at: datetime | None
    counts: dict[str, int]
    reproductions: int
    lines: tuple[RescoreLine, ...]

    @property
    def changed(self) -> tuple[RescoreLine, ...]:
        """The lines whose score or rank changes."""
        return tuple(line for line in self.lines if line.new_score is not None and (
            line.new_score != line.old_score or line.new_rank != line.old_rank
            or line.new_tier != line.old_tier))


# --------------------------------------------------------------------------- commands


def start_rescore(db: Database, phase_name: str) -> RescoreTable:
    """Queue a rescore of phase ``phase_name``: a job per scored submission with predictions
    (its own, or for a carried one those of the upload it was carried from).

    Raises
    ------
    SubmissionRejected
        404 for a phase the competition does not have; 409 while a rescore of the phase is
        open (running, or ended and neither applied nor cancelled), or when the phase has no
        scored submission.
    """
    phase = db.require_competition().phase(phase_name)
    now = db.now()
    with db.writing() as session:
        # the submissions' rows locked first: a second rescore of the phase waits here, then
        # sees the first one's batch (PostgreSQL; SQLite has one writer at a time)
        # a submission carried into the phase has no predictions of its own: its job scores
        # those of the upload it was carried from, and it must be rescored like any other
        ids = list(session.scalars(
            select(SubmissionRow.id).outerjoin(
                PredictionsRow, PredictionsRow.submission_id == SubmissionRow.id)
            .where(SubmissionRow.phase == phase.name, SubmissionRow.computed.is_(True),
                   or_(PredictionsRow.submission_id.is_not(None),
                       SubmissionRow.carried_from.is_not(None)))
            .order_by(SubmissionRow.id).with_for_update(of=SubmissionRow)))
        _refuse_open(session, phase.name)
        if not ids:
            raise SubmissionRejected(409, f"phase {phase.name!r} has no submission scored by "
                                          f"the organizers yet: there is nothing to rescore")
        batch = RescoreRow(phase=phase.name, harness_version=__version__, jobs=len(ids),
                           reproductions=0, requested_at=now)
        session.add(batch)
        session.flush()
        jobs = {job.submission_id: job for job in session.scalars(
            select(ReproductionJobRow).where(ReproductionJobRow.submission_id.in_(ids),
                                             ReproductionJobRow.kind == RESCORE)
            .with_for_update())}
        for sid in ids:
            job = jobs.get(sid)
            if job is None:
                job = ReproductionJobRow(submission_id=sid, kind=RESCORE, phase=phase.name,
                                         private=False)
                session.add(job)
            _queue(job, batch.id, now)
        session.flush()
        return _table(session, batch)


def rescore_table(db: Database, phase_name: str) -> RescoreTable:
    """The latest rescore of phase ``phase_name`` and what it changes (or changed).

    Raises
    ------
    SubmissionRejected
        404 for a phase the competition does not have, or one never rescored.
    """
    phase = db.require_competition().phase(phase_name)
    with db.reading() as session:
        return _table(session, _latest(session, phase.name))


def apply_rescore(db: Database, phase_name: str) -> RescoreTable:
    """Switch the board of phase ``phase_name`` to its open rescore's numbers, keep the ones
    they replace, and queue its reproduced submissions' reproductions again.

    A submission whose rescore job failed keeps its numbers (the table says so).

    Raises
    ------
    SubmissionRejected
        404 for no such phase or no open rescore; 409 while its jobs are queued or running.
    """
    phase = db.require_competition().phase(phase_name)
    now = db.now()
    with db.writing() as session:
        batch = _open(session, phase.name, lock=True)
        if batch is None:
            raise SubmissionRejected(404, f"phase {phase.name!r} has no rescore to apply: "
                                          f"start one with `admin rescore --phase "
                                          f"{phase.name}`")
        counts = _counts(session, batch.id)
        waiting = counts.get(QUEUED, 0) + counts.get(RUNNING, 0)
        if waiting:
            raise SubmissionRejected(409, f"rescore {batch.id} of phase {phase.name!r} still "
                                          f"has {waiting} of {batch.jobs} jobs queued or "
                                          f"running: apply it once the workers have scored "
                                          f"them (`admin rescore --phase {phase.name}` shows "
                                          f"where it is), or cancel it")
        results = list(session.scalars(select(RescoreResultRow).where(
            RescoreResultRow.rescore_id == batch.id)))
        rows = {row.id: row for row in session.scalars(select(SubmissionRow).where(
            SubmissionRow.id.in_([r.submission_id for r in results])).with_for_update())}
        for result in results:
            row = rows[result.submission_id]
            result.old_harness_version = row.harness_version
            result.old_phase1_score = row.phase1_score
            result.old_leaderboard_score = row.leaderboard_score
            row.previous_harness_version = row.harness_version
            row.previous_phase1_score, row.previous_leaderboard_score = (
                row.phase1_score, row.leaderboard_score)
            row.harness_version = result.harness_version
            row.phase1_score, row.leaderboard_score = (result.phase1_score,
                                                       result.leaderboard_score)
            row.interval_low, row.interval_high = result.interval_low, result.interval_high
            row.tests, row.num_folds, row.flagged = dict(result.tests), result.num_folds, \
                result.flagged
            # the newest trusted values row is the one the statistics read
            session.add(UserValuesRow(
                submission_id=row.id, source=SCORED, private=False, trusted=True,
                phase=row.phase, run_hash=result.run_hash, k=result.k,
                n_users=result.n_users, users_sha256=result.users_sha256, blob=result.blob,
                blob_sha256=blob_sha256(result.blob), costs=None, recorded_at=now))
        batch.reproductions = _requeue_reproductions(session, phase.name, batch.id, now)
        batch.applied_at = now
        session.flush()
        return _table(session, batch)


def cancel_rescore(db: Database, phase_name: str) -> RescoreTable:
    """Give up the open rescore of phase ``phase_name``: its waiting jobs are dropped (a
    running one's finish is refused), its numbers never shown.

    Raises
    ------
    SubmissionRejected
        404 for no such phase or no open rescore.
    """
    phase = db.require_competition().phase(phase_name)
    now = db.now()
    with db.writing() as session:
        batch = _open(session, phase.name, lock=True)
        if batch is None:
            raise SubmissionRejected(404, f"phase {phase.name!r} has no open rescore to "
                                          f"cancel")
        session.execute(delete(ReproductionJobRow).where(
            ReproductionJobRow.rescore_id == batch.id, ReproductionJobRow.kind == RESCORE,
            ReproductionJobRow.state.in_((QUEUED, RUNNING))))
        batch.cancelled_at = now
        session.flush()
        return _table(session, batch)


def drop_old(db: Database, phase_name: str) -> int:
    """Drop the numbers that the applied rescores of phase ``phase_name`` replaced from its
    board (the CSV's ``previous_*`` columns); the rescores' records keep them. Returns the
    submissions whose old numbers were dropped.

    Raises
    ------
    SubmissionRejected
        404 for no such phase; 409 when no applied rescore has old numbers to drop.
    """
    phase = db.require_competition().phase(phase_name)
    now = db.now()
    with db.writing() as session:
        batches = list(session.scalars(select(RescoreRow).where(
            RescoreRow.phase == phase.name, RescoreRow.applied_at.is_not(None),
            RescoreRow.dropped_at.is_(None)).with_for_update()))
        if not batches:
            raise SubmissionRejected(409, f"phase {phase.name!r} has no applied rescore whose "
                                          f"old numbers are still shown: nothing to drop")
        rows = list(session.scalars(select(SubmissionRow).where(
            SubmissionRow.phase == phase.name,
            SubmissionRow.previous_leaderboard_score.is_not(None)).with_for_update()))
        for row in rows:
            row.previous_harness_version = None
            row.previous_leaderboard_score = row.previous_phase1_score = None
        for batch in batches:
            batch.dropped_at = now
        return len(rows)


def pending_values(db: Database, rescore_id: int) -> dict[int, UserValues]:
    """``{submission_id: its per-user values}`` of rescore ``rescore_id``'s results (what the
    board's statistics would read once it is applied)."""
    with db.reading() as session:
        found = session.execute(select(
            RescoreResultRow.submission_id, RescoreResultRow.blob, RescoreResultRow.n_users,
            RescoreResultRow.k).where(RescoreResultRow.rescore_id == rescore_id,
                                      RescoreResultRow.blob.is_not(None))).all()
    out = {}
    for sid, blob, n_users, k in found:
        folds = decode_user_values(blob, list(n_users or []), k=k)
        out[sid] = UserValues(folds=[f.scores for f in folds],
                              user_hashes=[f.users_sha256 for f in folds], trusted=True,
                              labels=[f.labels for f in folds])
    return out


# --------------------------------------------------------------------------- the workers' side


def rescore_version(session: Session, job: ReproductionJobRow, version: str | None
                    ) -> tuple[str, bool] | None:
    """Why a rescore job's numbers from harness ``version`` cannot be kept, and whether
    another run may help (None: they can be kept): the rescore must be open, and asks for the
    version it was started under."""
    batch = session.get(RescoreRow, job.rescore_id) if job.rescore_id is not None else None
    if batch is None or batch.applied_at is not None or batch.cancelled_at is not None:
        return (f"the rescore of job {job.id} is no longer open (applied or cancelled): its "
                f"numbers are not kept"), False
    if version != batch.harness_version:
        return (f"the worker runs harness {version or 'of an unknown version'}, and rescore "
                f"{batch.id} scores with harness {batch.harness_version}: run the workers of "
                f"that version"), True
    return None


def write_rescored(session: Session, job: ReproductionJobRow, checked: CheckedScoring,
                   version: str | None, now: datetime) -> None:
    """Keep a rescore job's checked numbers, pending, beside the submission's own; 422 when
    its test users are not those of the phase's other trusted values of its run hash."""
    values = checked.scored.values
    scores = checked.scored.scores
    check_same_users(session.connection(), checked.phase, checked.run_hash,
                     values.users_sha256, what="the rescore job")
    session.execute(delete(RescoreResultRow).where(
        RescoreResultRow.rescore_id == job.rescore_id,
        RescoreResultRow.submission_id == job.submission_id))
    session.add(RescoreResultRow(
        rescore_id=job.rescore_id, submission_id=job.submission_id, harness_version=version,
        phase1_score=scores.phase1_score, leaderboard_score=scores.leaderboard_score,
        interval_low=scores.interval[0], interval_high=scores.interval[1],
        tests=dict(scores.tests), num_folds=scores.num_folds, flagged=checked.flagged,
        run_hash=checked.run_hash, k=values.k, n_users=values.n_users,
        users_sha256=values.users_sha256, blob=values.blob, recorded_at=now))


# --------------------------------------------------------------------------- helpers


def _queue(job: ReproductionJobRow, rescore_id: int, now: datetime) -> None:
    job.state, job.origin, job.rescore_id, job.attempts = QUEUED, "rescore", rescore_id, 0
    job.reason = job.cause = job.lease_id = job.lease_owner = None
    job.lease_expires_at = job.heartbeat_at = job.started_at = job.finished_at = None
    job.queued_at = now


def _requeue_reproductions(session: Session, phase: str, rescore_id: int, now: datetime
                           ) -> int:
    """Queue again the phase's reproductions that ended with a verdict (their private scores
    are the harness's too); the new verdicts replace the old ones as they come."""
    jobs = list(session.scalars(select(ReproductionJobRow).where(
        ReproductionJobRow.phase == phase, ReproductionJobRow.kind == REPRODUCE,
        ReproductionJobRow.state.in_(_REPRODUCED)).with_for_update()))
    for job in jobs:
        _queue(job, rescore_id, now)
    return len(jobs)


def _refuse_open(session: Session, phase: str) -> None:
    batch = _open(session, phase)
    if batch is None:
        return
    counts = _counts(session, batch.id)
    waiting = counts.get(QUEUED, 0) + counts.get(RUNNING, 0)
    where = (f"{waiting} of its {batch.jobs} jobs are still queued or running" if waiting
             else "its jobs have ended and it waits to be applied or cancelled")
    raise SubmissionRejected(409, f"a rescore of phase {phase!r} is open (rescore {batch.id}, "
                                  f"started {iso(batch.requested_at)}; {where}): nothing was "
                                  f"queued. See it with `admin rescore --phase {phase}`, apply "
                                  f"it with --yes or cancel it with --cancel")


def _open(session: Session, phase: str, lock: bool = False) -> RescoreRow | None:
    query = select(RescoreRow).where(RescoreRow.phase == phase,
                                     RescoreRow.applied_at.is_(None),
                                     RescoreRow.cancelled_at.is_(None))
    if lock:
        query = query.with_for_update()
    return session.scalars(query.order_by(RescoreRow.id.desc()).limit(1)).first()


def _latest(session: Session, phase: str) -> RescoreRow:
    batch = session.scalars(select(RescoreRow).where(RescoreRow.phase == phase)
                            .order_by(RescoreRow.id.desc()).limit(1)).first()
    if batch is None:
        raise SubmissionRejected(404, f"phase {phase!r} was never rescored: start a rescore "
                                      f"with `admin rescore --phase {phase}`")
    return batch


def _counts(session: Session, rescore_id: int) -> dict[str, int]:
    states = session.scalars(select(ReproductionJobRow.state).where(
        ReproductionJobRow.rescore_id == rescore_id, ReproductionJobRow.kind == RESCORE))
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return counts


def _table(session: Session, batch: RescoreRow) -> RescoreTable:
    """``batch`` and its lines: old and new numbers of each of its submissions, and ranks."""
    applied = batch.applied_at is not None
    results = {r.submission_id: r for r in session.scalars(select(RescoreResultRow).where(
        RescoreResultRow.rescore_id == batch.id))}
    jobs = {sid: (state, reason) for sid, state, reason in session.execute(
        select(ReproductionJobRow.submission_id, ReproductionJobRow.state,
               ReproductionJobRow.reason).where(ReproductionJobRow.rescore_id == batch.id,
                                                ReproductionJobRow.kind == RESCORE))}
    rows = session.execute(
        select(SubmissionRow.id, SubmissionRow.run_id, SubmissionRow.team_id, TeamRow.name,
               SubmissionRow.leaderboard_score, SubmissionRow.phase1_score,
               SubmissionRow.submitted_at, SubmissionRow.harness_version)
        .join(TeamRow, TeamRow.id == SubmissionRow.team_id)
        .where(SubmissionRow.phase == batch.phase, SubmissionRow.computed.is_(True),
               TeamRow.is_baseline.is_(False))).all()
    old: dict[int, tuple[float | None, float | None]] = {}
    new: dict[int, tuple[float | None, float | None]] = {}
    for row in rows:
        result = results.get(row.id)
        now_scores = (row.leaderboard_score, row.phase1_score)
        if result is None:
            old[row.id] = new[row.id] = now_scores
        elif applied:  # the row holds the new numbers, the result the replaced ones
            new[row.id] = now_scores
            old[row.id] = (result.old_leaderboard_score, result.old_phase1_score)
        else:
            old[row.id] = now_scores
            new[row.id] = (result.leaderboard_score, result.phase1_score)
    old_ranks, new_ranks = _team_ranks(rows, old), _team_ranks(rows, new)
    lines = []
    for row in sorted(rows, key=lambda r: r.id):
        if row.id not in jobs and row.id not in results:
            continue
        result = results.get(row.id)
        state, reason = jobs.get(row.id, ("scored", None))
        lines.append(RescoreLine(
            submission_id=row.id, team=row.name, run_id=row.run_id, job_state=state,
            job_reason=reason,
            old_harness_version=(result.old_harness_version if applied and result is not None
                                 else row.harness_version),
            old_score=old[row.id][0], old_phase1_score=old[row.id][1],
            new_harness_version=None if result is None else result.harness_version,
            new_score=None if result is None else new[row.id][0],
            new_phase1_score=None if result is None else new[row.id][1],
            old_rank=old_ranks.get(row.team_id), new_rank=new_ranks.get(row.team_id)))
    if applied:
        state = "applied"
    elif batch.cancelled_at is not None:
        state = "cancelled"
    else:
        counts = _counts(session, batch.id)
        state = "running" if counts.get(QUEUED, 0) + counts.get(RUNNING, 0) else "ready"
    return RescoreTable(
        rescore_id=batch.id, phase=batch.phase, harness_version=batch.harness_version,
        state=state, requested_at=batch.requested_at, applied_at=batch.applied_at,
        dropped_at=batch.dropped_at, counts=_counts(session, batch.id),
        reproductions=batch.reproductions, lines=tuple(lines))


def _team_ranks(rows, scores: dict[int, tuple[float | None, float | None]]
                ) -> dict[int, int]:
    """``{team_id: rank}`` by each team's best submission under ``scores``, in the board's
    order (leaderboard score, then phase-1 score, highest first, then the earliest, then the
    lowest id)."""
    best: dict[int, tuple] = {}
    for row in rows:
        leaderboard, phase1 = scores[row.id]
        # a score never recorded (a result from before its old numbers were kept) ranks last
        key = (-(leaderboard if leaderboard is not None else float("-inf")),
               -(phase1 if phase1 is not None else float("-inf")), row.submitted_at, row.id)
        if row.team_id not in best or key < best[row.team_id]:
            best[row.team_id] = key
    ordered = sorted(best, key=best.__getitem__)
    return {team_id: place for place, team_id in enumerate(ordered, start=1)}
