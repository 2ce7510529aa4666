"""The reproduction workers' side of the queue: claim a job, hold it by a lease, finish it.

A worker claims the oldest claimable job: a queued one, or a running one whose lease ran out
(its worker died; that run counts as an attempt). The claim gives a lease id that only the
claimer knows and an expiry; the worker extends it by heartbeats while it runs, and finishes
the job with the verdict's report (stored as ``POST .../reproduction`` stores it, in the same
transaction), a failure or a release. Every step checks the lease under the job's row lock
(``SELECT ... FOR UPDATE``, ``SKIP LOCKED`` for the claim, on PostgreSQL; SQLite's one writer
at a time): two workers never hold one job, and a worker whose lease was taken over can
neither extend it nor finish the job (409).
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from evaluation.errors import SubmissionRejected
from evaluation.server.db import ReproductionJobRow, iso
from evaluation.server.store._job_requests import (
    MAX_FINISH_BYTES,
    PLATFORM,
    ClaimRequest,
    FinishRequest,
    HeartbeatRequest,
    read_request,
)
from evaluation.server.store._jobs import (
    FAILED,
    QUEUED,
    REPRODUCE,
    RESCORE,
    RUNNING,
    SCORE,
    SCORED,
    JobView,
    Lease,
    attempts_allowed,
    end_job,
    job_team,
    job_view,
    requeue_job,
)
from evaluation.server.store._reproductions import check_report, write_report
from evaluation.server.store._rescores import rescore_version, write_rescored
from evaluation.server.store._scoring import read_scoring, write_scoring

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


def claim_job(db: Database, body: bytes) -> Lease | None:
    """Give the oldest claimable job to the worker that sent ``body`` (``ClaimRequest``).

    Claimable: queued, or running with a lease that ran out (its worker is gone: that run
    counts as an attempt, and a job out of attempts is marked failed instead). None when no
    job is claimable.

    Raises
    ------
    SubmissionRejected
        422 for an invalid body.
    """

    request = read_request(ClaimRequest, body, "claim")
    now = db.now()
    limit = attempts_allowed(db)
    with db.writing() as session:
        while True:
            query = select(ReproductionJobRow).where(or_(
                ReproductionJobRow.state == QUEUED,
                and_(ReproductionJobRow.state == RUNNING,
                     ReproductionJobRow.lease_expires_at <= now)))
            if not request.private:
                query = query.where(ReproductionJobRow.private.is_(False))
            query = query.where(ReproductionJobRow.kind.in_(request.kinds))
            job = session.scalars(query.order_by(ReproductionJobRow.id).limit(1)
                                  .with_for_update(skip_locked=True)).first()
            if job is None:
                return None
            if job.state == RUNNING and job.attempts >= limit:
                end_job(job, FAILED, now, f"its worker stopped answering (the lease of "
                                       f"{job.lease_owner} ran out at "
                                       f"{iso(job.lease_expires_at or now)}) on attempt "
                                       f"{job.attempts} of {limit}", PLATFORM)
                continue
            lease = secrets.token_urlsafe(24)
            job.state, job.attempts, job.reason = RUNNING, job.attempts + 1, None
            job.lease_id, job.lease_owner = lease, request.worker
            job.lease_expires_at = now + timedelta(seconds=request.lease_s)
            job.heartbeat_at = job.started_at = now
            return Lease(job=job_view(job, job_team(session, job.submission_id)), lease=lease,
                         expires_at=job.lease_expires_at)


def heartbeat_job(db: Database, job_id: int, body: bytes) -> Lease:
    """Extend the lease of job ``job_id`` to ``lease_s`` from now.

    Raises
    ------
    SubmissionRejected
        404 for no such job; 409 when the lease is not (or no longer) the caller's: the job
        was taken over by another worker, or finished; 422 for an invalid body.
    """

    request = read_request(HeartbeatRequest, body, "heartbeat")
    now = db.now()
    with db.writing() as session:
        job = _held(session, job_id, request.lease)
        job.lease_expires_at = now + timedelta(seconds=request.lease_s)
        job.heartbeat_at = now
        return Lease(job=job_view(job, job_team(session, job.submission_id)), lease=request.lease,
                     expires_at=job.lease_expires_at)


def finish_job(db: Database, job_id: int, body: bytes) -> JobView:
    """End the run of job ``job_id`` that the caller holds: with a verdict's report (stored as
    the reproduction route stores it, in the same transaction), a failure or a release.

    Raises
    ------
    SubmissionRejected
        404 for no such job; 409 when the lease is not the caller's (the job was taken over:
        nothing is stored); 422 for an invalid body or report.
    """

    request = read_request(FinishRequest, body, "finish", MAX_FINISH_BYTES)
    kind = request.kind()
    with db.reading() as session:
        submission_id = session.scalar(select(ReproductionJobRow.submission_id).where(
            ReproductionJobRow.id == job_id))
    if submission_id is None:
        raise SubmissionRejected(404, f"no reproduction job {job_id}")
    checked = check_report(db, submission_id, request.report) if kind == "report" else None
    scored = read_scoring(db, submission_id, request.scored) if kind == "scored" else None
    now = db.now()
    with db.writing() as session:
        job = _held(session, job_id, request.lease)
        expected = {"report": (REPRODUCE,), "scored": (SCORE, RESCORE)}.get(kind)
        if expected is not None and job.kind not in expected:
            raise SubmissionRejected(422, f"job {job_id} is a {job.kind} job: finish it with "
                                          f"{'report' if job.kind == REPRODUCE else 'scored'}")
        wrong = (rescore_version(session, job, request.harness_version)
                 if scored is not None and job.kind == RESCORE else None)
        if checked is not None:
            write_report(db, session, submission_id, checked)
            end_job(job, checked.report.verdict, now, request.note)
        elif wrong is not None:
            _failed(job, wrong[0], wrong[1], attempts_allowed(db), now, PLATFORM)
        elif scored is not None and job.kind == RESCORE:
            write_rescored(session, job, scored, request.harness_version, now)
            end_job(job, SCORED, now, request.note)
        elif scored is not None:
            write_scoring(session, submission_id, scored, now, request.harness_version)
            end_job(job, SCORED, now, request.note)
        elif kind == "release":
            job.attempts = max(0, job.attempts - 1)  # the run was not done: not counted
            requeue_job(job, f"released by its worker ({request.release}); queued again")
        else:
            _failed(job, request.failure or "", request.retry, attempts_allowed(db), now,
                    request.failure_cause())
        return job_view(job, job_team(session, submission_id))


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
            now: datetime, cause: str) -> None:
    """A run of ``job`` failed (``cause``: whose reason): queued again while it may retry and
    has attempts left."""
    if retry and job.attempts < limit:
        requeue_job(job, f"attempt {job.attempts} of {limit} failed: {failure}; queued again")
    else:
        spent = f" (after {job.attempts} of {limit} attempts)" if retry else ""
        end_job(job, FAILED, now, f"{failure}{spent}", cause)
