"""The workers' queue: its jobs, how they are queued, listed and queued again.

A job is a reproduction (``kind`` "reproduce": run the model in a sandbox) or a scoring job
("score": score a predictions upload with the organizers' data, queued at every predictions
upload). A reproduction job is queued for a submission when its team marks it as a final
selection (and cancelled when the team unmarks it before a worker took it), or at its upload
when its phase says ``reproduce = "every"``, or when it is carried into a new phase (with its
scoring job, see ``_carry``); an organizer may queue a failed one again. The
workers claim, hold and finish them in ``_leases``.

An infrastructure failure (the server could not be reached, the environment could not be
built, the sandbox failed) queues the job again until it has run the competition's
``reproduce_attempts`` times; then it is "failed", with the reason. A failure of the
submission itself (no checkout for it) fails the job at once. A failed job keeps whose reason
it was (``cause``: "platform" or "team"): a submission whose job failed for the platform's
reason does not count against its team's daily limit. A "rescore" job scores a scored
submission again for an organizers' rescore (``_rescores``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from evaluation.errors import SubmissionRejected
from evaluation.server.core import DEFAULT_REPRODUCE_ATTEMPTS
from evaluation.server.db import MAX_REASON, ReproductionJobRow, SubmissionRow, TeamRow

if TYPE_CHECKING:  # annotations only: the queue needs no competition file's parsing
    from evaluation.server.core import Phase
    from evaluation.server.db import Database

#: A job's states, in the order of its life.
QUEUED, RUNNING, FAILED, SCORED = "queued", "running", "failed", "scored"
JOB_STATES = (QUEUED, RUNNING, "reproduced", "not reproduced", SCORED, FAILED)
#: The kinds of job: a reproduction, a scoring of uploaded predictions, a scoring of them again
#: for an organizers' rescore (its numbers kept pending until the rescore is applied).
REPRODUCE, SCORE, RESCORE = "reproduce", "score", "rescore"
JOB_KINDS = (REPRODUCE, SCORE, RESCORE)
#: What queued a job: a final selection, an upload, an organizer, a carry into a new phase, an
#: organizers' rescore.
CARRY = "carry"
ORIGINS = ("final", "upload", "organizer", CARRY, "rescore")


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
    kind: str = REPRODUCE
    cause: str | None = None
    rescore_id: int | None = None


@dataclass(frozen=True)
class Lease:
    """A claimed job: the job, the lease id its worker must send back, and when it ends;
    with a reproduction's claim, the competition's declared alternative protocols the worker
    also runs the model under (``RobustnessProtocol.as_json``)."""

    job: JobView
    lease: str
    expires_at: datetime
    protocols: tuple[dict, ...] = ()


# --------------------------------------------------------------------------- queueing


def queue_final(session: Session, row: SubmissionRow, phase: Phase, now: datetime,
                final: bool) -> None:
    """A final selection marked (``final``) or unmarked: queue its job, or cancel it while
    no worker took it (a job queued for another reason stays)."""
    if phase.reproduce == "none":
        return
    job = session.scalars(select(ReproductionJobRow).where(
        ReproductionJobRow.submission_id == row.id, ReproductionJobRow.kind == REPRODUCE)
        .with_for_update()).one_or_none()
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
            origin="upload", state=QUEUED, attempts=0, queued_at=now, kind=REPRODUCE))


def queue_scoring(conn: Connection, submission_id: int, phase: Phase, now: datetime) -> None:
    """Queue the scoring job of a new predictions upload (``conn``: the upload's
    transaction); it scores the public folds' lists, so it is never private."""
    conn.execute(insert(ReproductionJobRow).values(
        submission_id=submission_id, phase=phase.name, private=False, origin="upload",
        state=QUEUED, attempts=0, queued_at=now, kind=SCORE))


def new_job(submission_id: int, phase: Phase, origin: str, now: datetime
            ) -> ReproductionJobRow:
    """A queued job of ``submission_id`` (``origin``: what queued it)."""
    return ReproductionJobRow(submission_id=submission_id, phase=phase.name,
                              private=phase.private_folds, origin=origin, state=QUEUED,
                              attempts=0, queued_at=now, kind=REPRODUCE)


