"""The workers' queue as people see it: a team's places in it, the organizers' overview.

A team sees each job of its own submissions: its state, its place among the queued jobs of
its kind (the workers take them oldest first) and an estimated start; the team also sees how
many jobs of each kind wait in all (the queue's length), never whose.

The estimate is deterministic and explained: ``median`` is the median duration (start to
finish) of the last ``HISTORY`` jobs of that kind that ended with a result, and the workers
run ``slots`` jobs of that kind at once (the running ones, at least 1). A queued job with
``ahead`` jobs before it starts after ``rounds = ahead // slots`` rounds, plus one when every
slot is busy now: ``estimated start = now + rounds × median``. With no finished job of its
kind yet, the estimate is "unknown".

The organizers see the counts per phase and state, the oldest waiting job, each worker (a
job's lease holder: its last heartbeat and the jobs it holds now), the failed jobs with their
reasons, and the running jobs that look stuck: silent for longer than ``STUCK_BEATS`` heartbeat
intervals (a worker beats every third of its lease) while their lease still runs, or whose
lease ran out (the next claim takes them over).
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from evaluation.server.db import ReproductionJobRow, SubmissionRow
from evaluation.server.store._jobs import (
    FAILED,
    JOB_KINDS,
    JOB_STATES,
    QUEUED,
    RUNNING,
    JobView,
    job_counts,
    list_jobs,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: How many of the latest finished jobs of a kind the estimate takes the median of.
HISTORY = 20
#: A worker beats every ``1 / BEATS_PER_LEASE`` of its lease (``evaluation.reproduce``).
BEATS_PER_LEASE = 3
#: A running job silent for longer than this many heartbeat intervals is flagged as stuck.
STUCK_BEATS = 1.5
#: The states of a job that ended with a result (their durations make the estimate).
_RESULTS = ("reproduced", "not reproduced", "scored")


@dataclass(frozen=True)
class Estimate:
    """How long a job of ``kind`` takes and how many run at once, from the queue's history.

    ``median_s`` is None ("unknown") before any job of the kind ended with a result;
    ``timed`` says of how many jobs it is the median (at most ``HISTORY``).
    """

    kind: str
    median_s: float | None
    timed: int
    queued: int
    running: int

    @property
    def slots(self) -> int:
        """The jobs of this kind the workers run at once (the running ones; at least 1)."""
        return max(1, self.running)

    def rounds(self, ahead: int) -> int:
        """The rounds of jobs before a queued job with ``ahead`` jobs before it starts."""
        return ahead // self.slots + (1 if self.running >= self.slots else 0)

    def wait_s(self, ahead: int) -> float | None:
        """Seconds before that job starts; None when unknown."""
        return None if self.median_s is None else self.rounds(ahead) * self.median_s

    def basis(self, ahead: int) -> str:
        """The estimate of that job, in words."""
        if self.median_s is None:
            return f"unknown: no {self.kind} job has finished yet"
        return (f"{self.rounds(ahead)} round(s) x {self.median_s:.1f} s (the median of the "
                f"last {self.timed} {self.kind} jobs); {ahead} queued before it, "
                f"{self.running} running, {self.slots} at once")


@dataclass(frozen=True)
class QueuePlace:
    """One job of a team's submission as the team sees it.

    ``position`` is its place among the queued jobs of its kind (1: the next one taken),
    ``estimated_start`` when it should start (None: not queued, or unknown; ``basis`` says
    which and how it was computed).
    """

    submission_id: int
    job_id: int
    kind: str
    state: str
    reason: str | None
    position: int | None
    estimated_start: datetime | None
    basis: str
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class TeamQueue:
    """A team's jobs (``places``, by submission and kind) and the queue's length per kind."""

    places: tuple[QueuePlace, ...]
    queued: dict[str, int]
    estimates: tuple[Estimate, ...]

    def of(self, submission_id: int) -> tuple[QueuePlace, ...]:
        """The jobs of one submission."""
        return tuple(p for p in self.places if p.submission_id == submission_id)


@dataclass(frozen=True)
class WorkerView:
    """A worker as the queue knows it: the latest heartbeat of any job it held, the jobs it
    holds now."""

    name: str
    last_heartbeat: datetime | None
    current_jobs: tuple[int, ...]


@dataclass(frozen=True)
class StuckJob:
    """A running job that looks stuck: ``problem`` is "silent" (no heartbeat for
    ``silent_s``, longer than ``STUCK_BEATS`` intervals of ``interval_s``, its lease still
    running for ``lease_left_s``) or "lease expired" (the next claim takes it over)."""

    job: JobView
    problem: str
    silent_s: float
    interval_s: float
    lease_left_s: float


@dataclass(frozen=True)
class QueueOverview:
    """The queue as the organizers see it (``admin queue``, ``GET /api/v1/queue``, ``/queue``).
    """

    now: datetime
    counts: dict[str, dict[str, int]]
    kinds: dict[str, dict[str, int]]
    oldest_waiting: JobView | None
    workers: tuple[WorkerView, ...]
    failed: tuple[JobView, ...]
    stuck: tuple[StuckJob, ...]
    estimates: tuple[Estimate, ...]


# --------------------------------------------------------------------------- estimates


def estimates(db: Database) -> dict[str, Estimate]:
    """``{kind: Estimate}`` of every kind of job, from the queue now."""
    with db.reading() as session:
        waiting = session.execute(
            select(ReproductionJobRow.kind, ReproductionJobRow.state, func.count())
            .where(ReproductionJobRow.state.in_((QUEUED, RUNNING)))
            .group_by(ReproductionJobRow.kind, ReproductionJobRow.state)).all()
        history = {kind: session.execute(
            select(ReproductionJobRow.started_at, ReproductionJobRow.finished_at)
            .where(ReproductionJobRow.kind == kind, ReproductionJobRow.state.in_(_RESULTS),
                   ReproductionJobRow.started_at.is_not(None),
                   ReproductionJobRow.finished_at.is_not(None))
            .order_by(ReproductionJobRow.finished_at.desc(), ReproductionJobRow.id.desc())
            .limit(HISTORY)).all() for kind in JOB_KINDS}
    counts = {(kind, state): n for kind, state, n in waiting}
    result = {}
    for kind in JOB_KINDS:
        durations = [max(0.0, (end - start).total_seconds()) for start, end in history[kind]
                     if start is not None and end is not None]
        result[kind] = Estimate(kind=kind,
                                median_s=statistics.median(durations) if durations else None,
                                timed=len(durations), queued=counts.get((kind, QUEUED), 0),
                                running=counts.get((kind, RUNNING), 0))
    return result


def _queued_ids(db: Database) -> dict[str, list[int]]:
    """``{kind: ids of its queued jobs, in the order the workers take them}``."""
    with db.reading() as session:
        found = session.execute(select(ReproductionJobRow.kind, ReproductionJobRow.id)
                                .where(ReproductionJobRow.state == QUEUED)
                                .order_by(ReproductionJobRow.id)).all()
    ids: dict[str, list[int]] = {kind: [] for kind in JOB_KINDS}
    for kind, job_id in found:
        ids.setdefault(kind, []).append(job_id)
    return ids


# --------------------------------------------------------------------------- a team's


def team_queue(db: Database, team_id: int | None, phase: str | None = None) -> TeamQueue:
    """The jobs of team ``team_id``'s submissions (of ``phase`` when given; none for None)
    with their places in the queue, and the queue's length per kind (every team's jobs
    counted, none shown)."""
    query = (select(ReproductionJobRow)
             .join(SubmissionRow, SubmissionRow.id == ReproductionJobRow.submission_id)
             .where(SubmissionRow.team_id == team_id)
             .order_by(ReproductionJobRow.submission_id, ReproductionJobRow.kind))
    if phase is not None:
        query = query.where(ReproductionJobRow.phase == phase)
    with db.reading() as session:
        jobs = [] if team_id is None else list(session.scalars(query))
    now = db.now()
    known = estimates(db)
    queued = _queued_ids(db)
    places = []
    for job in jobs:
        position = start = None
        if job.state == QUEUED:
            ahead = bisect_left(queued.get(job.kind, []), job.id)
            position = ahead + 1
            estimate = known[job.kind]
            wait = estimate.wait_s(ahead)
            start = None if wait is None else now + timedelta(seconds=wait)
            basis = estimate.basis(ahead)
        elif job.state == RUNNING:
            basis = "running since it started"
        else:
            basis = f"{job.state}: no longer queued"
        places.append(QueuePlace(submission_id=job.submission_id, job_id=job.id,
                                 kind=job.kind, state=job.state, reason=job.reason,
                                 position=position, estimated_start=start, basis=basis,
                                 queued_at=job.queued_at, started_at=job.started_at,
                                 finished_at=job.finished_at))
    return TeamQueue(places=tuple(places),
                     queued={kind: len(queued.get(kind, [])) for kind in JOB_KINDS},
                     estimates=tuple(known[kind] for kind in JOB_KINDS))


# --------------------------------------------------------------------------- the organizers'


def queue_overview(db: Database) -> QueueOverview:
    """The queue as the organizers see it, now."""
    now = db.now()
    counts = job_counts(db)
    known = estimates(db)
    with db.reading() as session:
        by_kind = session.execute(
            select(ReproductionJobRow.kind, ReproductionJobRow.state, func.count())
            .group_by(ReproductionJobRow.kind, ReproductionJobRow.state)).all()
        workers = session.execute(
            select(ReproductionJobRow.lease_owner, func.max(ReproductionJobRow.heartbeat_at))
            .where(ReproductionJobRow.lease_owner.is_not(None))
            .group_by(ReproductionJobRow.lease_owner)
            .order_by(ReproductionJobRow.lease_owner)).all()
    kinds: dict[str, dict[str, int]] = {}
    for kind, state, n in by_kind:
        kinds.setdefault(kind, dict.fromkeys(JOB_STATES, 0))[state] = n
    queued = list_jobs(db, state=QUEUED)
    running = list_jobs(db, state=RUNNING)
    held: dict[str, list[int]] = {}
    for job in running:
        if job.worker is not None:
            held.setdefault(job.worker, []).append(job.job_id)
    return QueueOverview(
        now=now, counts=counts, kinds=kinds,
        oldest_waiting=min(queued, key=lambda j: (j.queued_at, j.job_id), default=None),
        workers=tuple(WorkerView(name=name, last_heartbeat=beat,
                                 current_jobs=tuple(held.get(name, ())))
                      for name, beat in workers if name is not None),
        failed=tuple(list_jobs(db, state=FAILED)),
        stuck=tuple(s for s in (stuck_job(job, now) for job in running) if s is not None),
        estimates=tuple(known[kind] for kind in JOB_KINDS))


def stuck_job(job: JobView, now: datetime) -> StuckJob | None:
    """``job`` flagged as stuck at ``now``, or None when it is running as expected.

    A lease of ``L`` seconds, extended by each heartbeat, ends ``L`` after the latest one: a
    worker beats every ``L / BEATS_PER_LEASE``. Silence longer than ``STUCK_BEATS`` of those
    intervals is flagged while the lease still runs (the worker may be gone, and its job is
    taken over only when the lease ends); a lease that ran out is flagged too.
    """
    if job.state != RUNNING or job.lease_expires_at is None:
        return None
    beat = job.heartbeat_at or job.started_at or job.queued_at
    lease_s = max(0.0, (job.lease_expires_at - beat).total_seconds())
    interval = lease_s / BEATS_PER_LEASE
    silent = max(0.0, (now - beat).total_seconds())
    left = (job.lease_expires_at - now).total_seconds()
    if left <= 0:
        problem = "lease expired"
    elif silent > STUCK_BEATS * interval:
        problem = "silent"
    else:
        return None
    return StuckJob(job=job, problem=problem, silent_s=silent, interval_s=interval,
                    lease_left_s=max(0.0, left))
