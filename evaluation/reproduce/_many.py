"""Many reproductions at once: ``reproduce --many``, one row of a batch file each.

The process that runs the command (the driver) holds the admin token and does every call to
the leaderboard: it fetches each upload, hands it to the row's reproduction, and sends the
verdict that comes back. A row's reproduction (its environment from the cache, the evaluation
under its limits, the comparison) runs as ``reproduce(...)`` runs it for a single checkout,
only with a client that returns the fetched upload and keeps the report for the driver; so
the token never leaves the driver, and on a Ray cluster the workers need no access to the
leaderboard. Each row's model runs in a sandbox of its own with its own copy of the checkout
(a row cannot see, let alone change, another row's files); on Ray each task makes its sandbox
on its own node. Rows run one after another in this process, ``jobs`` at once in threads (each
row is a sandboxed process; the threads only wait), or one Ray task each.

A row that cannot be done (the server refuses or cannot be reached, its environment cannot
be built, the harness fails) ends as an "error" row with its reason; the others go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evaluation._util import atomic as _atomic
from evaluation._version import __version__
from evaluation.errors import ConfigError, EvalRSError
from evaluation.reproduce._batch import BatchRow
from evaluation.reproduce._client import LeaderboardClient
from evaluation.reproduce._compare import NOT_REPRODUCED, REPRODUCED
from evaluation.reproduce._env import checkout_requirements, env_python, prepare_env
from evaluation.reproduce._reproduce import Reproduction, reproduce
from evaluation.reproduce._sandbox import require_sandbox
from evaluation.reproduce._scrub import client_secrets, scrub
from evaluation.runner import import_ray as runner_import_ray

#: The verdict of a row that could not be done.
ERROR = "error"
#: The executors of ``reproduce_many``.
EXECUTORS = ("local", "ray")
#: The report's file name in the log folder, unless ``--report`` says otherwise.
REPORT_FILE = "reproduce-many.json"


@dataclass(frozen=True)
class BatchSettings:
    """What every row of a batch shares.

    Attributes
    ----------
    log_dir : Path
        Where each row's logs go (``reproduce-ID.log``, ``.env`` for the build,
        ``.private`` for the private folds).
    env_cache : Path
        The environment cache (rows with the same requirements share an environment).
    env : Path, optional
        A prepared environment for every row instead of the cache.
    timeout, memory_mb
        The limits of each evaluation subprocess.
    source : str, optional
        The dataset source to rebuild, when not each upload's.
    unsafe_no_sandbox : bool
        Run the models unconfined where no sandbox can be made (never for official runs).
    index_url : str, optional
        The organizer's package index for the environments (default: the installer's).
    allow_sdists : bool
        Let environments take packages that have no wheel, built inside the sandbox (default:
        wheels only; such a package is refused).
    """

    log_dir: Path
    env_cache: Path
    env: Path | None = None
    timeout: float = 3600.0
    memory_mb: int | None = 8192
    source: str | None = None
    unsafe_no_sandbox: bool = False
    index_url: str | None = None
    allow_sdists: bool = False


@dataclass
class RowResult:
    """What became of one row; a line of the final table and of the JSON report.

    Attributes
    ----------
    submission : int
    checkout : str
    verdict : str
        "reproduced", "not reproduced" or "error".
    fingerprint_ok : bool or None
        Whether the model fingerprint matches the upload's (None: not known, for an error).
    differing : int or None
        The (fold, test) values not equal to the upload's within 1e-9 (inside the uploaded
        interval counts too: the verdict says whether they were acceptable).
    worst_difference : float or None
        The reproduced minus the uploaded value of largest magnitude (None: no value compared).
    seconds : float
        Wall-clock seconds of the row, its environment included.
    log : str
        The evaluation's log.
    private : bool
        Whether the private folds were asked for.
    reasons : list of str
        Why the row is not reproduced, or why it could not be done.
    """

    submission: int
    checkout: str
    verdict: str
    fingerprint_ok: bool | None = None
    differing: int | None = None
    worst_difference: float | None = None
    seconds: float = 0.0
    log: str = ""
    private: bool = False
    reasons: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class _DeferredClient:
    """The client a row's reproduction gets: the upload fetched by the driver, and the report
    kept for the driver to send (the token stays in the driver)."""

    def __init__(self, payload: dict) -> None:
        self._payload = payload
        self.report: dict | None = None

    def payload(self, submission_id: int) -> dict:
        return self._payload

    def send_reproduction(self, submission_id: int, report: dict) -> dict:
        self.report = dict(report)
        return {}

    def secrets(self) -> tuple[str, ...]:
        """None here: the row never holds the token, and the driver scrubs what it sends."""
        return ()


#: One lock per requirements: rows of one process that need the same environment wait for
#: the first to build it instead of building it twice.
_ENV_LOCKS: dict[bytes, threading.Lock] = {}
_ENV_LOCKS_GUARD = threading.Lock()


def _environment(row: BatchRow, settings: BatchSettings, log_path: Path) -> Path:
    """The environment of ``row``: the prepared one, or the cache's for its requirements."""
    if settings.env is not None:
        return settings.env
    with _ENV_LOCKS_GUARD:
        lock = _ENV_LOCKS.setdefault(checkout_requirements(row.checkout), threading.Lock())
    with lock:
        return prepare_env(row.checkout, settings.env_cache, log=lambda line: None,
                           log_path=log_path.with_name(log_path.name + ".env"),
                           index_url=settings.index_url,
                           allow_sdists=settings.allow_sdists)