def new_scoring_job(submission_id: int, phase: Phase, origin: str, now: datetime
                    ) -> ReproductionJobRow:
    """A queued scoring job of ``submission_id`` (never private: it scores the public folds'
    lists)."""
    return ReproductionJobRow(submission_id=submission_id, phase=phase.name, private=False,
                              origin=origin, state=QUEUED, attempts=0, queued_at=now,
                              kind=SCORE)


def retry_job(db: Database, job_id: int) -> JobView:
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
        requeue_job(job, None)
        job.cause = None
        job.queued_at = db.now()
        return job_view(job, job_team(session, job.submission_id))


def list_jobs(db: Database, phase: str | None = None, state: str | None = None) -> list[JobView]:
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
        return [job_view(job, team) for job, team in session.execute(query)]


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
    """``{submission_id: (state, reason)}`` of the reproduction jobs of team ``team_id``'s
    submissions."""
    with db.reading() as session:
        found = session.execute(
            select(ReproductionJobRow.submission_id, ReproductionJobRow.state,
                   ReproductionJobRow.reason)
            .join(SubmissionRow, SubmissionRow.id == ReproductionJobRow.submission_id)
            .where(SubmissionRow.team_id == team_id,
                   ReproductionJobRow.kind == REPRODUCE)).all()
    return {sid: (state, reason) for sid, state, reason in found}


def team_failures(db: Database, team_id: int) -> dict[int, tuple[str, str, str | None]]:
    """``{submission_id: (kind, cause, reason)}`` of the failed scoring and reproduction jobs
    of team ``team_id``'s submissions (a failed scoring job first: it is why a submission has
    no computed numbers). A rescore's jobs are the organizers' business: not shown."""
    with db.reading() as session:
        found = session.execute(
            select(ReproductionJobRow.submission_id, ReproductionJobRow.kind,
                   ReproductionJobRow.cause, ReproductionJobRow.reason)
            .join(SubmissionRow, SubmissionRow.id == ReproductionJobRow.submission_id)
            .where(SubmissionRow.team_id == team_id, ReproductionJobRow.state == FAILED,
                   ReproductionJobRow.kind.in_((SCORE, REPRODUCE)))
            .order_by(ReproductionJobRow.kind.desc())).all()
    failures: dict[int, tuple[str, str, str | None]] = {}
    for sid, kind, cause, reason in found:  # "score" sorts before "reproduce" here
        # a job that failed before causes were kept: whose reason is not known
        failures.setdefault(sid, (kind, cause or "unknown", reason))
    return failures


# --------------------------------------------------------------------------- helpers


def attempts_allowed(db: Database) -> int:
    """The runs a job may take (the competition's ``reproduce_attempts``)."""
    if db.competition is None:
        return DEFAULT_REPRODUCE_ATTEMPTS
    return db.competition.reproduce_attempts


def requeue_job(job: ReproductionJobRow, reason: str | None) -> None:
    job.state, job.reason = QUEUED, None if reason is None else reason[:MAX_REASON]
    job.lease_id = job.lease_owner = None
    job.lease_expires_at = None


def end_job(job: ReproductionJobRow, state: str, now: datetime, reason: str | None,
            cause: str | None = None) -> None:
    """End ``job`` in ``state``; ``cause`` (of a failure): whose reason it is."""
    job.state, job.finished_at, job.cause = state, now, cause
    job.reason = None if reason is None else reason[:MAX_REASON]
    job.lease_id = None
    job.lease_expires_at = None


def job_team(session: Session, submission_id: int) -> str:
    return session.execute(select(TeamRow.name).join(SubmissionRow).where(
        SubmissionRow.id == submission_id)).scalar_one()


def job_view(job: ReproductionJobRow, team: str) -> JobView:
    return JobView(job_id=job.id, submission_id=job.submission_id, team=team, phase=job.phase,
                   private=job.private, origin=job.origin, state=job.state, reason=job.reason,
                   attempts=job.attempts, worker=job.lease_owner,
                   lease_expires_at=job.lease_expires_at, heartbeat_at=job.heartbeat_at,
                   queued_at=job.queued_at, started_at=job.started_at,
                   finished_at=job.finished_at, kind=job.kind, cause=job.cause,
                   rescore_id=job.rescore_id)
