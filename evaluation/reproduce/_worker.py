"""Reproduction workers: ``python -m evaluation worker`` takes its jobs from the leaderboard.

A job is a reproduction (below) or a scoring job: the submission's uploaded predictions,
fetched (``GET .../predictions``) and scored with the organizer's data by the harness's own
fold scorer (``score_upload``), in a thread of this process, with no sandbox (no participant
code runs: the lists are data); its numbers are sent with the job's lease (``scored``). Lists
that cannot be scored (other users than a fold's, ids outside the catalogue) fail the job at
once.

A worker claims jobs through the organizers' API (``POST /api/v1/jobs/claim``), each with a
lease that a thread of the worker extends by heartbeats while the job runs, and runs each as
``reproduce --many`` runs a row (``run_row``: the checkout's environment from the cache, the
model in a bubblewrap sandbox, the comparison), in a thread of this process or as a Ray task.
The worker holds the admin token and makes every call to the leaderboard; a job's run gets the
fetched upload and returns the report, which the worker sends with the job's lease
(``.../finish``), its log tail scrubbed of the token and the private seed.

Where a submission's code comes from: the organizer's checkouts folder, ``DIR/<team>/<id>/``
when it exists (one checkout per submission), else ``DIR/<team>/`` (the team's repository).
A missing or invalid checkout fails the job at once (the team, or the organizer, must provide
one; ``admin jobs retry ID`` queues it again); an infrastructure failure (the upload cannot be
fetched, the environment cannot be built, the harness fails) is sent as one, and the server
queues the job again until its attempts run out. A heartbeat or a finish that the server
refuses (409: the lease ran out and another worker took the job over) drops the run's result.
A claim that the server refuses for the token (401, 404) stops the worker with the error; one
that cannot reach the server is tried again every poll (with ``once``: stops it).

Stopping (``stop()``, which the command calls on SIGTERM and SIGINT): the worker claims
nothing more and hands its running jobs back to the queue (a release, which does not count as
an attempt); when even that fails, their leases simply run out.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation._version import __version__
from evaluation.contract import team_name_problem
from evaluation.errors import ConfigError, EvalRSError
from evaluation.reproduce._batch import BatchRow
from evaluation.reproduce._client import LeaderboardClient, LostLease, Refused
from evaluation.reproduce._many import BatchSettings, RowResult, import_ray, run_row
from evaluation.reproduce._reproduce import check_checkout
from evaluation.reproduce._sandbox import require_sandbox
from evaluation.reproduce._scoring_job import ScoringFailed, score_upload
from evaluation.reproduce._scrub import client_secrets, scrub

#: Seconds between two claims while the queue is empty (``--poll``).
DEFAULT_POLL_S = 10.0
#: Seconds a lease lasts from each claim or heartbeat; the worker beats every third of it.
DEFAULT_LEASE_S = 120.0
#: The longest reason or note sent with a finish (characters; the server keeps 2000).
MAX_REASON = 2000

#: What runs one job: (row, upload, settings, private seed) -> (its result, the report to
#: send, None when the run could not be done). ``run_row`` by default; the tests give others.
Runner = Callable[[BatchRow, dict, BatchSettings, int | None], tuple[RowResult, dict | None]]
#: What runs one scoring job: (upload, predictions, data source) -> the numbers to send.
Scorer = Callable[..., dict]
#: The kinds of job (a rescore is scored as a scoring job; the server keeps its numbers apart).
REPRODUCE, SCORE, RESCORE = "reproduce", "score", "rescore"
SCORING = (SCORE, RESCORE)


@dataclass(frozen=True)
class Job:
    """A claimed job: what to reproduce and the lease that holds it."""

    job_id: int
    submission_id: int
    team: str
    phase: str
    private: bool
    attempts: int
    lease: str = field(repr=False)
    kind: str = REPRODUCE

    @classmethod
    def from_claim(cls, answer: dict[str, Any]) -> Job:
        """The job of a claim's answer; ``EvalRSError`` when the answer is not one."""
        try:
            job = answer["job"]
            return cls(job_id=int(job["job_id"]), submission_id=int(job["submission_id"]),
                       team=str(job["team"]), phase=str(job["phase"]),
                       private=bool(job["private"]), attempts=int(job["attempts"]),
                       lease=str(answer["lease"]), kind=str(job.get("kind", REPRODUCE)))
        except (KeyError, TypeError, ValueError):
            raise EvalRSError("the server's answer to a claim has no job and lease: is it a "
                              "leaderboard of this harness?") from None


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker runs.

    Attributes
    ----------
    checkouts : Path
        The organizer's folder of participants' checkouts (``<team>/<id>/`` or ``<team>/``).
    batch : BatchSettings
        What every run shares (log folder, environments, limits, sandbox).
    executor : {"local", "ray"}
        Runs in threads of this process, or one Ray task per job.
    jobs : int
        Jobs held at once.
    num_cpus : float
        CPUs each Ray task asks for.
    poll_s : float
        Seconds between claims while the queue is empty.
    lease_s : float
        Seconds each lease lasts from a claim or heartbeat.
    once : bool
        Exit when the queue is empty and no job runs (instead of waiting for more).
    private_seed : int, optional
        The private fold seed; without it the worker claims only jobs without private folds.
    name : str
        The worker's name in the queue (its host and process by default).
    """

    checkouts: Path
    batch: BatchSettings
    executor: str = "local"
    jobs: int = 1
    num_cpus: float = 1.0
    poll_s: float = DEFAULT_POLL_S
    lease_s: float = DEFAULT_LEASE_S
    once: bool = False
    private_seed: int | None = field(default=None, repr=False)
    name: str = field(default_factory=lambda: default_name())


def default_name() -> str:
    """The worker's name when none is given: its host and process id, as printable ASCII (the
    server's rule for a worker's name)."""
    host = "".join(c if " " <= c <= "~" else "?" for c in socket.gethostname())
    return f"{host[:100]}:{os.getpid()}"


def find_checkout(checkouts: Path, team: str, submission_id: int) -> Path:
    """The checkout of submission ``submission_id`` of ``team``: ``checkouts/<team>/<id>/``
    when it exists, else ``checkouts/<team>/``, checked (``check_checkout``).

    The team's name is its folder when it keeps the leaderboard's team-name rule
    (``evaluation.contract.team_name_problem``), which every team added since the rule holds.

    Raises
    ------
    ConfigError
        When the team's name breaks the rule (a team added before it: ``..``, ``a/b`` ...),
        neither folder exists, or the checkout is invalid (no ``submission/MyModel.py``, a
        link leading out of it ...).
    """
    problem = team_name_problem(team)
    if problem is not None:
        raise ConfigError(f"team {team!r}: its name cannot be a folder of the checkouts folder "
                          f"({problem.rstrip('.')}); reproduce its submissions with `reproduce "
                          f"CHECKOUT` instead")
    folder = checkouts / team
    own = folder / str(submission_id)
    chosen = own if own.is_dir() else folder
    if not chosen.is_dir():
        raise ConfigError(f"no checkout of team {team!r} for submission {submission_id}: the "
                          f"organizers' checkouts folder has neither {team}/{submission_id}/ "
                          f"nor {team}/")
    try:
        return check_checkout(chosen)
    except ConfigError as exc:  # the folder's absolute path is the organizer's business
        raise ConfigError(str(exc).replace(str(checkouts.resolve()), "<checkouts>")) from None


class Worker:
    """Claims jobs, runs them, heartbeats their leases and finishes them (see the module).

    Parameters
    ----------
    client : LeaderboardClient
        The server, with an organizer's token.
    settings : WorkerSettings
    runner : callable, optional
        Runs one job (default ``run_row``: the sandboxed reproduction).
    log : callable
        Receives one line per event.
    """

    def __init__(self, client: LeaderboardClient, settings: WorkerSettings, *,
                 runner: Runner = run_row, log: Callable[[str], None] = print,
                 scorer: Scorer = score_upload) -> None:
        self.client = client
        self.settings = settings
        self.runner = runner
        self.scorer = scorer
        self.log = log
        self.counts: dict[str, int] = {}
        self._secrets = client_secrets(client, settings.private_seed)
        self._active: dict[int, tuple[Job, Future]] = {}
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._ray_task: Any = None
        self._refs: dict[int, Any] = {}

    # ------------------------------------------------------------------ the loop

    def stop(self) -> None:
        """Claim nothing more, hand the running jobs back and return from ``run`` (safe from
        a signal handler)."""
        self._stop.set()
        self._wake.set()

    def run(self) -> dict[str, int]:
        """Work until stopped (or, with ``once``, until the queue is empty and nothing runs);
        returns how the jobs ended: ``{"reproduced": n, "not reproduced": n, ...}``."""
        self._prepare()
        beats = threading.Thread(target=self._heartbeats, name="evalrs-heartbeats",
                                 daemon=True)
        beats.start()
        try:
            while True:
                self._wake.clear()
                self._reap()
                if self._stop.is_set():
                    break
                claimed = self._fill()
                if self.settings.once and not claimed and not self._active:
                    break
                if not claimed:
                    self._wake.wait(self.settings.poll_s)
        finally:
            self._stop.set()
            self._release_all()
        return dict(self.counts)

    def _prepare(self) -> None:
        """Check what every job needs before the first claim: a sandbox (or Ray), the log
        folder."""
        if self.settings.executor == "ray":
            ray = import_ray()
            if not ray.is_initialized():
                ray.init()  # RAY_ADDRESS, when set, names the cluster to join
            self._ray_task = ray.remote(self.runner).options(num_cpus=self.settings.num_cpus)
        elif self.runner is run_row:
            require_sandbox(self.settings.batch.unsafe_no_sandbox)
        self.settings.batch.log_dir.mkdir(parents=True, exist_ok=True)

    def _fill(self) -> bool:
        """Claim jobs while a place is free; whether one was claimed."""
        claimed = False
        while len(self._active) < self.settings.jobs and not self._stop.is_set():
            try:
                answer = self.client.claim(self.settings.name, self.settings.lease_s,
                                           private=self.settings.private_seed is not None)
            except Refused as exc:
                if exc.status in (401, 403, 404) or self.settings.once:
                    raise  # a wrong token or server: waiting does not help
                self.log(f"claim refused (trying again in {self.settings.poll_s:g} s): {exc}")
                break
            except EvalRSError as exc:
                if self.settings.once:
                    raise
                self.log(f"claim failed (trying again in {self.settings.poll_s:g} s): {exc}")
                break
            if answer is None:
                break
            job = Job.from_claim(answer)
            claimed = True
            self.log(f"job {job.job_id}: {'scoring of ' if job.kind in SCORING else ''}"
                     f"submission {job.submission_id} of team {job.team!r} "
                     f"(phase {job.phase}, attempt {job.attempts}"
                     f"{', private folds' if job.private else ''})")
            if job.kind in SCORING:
                self._start_scoring(job)
            else:
                self._start(job)
        return claimed

    def _start(self, job: Job) -> None:
        """Find the job's checkout and upload and start its run; a job that cannot start is
        finished at once (a missing checkout: failed; an upload not fetched: retried)."""
        try:
            checkout = find_checkout(self.settings.checkouts, job.team, job.submission_id)
        except ConfigError as exc:
            self._finish(job, {"failure": str(exc), "retry": False}, "failed")
            return
        try:
            payload = self.client.payload(job.submission_id)
        except EvalRSError as exc:
            self._finish(job, {"failure": f"the upload could not be fetched: {exc}"},
                         "retried")
            return
        row = BatchRow(submission=job.submission_id, checkout=checkout, private=job.private,
                       line=0)
        seed = self.settings.private_seed if job.private else None
        future = self._submit(job, row, payload, seed)
        with self._lock:
            self._active[job.job_id] = (job, future)
        future.add_done_callback(lambda _: self._wake.set())

    def _start_scoring(self, job: Job) -> None:
        """Fetch a scoring job's upload and predictions and score them in a thread (no
        sandbox: no participant code runs); a fetch that fails is retried."""
        try:
            payload = self.client.payload(job.submission_id)
            stream = self.client.predictions(job.submission_id)
        except EvalRSError as exc:
            self._finish(job, {"failure": f"the upload could not be fetched: {exc}"},
                         "retried")
            return
        future: Future = Future()
        source = self.settings.batch.source

        def target() -> None:
            try:
                future.set_result(self.scorer(payload, stream, source=source))
            except BaseException as exc:  # the job's failure, sent by the loop
                future.set_exception(exc)

        threading.Thread(target=target, name=f"evalrs-scoring-{job.submission_id}",
                         daemon=True).start()
        with self._lock:
            self._active[job.job_id] = (job, future)
        future.add_done_callback(lambda _: self._wake.set())

    def _submit(self, job: Job, row: BatchRow, payload: dict, seed: int | None) -> Future:
        """Start one run: a Ray task, or a daemon thread (a stopped worker does not wait for
        it: its sandbox dies with the process)."""
        if self._ray_task is not None:
            ref = self._ray_task.remote(row, payload, self.settings.batch, seed)
            self._refs[job.job_id] = ref  # cancelled when the worker stops
            return ref.future()
        future: Future = Future()

        def target() -> None:
            try:
                future.set_result(self.runner(row, payload, self.settings.batch, seed))
            except BaseException as exc:  # the job's failure, sent by the loop
                future.set_exception(exc)

        threading.Thread(target=target, name=f"evalrs-job-{row.submission}",
                         daemon=True).start()
        return future

    def _reap(self) -> None:
        """Finish the jobs whose runs ended."""
        with self._lock:
            done = [(job, f) for job, f in self._active.values() if f.done()]
            for job, _ in done:
                del self._active[job.job_id]
                self._refs.pop(job.job_id, None)
        for job, future in done:
            if job.job_id in self._lost:
                self.log(f"job {job.job_id}: another worker took it over; this run's result "
                         f"is dropped")
                self._count("lost")
                continue
            if job.kind in SCORING:
                self._finish_scoring(job, future)
                continue
            try:
                result, report = future.result()
            except Exception as exc:
                self._finish(job, {"failure": f"the harness failed: {type(exc).__name__}: "
                                              f"{exc}"}, "retried")
                continue
            self._finish(job, *self._outcome(job, result, report))

    def _finish_scoring(self, job: Job, future: Future) -> None:
        """Send a scoring job's numbers, or its failure: the upload's own (not retried) or
        the harness's (retried)."""
        try:
            scored = future.result()
        except ScoringFailed as exc:
            self._finish(job, {"failure": str(exc), "retry": False, "cause": "team"},
                         "failed")
            return
        except Exception as exc:
            self._finish(job, {"failure": f"the scoring failed: {type(exc).__name__}: {exc}",
                               "cause": "platform"}, "retried")
            return
        # the version the server records as having computed the numbers (a rescore asks
        # for its own)
        self._finish(job, {"scored": scored, "harness_version": __version__}, "scored")

    def _outcome(self, job: Job, result: RowResult, report: dict | None
                 ) -> tuple[dict[str, Any], str]:
        """The finish of a run that ended: its report (the reasons against the verdict, or
        why the private folds were not evaluated, as the note), or its failure."""
        if report is None:
            return {"failure": "; ".join(result.reasons) or "the run ended without a verdict"}, \
                "retried"
        report = {**report, "log_tail": scrub(str(report.get("log_tail", "")), self._secrets)}
        body: dict[str, Any] = {"report": report}
        if result.reasons:
            body["note"] = "; ".join(result.reasons)
        return body, str(report.get("verdict"))

    def _finish(self, job: Job, body: dict[str, Any], outcome: str) -> None:
        """Send the finish of ``job`` (its reasons scrubbed); a refusal for a lost lease or an
        unreachable server is logged (the lease then runs out)."""
        for key in ("failure", "note", "release"):
            if key in body:
                body[key] = self._shown(str(body[key]))
        try:
            answer = self.client.finish(job.job_id, {"lease": job.lease, **body})
        except LostLease:
            self.log(f"job {job.job_id}: the lease was taken over; the result is dropped")
            self._count("lost")
            return
        except EvalRSError as exc:
            self.log(f"job {job.job_id}: the finish was not recorded ({exc}); the lease will "
                     f"run out and the job return to the queue")
            self._count("unsent")
            return
        state = answer.get("status", outcome)
        reason = (answer.get("job") or {}).get("reason")
        self.log(f"job {job.job_id}: {state}" + (f" ({reason})" if reason else ""))
        self._count(str(state))

    def _shown(self, reason: str) -> str:
        """A reason as the team may read it: without the secrets, and with the worker's
        folders named instead of shown."""
        batch = self.settings.batch
        for folder, name in ((batch.log_dir, "<logs>"), (batch.env_cache, "<envs>"),
                             (self.settings.checkouts, "<checkouts>")):
            reason = reason.replace(str(folder.resolve()), name).replace(str(folder), name)
        return scrub(reason, self._secrets)[:MAX_REASON]

    def _count(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    # ------------------------------------------------------------------ leases

    def _heartbeats(self) -> None:
        """Extend every running job's lease every third of its length, until stopped."""
        interval = max(0.1, self.settings.lease_s / 3)
        while not self._stop.wait(interval):
            with self._lock:
                jobs = [job for job, _ in self._active.values() if job.job_id not in self._lost]
            for job in jobs:
                try:
                    self.client.heartbeat(job.job_id, job.lease, self.settings.lease_s)
                except LostLease:
                    self._lost.add(job.job_id)
                    self.log(f"job {job.job_id}: the lease is no longer this worker's; its "
                             f"result will be dropped")
                except EvalRSError as exc:
                    self.log(f"job {job.job_id}: heartbeat failed ({exc})")

    def _release_all(self) -> None:
        """Hand every running job back to the queue (the worker stops)."""
        with self._lock:
            running = list(self._active.values())
            self._active.clear()
        for job, future in running:
            future.cancel()
            if job.job_id in self._refs:
                self._cancel_task(self._refs.pop(job.job_id))
            if job.job_id not in self._lost:
                self._finish(job, {"release": "the worker stopped"}, "released")

    @staticmethod
    def _cancel_task(ref: Any) -> None:
        """Stop a job's Ray task (best effort: its sandbox dies with its process)."""
        try:
            import_ray().cancel(ref, force=True)
        except Exception:  # a task that ended meanwhile, a cluster that is gone
            pass