def run_row(row: BatchRow, payload: dict, settings: BatchSettings,
            private_seed: int | None) -> tuple[RowResult, dict | None]:
    """Reproduce one row from its fetched upload; its result and the report to send.

    This is what a Ray task runs. Whatever fails is an "error" row (and no report).
    """
    started = time.monotonic()
    log_path = settings.log_dir / f"reproduce-{row.submission}.log"
    client = _DeferredClient(payload)
    try:
        log_path.write_bytes(b"")
        python = env_python(_environment(row, settings, log_path))
        outcome = reproduce(row.checkout, row.submission, client, python=python,
                            log_path=log_path, timeout=settings.timeout,
                            memory_mb=settings.memory_mb, private_seed=private_seed,
                            source=settings.source, log=lambda line: None,
                            unsafe_no_sandbox=settings.unsafe_no_sandbox,
                            protocols=row.protocols)
    except Exception as exc:  # one row's failure is that row's error
        return error_row(row, exc, time.monotonic() - started, log_path, private_seed), None
    result = _result(row, outcome, time.monotonic() - started, private_seed is not None)
    return result, client.report


def error_row(row: BatchRow, exc: BaseException | str, seconds: float, log_path: Path | str,
              private_seed: int | None = None) -> RowResult:
    """The result of a row that could not be done, with the reason ``exc``."""
    reason = exc if isinstance(exc, str) else (
        str(exc) if isinstance(exc, EvalRSError) else f"{type(exc).__name__}: {exc}")
    return RowResult(submission=row.submission, checkout=str(row.checkout), verdict=ERROR,
                     seconds=round(seconds, 3), log=str(log_path),
                     private=private_seed is not None, reasons=[reason])


def _result(row: BatchRow, outcome: Reproduction, seconds: float, private: bool) -> RowResult:
    comparison = outcome.comparison
    compared = [r.difference for r in comparison.rows if r.difference is not None]
    reasons = list(comparison.reasons)
    verdict = outcome.verdict
    if private and outcome.private_problem:
        # as the single form: the private folds asked for and not evaluated is a failure
        reasons.append(outcome.private_problem)
        verdict = NOT_REPRODUCED
    return RowResult(submission=row.submission, checkout=str(row.checkout), verdict=verdict,
                     fingerprint_ok=comparison.fingerprint_matches,
                     differing=sum(r.status != "equal" for r in comparison.rows),
                     worst_difference=max(compared, key=abs) if compared else None,
                     seconds=round(seconds, 3), log=str(outcome.log_path), private=private,
                     reasons=reasons)


