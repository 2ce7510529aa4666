"""Folds as Ray tasks: ``EvalRSRunner(..., executor="ray")``.

The driver (the process that called ``evaluate``) puts the dataset's arrays (the events
columns, users, tracks, track vectors and the folds' row positions) and the untrained model
into Ray's object store once; every fold is then one task that rebuilds the dataset around
those arrays without copying them (Ray hands NumPy buffers to tasks on the same machine
straight from shared memory), runs ``compute_fold`` and sends back the fold's results, its
per-user scores, reclist's report files and what reclist printed. The driver saves them
exactly as the in-process loop does, so a Ray run and an in-process run write the same files.

Ray itself is optional: it is imported only when a runner is made with ``executor="ray"``.
``ray.init()`` is called only when Ray is not initialised yet; it connects to the cluster
named by ``RAY_ADDRESS`` when that is set, and otherwise starts a local Ray.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError, EvalRSError
from evaluation.runner._fold import FoldJob, FoldOutput, compute_fold

#: How to get Ray, for the error raised when it is missing.
INSTALL_HINT = ("install the ray extra, evalrs-harness[ray] (`make ray` in the harness's "
                "clone; the workers of a cluster need the same)")
#: The keys ``ray_resources`` may have: Ray's per-task resources.
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory")
#: Ray's own default: a task whose worker process dies is run again up to 3 times.
DEFAULT_MAX_RETRIES = 3


def import_ray(needed_by: str = "EvalRSRunner(executor='ray')",
               instead: str = "use executor='local'"):
    """The ``ray`` module; a ``ConfigError`` with the install hint when it is missing.

    ``needed_by`` names what asked for Ray and ``instead`` the way to do without it, for the
    message.
    """
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"{needed_by} needs Ray, which cannot be imported ({exc}). Fix: "
                          f"{INSTALL_HINT}; or {instead}.") from None
    return ray


def check_resources(resources: Any) -> dict[str, float]:
    """``resources`` as a dict of Ray task resources, checked; ConfigError otherwise.

    Parameters
    ----------
    resources : dict or None
        ``num_cpus`` (default 1), ``num_gpus`` (default 0), ``memory`` (bytes; optional).

    Returns
    -------
    dict
        The resources every fold's task asks for.
    """
    if resources is None:
        resources = {}
    if not isinstance(resources, dict):
        raise ConfigError(f"EvalRSRunner: ray_resources must be a dict such as "
                          f"{{'num_cpus': 1, 'num_gpus': 0}}; got {resources!r}.")
    unknown = sorted(set(resources) - set(RESOURCE_KEYS))
    if unknown:
        raise ConfigError(f"EvalRSRunner: ray_resources has unknown key(s) {unknown}; the "
                          f"accepted keys are {list(RESOURCE_KEYS)}. Fix: check the spelling.")
    out = {"num_cpus": 1, "num_gpus": 0, **resources}
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not np.isfinite(value) or value < 0:
            raise ConfigError(f"EvalRSRunner: ray_resources[{key!r}] must be a finite number "
                              f">= 0; got {value!r}.")
    return out


@dataclass(frozen=True)
class SharedData:
    """The dataset as the object store holds it: plain arrays and small frames.

    Attributes
    ----------
    events : dict
        Each events column as its NumPy array (a column of another dtype keeps its
        ``Series``), so that the task rebuilds the events frame around the shared buffers.
    events_index : pandas.Index
        The events' index.
    tables : Tables
        The dataset's tables without the events (users, tracks, track vectors, source and
        fingerprint).
    params : FoldParams
        The fold parameters.
    folds : dict of int to Fold
        The folds to compute, with their row positions.
    """

    events: dict[str, Any]
    events_index: pd.Index
    tables: Any
    params: Any
    folds: dict[int, Any]


def share(dataset: ChallengeDataset, folds: list[int]) -> SharedData:
    """What goes to the object store for ``folds`` of ``dataset`` (the folds computed here)."""
    tables = dataset.tables
    events = {name: col.to_numpy() if isinstance(col.dtype, np.dtype) else col
              for name, col in tables.events.items()}
    dataset.fingerprint  # noqa: B018 - computed once here, not in every task
    return SharedData(events=events, events_index=tables.events.index,
                      tables=replace(tables, events=None), params=dataset.params,
                      folds={f: dataset.fold(f) for f in folds})


class SharedDataset(ChallengeDataset):
    """A ``ChallengeDataset`` around ``SharedData``: the same tables, folds and fingerprint.

    The shared folds are used as they are; any other fold (a custom RecList may ask for one)
    is computed as usual.
    """

    def __init__(self, shared: SharedData) -> None:
        events = pd.DataFrame(shared.events, index=shared.events_index, copy=False)
        super().__init__(replace(shared.tables, events=events), validate=False)
        self.params = shared.params
        self._shared_folds = shared.folds

    def fold(self, fold: int):
        """Fold ``fold``: the shared one, else computed."""
        found = self._shared_folds.get(self._check_fold(fold))
        return super().fold(fold) if found is None else found


def fold_task(model, shared: SharedData, job: FoldJob) -> FoldOutput:
    """Run one fold in a Ray worker (the body of the remote task).

    reclist's report folder goes to a temporary folder on the worker, and its files come
    back as bytes: the driver writes them into the run directory, which a worker of a
    cluster cannot reach. What reclist prints comes back too.
    """
    dataset = SharedDataset(shared)
    printed = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="evalrs-fold-") as tmp:
        report_dir = Path(tmp) / "report"
        job = FoldJob(**{**job.__dict__, "report_dir": report_dir, "progress": False})
        with contextlib.redirect_stdout(printed):
            result, scores, lists = compute_fold(model, dataset, job)
        files = {p.relative_to(report_dir).as_posix(): p.read_bytes()
                 for p in sorted(report_dir.rglob("*")) if p.is_file()}
    return FoldOutput(job.fold, result, scores, files, printed.getvalue(), lists)


def run_folds(model, dataset: ChallengeDataset, jobs: list[FoldJob], *,
              resources: dict[str, float], max_retries: int) -> Iterator[FoldOutput]:
    """Run ``jobs`` as Ray tasks; yield each fold's output as its task finishes.

    Parameters
    ----------
    model : RecModel
        The untrained model; every task trains its own copy.
    dataset : ChallengeDataset
        The data; its arrays and the jobs' folds go to the object store once.
    jobs : list of FoldJob
        The folds to compute.
    resources : dict
        Ray resources of each task (``check_resources``).
    max_retries : int
        How often a task whose worker died is run again.

    Yields
    ------
    FoldOutput
        In the order the tasks finish.

    Raises
    ------
    ConfigError
        When the model cannot be pickled for the workers.
    Exception
        A fold's own error (the model's exception, a ``PredictionError``...), as raised in the
        task; the folds still running are cancelled.
    """
    ray = import_ray()
    if not ray.is_initialized():
        ray.init()  # RAY_ADDRESS, when set, names the cluster to join
    try:
        model_ref = ray.put(model)
    except Exception as exc:  # pickling errors come as TypeError, PicklingError, ...
        raise ConfigError(f"executor='ray' sends the model to Ray's workers, but the model "
                          f"{type(model).__name__} cannot be pickled: {exc}. Fix: keep "
                          f"unpicklable state (open files, locks, clients) out of the "
                          f"untrained model, or use executor='local'.") from None
    shared_ref = ray.put(share(dataset, [job.fold for job in jobs]))
    task = ray.remote(fold_task).options(**resources, max_retries=max_retries,
                                         retry_exceptions=False)
    pending = {task.remote(model_ref, shared_ref, job): job.fold for job in jobs}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            pending.pop(ready[0])
            yield _result(ray, ready[0])
    finally:
        for ref in pending:
            ray.cancel(ref)


def _result(ray, ref) -> FoldOutput:
    """The task's output; a harness error raised in the task is raised as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, EvalRSError):
            # the harness's own errors carry their message and fix; the worker's traceback
            # would only bury them (the CLI prints such errors without a traceback)
            raise exc.cause from None
        raise
