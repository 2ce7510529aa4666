"""The reproduction queue: jobs the organizers' workers claim, hold by a lease, and finish.

A job is queued for a submission when its team marks it as a final selection (and cancelled
when the team unmarks it before a worker took it), or at its upload when its phase says
``reproduce = "every"``; an organizer may queue a failed one again. A worker claims the
oldest claimable job: a queued one, or a running one whose lease ran out (its worker died;
that run counts as an attempt). The claim gives a lease id that only the claimer knows and
an expiry; the worker extends it by heartbeats while it runs, and finishes the job with the
verdict's report (stored as ``POST .../reproduction`` stores it, in the same transaction) or
with a failure. Every step checks the lease under the job's row lock (``SELECT ... FOR
UPDATE``, ``SKIP LOCKED`` for the claim, on PostgreSQL; SQLite's one writer at a time): two
workers never hold one job, and a worker whose lease was taken over can neither extend it nor
finish the job (409).

An infrastructure failure (the server could not be reached, the environment could not be
built, the sandbox failed) queues the job again until it has run the competition's
``reproduce_attempts`` times; then it is "failed", with the reason. A failure of the
submission itself (no checkout for it) fails the job at once.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import and_, func, insert, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from evaluation.errors import SubmissionRejected
from evaluation.server._store_session import Database, iso
from evaluation.server._tables import MAX_REASON, ReproductionJobRow, SubmissionRow, TeamRow

if TYPE_CHECKING:  # the competition and the requests' models import pandas and pydantic;
    # listing the queue (``admin jobs``) needs neither
    from evaluation.server._competition import Phase

#: A job's states, in the order of its life.
QUEUED, RUNNING, FAILED = "queued", "running", "failed"
JOB_STATES = (QUEUED, RUNNING, "reproduced", "not reproduced", FAILED)
#: What queued a job.
ORIGINS = ("final", "upload", "organizer")


@dataclass(frozen=True)
class JobView:
    """A job as the organizers' listing and a worker's claim show it."""

    job_id: int
    submission_id: int
    team: str
    phase: str
    private: bool
    origin: str
    state: str
    reason: str | None
    attempts: int
    worker: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class Lease:
    """A claimed job: the job, the lease id its worker must send back, and when it ends."""

    job: JobView
    lease: str
    expires_at: datetime


# --------------------------------------------------------------------------- queueing


def queue_final(session: Session, row: SubmissionRow, phase: Phase, now: datetime,
                final: bool) -> None:
    """A final selection marked (``final``) or unmarked: queue its job, or cancel it while
    no worker took it (a job queued for another reason stays)."""
    if phase.reproduce == "none":
        return
    job = session.scalars(select(ReproductionJobRow).where(
        ReproductionJobRow.submission_id == row.id).with_for_update()).one_or_none()
    if final and job is None:
        session.add(new_job(row.id, phase, "final", now))
    elif not final and job is not None and job.origin == "final" and job.state == QUEUED:
        session.delete(job)


def queue_upload(conn: Connection, submission_id: int, phase: Phase, now: datetime) -> None:
    """Queue the job of a new upload when its phase reproduces every upload (``conn``: the
    upload's transaction)."""
    if phase.reproduce == "every":
        conn.execute(insert(ReproductionJobRow).values(
            submission_id=submission_id, phase=phase.name, private=phase.private_folds,
            origin="upload", state=QUEUED, attempts=0, queued_at=now))


def new_job(submission_id: int, phase: Phase, origin: str, now: datetime
            ) -> ReproductionJobRow:
    """A queued job of ``submission_id`` (``origin``: what queued it)."""
    return ReproductionJobRow(submission_id=submission_id, phase=phase.name,
                              private=phase.private_folds, origin=origin, state=QUEUED,
                              attempts=0, queued_at=now)


# --------------------------------------------------------------------------- the workers


def claim(db: Database, body: bytes) -> Lease | None:
    """Give the oldest claimable job to the worker that sent ``body`` (``ClaimRequest``).

    Claimable: queued, or running with a lease that ran out (its worker is gone: that run
    counts as an attempt, and a job out of attempts is marked failed instead). None when no
    job is claimable.

    Raises
    ------
    SubmissionRejected
        422 for an invalid body.
    """
    from evaluation.server._job_requests import ClaimRequest, read_request

    request = read_request(ClaimRequest, body, "claim")
    now = db.now()
    limit = _attempts(db)
    with db.writing() as session:
        while True:
            query = select(ReproductionJobRow).where(or_(
                ReproductionJobRow.state == QUEUED,
                and_(ReproductionJobRow.state == RUNNING,
                     ReproductionJobRow.lease_expires_at <= now)))
            if not request.private:
                query = query.where(ReproductionJobRow.private.is_(False))
            job = session.scalars(query.order_by(ReproductionJobRow.id).limit(1)
                                  .with_for_update(skip_locked=True)).first()
            if job is None:
                return None
            if job.state == RUNNING and job.attempts >= limit:
                _end(job, FAILED, now, f"its worker stopped answering (the lease of "
                                       f"{job.lease_owner} ran out at "
                                       f"{iso(job.lease_expires_at or now)}) on attempt "
                                       f"{job.attempts} of {limit}")
                continue
            lease = secrets.token_urlsafe(24)
            job.state, job.attempts, job.reason = RUNNING, job.attempts + 1, None
            job.lease_id, job.lease_owner = lease, request.worker
            job.lease_expires_at = now + timedelta(seconds=request.lease_s)
            job.heartbeat_at = job.started_at = now
            return Lease(job=_view(job, _team(session, job.submission_id)), lease=lease,
                         expires_at=job.lease_expires_at)


def heartbeat(db: Database, job_id: int, body: bytes) -> Lease:
    """Extend the lease of job ``job_id`` to ``lease_s`` from now.

    Raises
    ------
    SubmissionRejected
        404 for no such job; 409 when the lease is not (or no longer) the caller's: the job
        was taken over by another worker, or finished; 422 for an invalid body.
    """
    from evaluation.server._job_requests import HeartbeatRequest, read_request

    request = read_request(HeartbeatRequest, body, "heartbeat")
    now = db.now()
    with db.writing() as session:
        job = _held(session, job_id, request.lease)
        job.lease_expires_at = now + timedelta(seconds=request.lease_s)
        job.heartbeat_at = now
        return Lease(job=_view(job, _team(session, job.submission_id)), lease=request.lease,
                     expires_at=job.lease_expires_at)


def finish(db: Database, job_id: int, body: bytes) -> JobView:
    """End the run of job ``job_id`` that the caller holds: with a verdict's report (stored as
    the reproduction route stores it, in the same transaction), a failure or a release.

    Raises
    ------
    SubmissionRejected
        404 for no such job; 409 when the lease is not the caller's (the job was taken over:
        nothing is stored); 422 for an invalid body or report.
    """
    from evaluation.server._job_requests import MAX_FINISH_BYTES, FinishRequest, read_request
    from evaluation.server._store_reproductions import check_report, write_report

    request = read_request(FinishRequest, body, "finish", MAX_FINISH_BYTES)
    kind = request.kind()
    with db.reading() as session:
        submission_id = session.scalar(select(ReproductionJobRow.submission_id).where(
            ReproductionJobRow.id == job_id))
    if submission_id is None:
        raise SubmissionRejected(404, f"no reproduction job {job_id}")
    checked = check_report(db, submission_id, request.report) if kind == "report" else None
    now = db.now()
    with db.writing() as session:
        job = _held(session, job_id, request.lease)
        if checked is not None:
            write_report(db, session, submission_id, checked)
            _end(job, checked.report.verdict, now, request.note)
        elif kind == "release":
            job.attempts = max(0, job.attempts - 1)  # the run was not done: not counted
            _requeue(job, f"released by its worker ({request.release}); queued again")
        else:
            _failed(job, request.failure or "", request.retry, _attempts(db), now)
        return _view(job, _team(session, submission_id))


def retry(db: Database, job_id: int) -> JobView:
    """Queue a failed job again, its attempts reset (an organizer fixed the cause).

    Raises
    ------
    SubmissionRejected
        404 for no such job; 409 when it has not failed.
    """
    with db.writing() as session:
        job = session.scalars(select(ReproductionJobRow).where(
            ReproductionJobRow.id == job_id).with_for_update()).one_or_none()
        if job is None:
            raise SubmissionRejected(404, f"no reproduction job {job_id}")
        if job.state != FAILED:
            raise SubmissionRejected(409, f"reproduction job {job_id} is {job.state}, not "
                                          f"failed: only a failed job is queued again")
        job.attempts, job.origin, job.finished_at = 0, "organizer", None
        _requeue(job, None)
        job.queued_at = db.now()
        return _view(job, _team(session, job.submission_id))


def jobs(db: Database, phase: str | None = None, state: str | None = None) -> list[JobView]:
    """The jobs (of ``phase``, in ``state`` when given), oldest first."""
    if state is not None and state not in JOB_STATES:
        raise SubmissionRejected(422, f"no job state {state[:40]!r}; the states are "
                                      f"{', '.join(JOB_STATES)}")
    query = (select(ReproductionJobRow, TeamRow.name)
             .join(SubmissionRow, SubmissionRow.id == ReproductionJobRow.submission_id)
             .join(TeamRow, TeamRow.id == SubmissionRow.team_id)
             .order_by(ReproductionJobRow.id))
    if phase is not None:
        query = query.where(ReproductionJobRow.phase == phase)
    if state is not None:
        query = query.where(ReproductionJobRow.state == state)
    with db.reading() as session:
        return [_view(job, team) for job, team in session.execute(query)]


def job_counts(db: Database) -> dict[str, dict[str, int]]:
    """``{phase: {state: jobs}}`` of every phase with jobs (every state present, 0 or more)."""
    with db.reading() as session:
        found = session.execute(select(ReproductionJobRow.phase, ReproductionJobRow.state,
                                       func.count()).group_by(ReproductionJobRow.phase,
                                                              ReproductionJobRow.state)).all()
    counts: dict[str, dict[str, int]] = {}
    for phase, state, count in found:
        counts.setdefault(phase, dict.fromkeys(JOB_STATES, 0))[state] = count
    return counts


def team_jobs(db: Database, team_id: int) -> dict[int, tuple[str, str | None]]:
    """``{submission_id: (state, reason)}`` of the jobs of team ``team_id``'s submissions."""
    with db.reading() as session:
        found = session.execute(
            select(ReproductionJobRow.submission_id, ReproductionJobRow.state,
                   ReproductionJobRow.reason)
            .join(SubmissionRow, SubmissionRow.id == ReproductionJobRow.submission_id)
            .where(SubmissionRow.team_id == team_id)).all()
    return {sid: (state, reason) for sid, state, reason in found}


# --------------------------------------------------------------------------- helpers


def _attempts(db: Database) -> int:
    """The runs a job may take (the competition's ``reproduce_attempts``)."""
    if db.competition is None:
        from evaluation.server._competition_keys import DEFAULT_REPRODUCE_ATTEMPTS
        return DEFAULT_REPRODUCE_ATTEMPTS
    return db.competition.reproduce_attempts


def _held(session: Session, job_id: int, lease: str) -> ReproductionJobRow:
    """Job ``job_id``, locked, when ``lease`` holds it now; else 404 or 409."""
    job = session.scalars(select(ReproductionJobRow).where(
        ReproductionJobRow.id == job_id).with_for_update()).one_or_none()
    if job is None:
        raise SubmissionRejected(404, f"no reproduction job {job_id}")
    if job.state != RUNNING or not hmac.compare_digest(job.lease_id or "", lease):
        raise SubmissionRejected(409, f"reproduction job {job_id} is not held by this lease "
                                      f"(it is {job.state}"
                                      + (f", held by {job.lease_owner}" if job.state == RUNNING
                                         else "")
                                      + "): another worker took it over after the lease ran "
                                        "out, or it was finished; drop this run's result")
    return job


def _failed(job: ReproductionJobRow, failure: str, retry: bool, limit: int,
            now: datetime) -> None:
    """A run of ``job`` failed: queued again while it may retry and has attempts left."""
    if retry and job.attempts < limit:
        _requeue(job, f"attempt {job.attempts} of {limit} failed: {failure}; queued again")
    else:
        spent = f" (after {job.attempts} of {limit} attempts)" if retry else ""
        _end(job, FAILED, now, f"{failure}{spent}")


def _requeue(job: ReproductionJobRow, reason: str | None) -> None:
    job.state, job.reason = QUEUED, None if reason is None else reason[:MAX_REASON]
    job.lease_id = job.lease_owner = None
    job.lease_expires_at = None


def _end(job: ReproductionJobRow, state: str, now: datetime, reason: str | None) -> None:
    job.state, job.finished_at = state, now
    job.reason = None if reason is None else reason[:MAX_REASON]
    job.lease_id = None
    job.lease_expires_at = None


def _team(session: Session, submission_id: int) -> str:
    return session.execute(select(TeamRow.name).join(SubmissionRow).where(
        SubmissionRow.id == submission_id)).scalar_one()


def _view(job: ReproductionJobRow, team: str) -> JobView:
    return JobView(job_id=job.id, submission_id=job.submission_id, team=team, phase=job.phase,
                   private=job.private, origin=job.origin, state=job.state, reason=job.reason,
                   attempts=job.attempts, worker=job.lease_owner,
                   lease_expires_at=job.lease_expires_at, heartbeat_at=job.heartbeat_at,
                   queued_at=job.queued_at, started_at=job.started_at,
                   finished_at=job.finished_at)