def reproduce_many(rows: list[BatchRow], client: LeaderboardClient, settings: BatchSettings,
                   *, executor: str = "local", jobs: int = 1, num_cpus: float = 1,
                   private_default: bool = False, private_seed: int | None = None,
                   progress: Callable[[RowResult], None] = lambda result: None,
                   ) -> list[RowResult]:
    """Reproduce every row and send each verdict; the results in the rows' order.

    Parameters
    ----------
    rows : list of BatchRow
    client : LeaderboardClient
        The server, with the admin token (used by this process only).
    settings : BatchSettings
    executor : {"local", "ray"}
        "local": in this process, ``jobs`` rows at once; "ray": one Ray task per row asking
        for ``num_cpus`` CPUs, on the cluster of ``RAY_ADDRESS`` or a local Ray (``ray.init``
        is called only when Ray is not initialised yet).
    private_default : bool
        Whether a row whose ``private`` cell is empty evaluates the private folds.
    private_seed : int, optional
        The private fold seed (needed when a row evaluates the private folds).
    progress : callable
        Called with each row's result as it ends.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}.")
    if executor == "ray":
        import_ray()  # before any call to the server: a missing Ray is a bad argument
    else:
        # before any call to the server (on Ray, each task checks its own node)
        require_sandbox(settings.unsafe_no_sandbox)
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    results: dict[int, RowResult] = {}
    todo = []
    for row in rows:
        seed = private_seed if (private_default if row.private is None else row.private) \
            else None
        try:
            todo.append((row, client.payload(row.submission), seed))
        except EvalRSError as exc:
            results[row.submission] = error_row(row, exc, 0.0, "", seed)  # nothing logged
            progress(results[row.submission])

    secrets = client_secrets(client, private_seed)

    def finish(row: BatchRow, result: RowResult, report: dict | None) -> None:
        if report is not None:
            # the row ran without the token: the driver scrubs what it sends all the same
            report = {**report, "log_tail": scrub(str(report.get("log_tail", "")), secrets)}
            try:
                client.send_reproduction(row.submission, report)
            except EvalRSError as exc:
                result.reasons.insert(0, f"the run found {result.verdict!r} but the verdict "
                                         f"was not sent: {exc}")
                result.verdict = ERROR
        results[row.submission] = result
        progress(result)

    run = _run_ray if executor == "ray" else _run_local
    run(todo, settings, finish, jobs=jobs, num_cpus=num_cpus)
    return [results[row.submission] for row in rows]


def _run_local(todo, settings, finish, *, jobs: int, num_cpus: float) -> None:
    """Rows in this process: one after another, or ``jobs`` at once in threads."""
    if jobs <= 1:
        for row, payload, seed in todo:
            finish(row, *run_row(row, payload, settings, seed))
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_row, row, payload, settings, seed): row
                   for row, payload, seed in todo}
        for future in as_completed(futures):
            finish(futures[future], *future.result())


def _run_ray(todo, settings, finish, *, jobs: int, num_cpus: float) -> None:
    """One Ray task per row; a task that Ray could not finish is that row's error."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init()  # RAY_ADDRESS, when set, names the cluster to join
    task = ray.remote(run_row).options(num_cpus=num_cpus)
    pending = {task.remote(row, payload, settings, seed): (row, seed)
               for row, payload, seed in todo}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        row, seed = pending.pop(ready[0])
        try:
            result, report = ray.get(ready[0])
        except Exception as exc:  # a lost worker, a task Ray gave up on
            result, report = error_row(row, f"the Ray task failed: {type(exc).__name__}: "
                                            f"{str(exc)[:500]}", 0.0,
                                       settings.log_dir / f"reproduce-{row.submission}.log",
                                       seed), None
        finish(row, result, report)


def import_ray():
    """The ``ray`` module; a ``ConfigError`` with the install hint when it is missing."""
    return runner_import_ray("--executor ray", "use --executor local")


def write_report(path: Path, results: Iterable[RowResult], *, batch: Path, server: str,
                 executor: str) -> None:
    """The batch's table as JSON at ``path``, written atomically."""
    results = list(results)
    counts = {verdict: sum(r.verdict == verdict for r in results)
              for verdict in (REPRODUCED, NOT_REPRODUCED, ERROR)}
    _atomic.write_json(path, {"batch": str(batch), "server": server, "executor": executor,
                              "harness_version": __version__, "counts": counts,
                              "rows": [r.as_json() for r in results]})


def exit_status(results: Iterable[RowResult]) -> int:
    """0 every row reproduced, 1 one not reproduced and none in error, 3 one in error."""
    verdicts = {r.verdict for r in results}
    if ERROR in verdicts:
        return 3
    return 1 if NOT_REPRODUCED in verdicts else 0
