"""The organizer's half of a reproduction: hand the sandboxed model what a model receives, read
back its predictions as untrusted data, and score them with the harness's own code and data.

The organizer's process rebuilds the dataset and each fold, writes the model's inputs (its
constructor's parameters, the tracks, each fold's training frame and test users) into a folder
the sandbox sees read-only, and runs ``python -m evaluation.participant`` there. What comes
back through the result channel is parsed with ``allow_pickle=False`` and bounded, and each
fold's predictions go through the runner itself (``EvalRSRunner.evaluate`` with a model that
replays them): the same validation (``validate_predictions``), the same RecList and the same
aggregation as the participant's run, on the test targets that never left this process.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import evaluation
from evaluation._util.npy import read_array
from evaluation.contract import COST_KEYS, MAX_COST
from evaluation.dataset import ChallengeDataset
from evaluation.errors import PredictionError
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._sandbox import Bind, SandboxReport, run_sandboxed
from evaluation.reproduce._scrub import log_tail
from evaluation.runner import EvalRSRunner, run_user_values

#: Where the sandbox sees the environment, the checkout's copy, the inputs and the harness's
#: package (fixed places: the host's paths, e.g. under /tmp, need not exist inside).
ENV_TARGET = "/env"
CHECKOUT_TARGET = "/checkout"
INPUTS_TARGET = "/inputs"
HARNESS_TARGET = "/opt/evalrs/harness"
#: The variables of the organizer's environment passed on (thread counts of numeric libraries).
_PASSED_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "NUMEXPR_")
#: The fold parameters that are not ``ChallengeDataset`` keyword arguments.
_NOT_ARGUMENTS = ("protocol",)
#: The most columns a fold's predictions may have (far above any ``k``).
_MAX_COLUMNS = 10_000


@dataclass
class SandboxRun:
    """What came back from one sandboxed run of the model.

    Attributes
    ----------
    fingerprint : dict, optional
        The model's fingerprint as the sandbox computed it (None: not reported).
    predictions : dict of int to DataFrame
        Each fold's predictions, unvalidated.
    scores : dict of int to numpy.ndarray
        Under a sampled-negative protocol, each fold's scores of its candidates, unvalidated
        (any array the channel carried).
    errors : dict of int to str
        The folds whose predictions could not be carried out, and why.
    costs : dict of int to dict
        Each fold's ``{"train_seconds", "predict_seconds", "peak_rss_mib"}`` as the sandbox
        measured them (numbers checked: non-negative and finite, else None).
    done : bool
        Whether the worker said it finished.
    problem : str, optional
        Why the run failed (None when it did not).
    report : SandboxReport
    """

    fingerprint: dict | None = None
    predictions: dict[int, pd.DataFrame] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    done: bool = False
    problem: str | None = None
    report: SandboxReport | None = None
    costs: dict[int, dict] = field(default_factory=dict)
    scores: dict[int, np.ndarray] = field(default_factory=dict)


def rebuild_dataset(config: Mapping) -> tuple[ChallengeDataset | None, str | None]:
    """The upload's dataset and folds, rebuilt here; None and the reason when they differ."""
    options = {k: v for k, v in config["fold_params"].items() if k not in _NOT_ARGUMENTS}
    dataset = ChallengeDataset(source=config["source"], **config["data_options"], **options)
    if dataset.fingerprint != config["dataset_fingerprint"]:
        return None, (f"the dataset rebuilt from source {config['source']!r} has fingerprint "
                      f"{dataset.fingerprint[:12]}..., the upload's is "
                      f"{str(config['dataset_fingerprint'])[:12]}...: the data differ")
    if dataset.fold_params != config["fold_params"]:
        return None, "the folds rebuilt differ from the configuration's fold parameters"
    return dataset, None


def write_inputs(inputs: Path, dataset: ChallengeDataset, config: Mapping, *,
                 candidates: Callable[[int, pd.DataFrame, pd.DataFrame], np.ndarray] | None
                 = None) -> dict[int, pd.Series]:
    """Write what the model receives into ``inputs``; each fold's test users, by fold.

    ``candidates``: a sampled-negative protocol's items to score, ``candidates(fold,
    train_df, test_df)`` (a ``users x candidates`` array in the test users' order): the model
    scores them instead of predicting lists.
    """
    inputs.mkdir(mode=0o700)
    folds = list(range(dataset.num_folds))
    worker = {"params": dict(config.get("params") or {}), "k": int(config["k"]),
              "seed": int(config["seed"]), "folds": folds,
              "expected_fingerprint": config.get("expected_fingerprint")}
    if candidates is not None:
        worker["score_candidates"] = True
    (inputs / "config.json").write_text(json.dumps(worker))
    _dump(inputs / "items.pkl", dataset.df_tracks)
    users = {}
    for fold in folds:
        # as compute_fold hands them to a model
        train_df, test_df = dataset.get_train_and_test_sets(fold, limit=None)
        _dump(inputs / f"fold-{fold}-train.pkl", train_df)
        _dump(inputs / f"fold-{fold}-users.pkl", test_df[["user_id"]].reset_index(drop=True))
        users[fold] = test_df["user_id"]
        if candidates is not None:
            np.save(inputs / f"fold-{fold}-candidates.npy",
                    np.ascontiguousarray(candidates(fold, train_df, test_df), dtype=np.int64),
                    allow_pickle=False)
    return users


def _dump(path: Path, value) -> None:
    with open(path, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)


def sandbox_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of the sandboxed model: no organizer variable but thread counts."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONPATH": HARNESS_TARGET, "PYTHONUNBUFFERED": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    env.update({k: v for k, v in environ.items() if k.startswith(_PASSED_PREFIXES)})
    return env


def run_model(*, python: Path, checkout_copy: Path, inputs: Path, work: Path, log_path: Path,
              budgets: Budgets, unsafe_no_sandbox: bool = False) -> SandboxRun:
    """Run the predict-only worker on ``inputs`` in the sandbox; what came back, parsed."""
    env_dir = python.parent.parent
    package = Path(evaluation.__file__).resolve().parent
    binds = [Bind(env_dir, ENV_TARGET), Bind(checkout_copy, CHECKOUT_TARGET),
             Bind(inputs, INPUTS_TARGET), Bind(package, f"{HARNESS_TARGET}/evaluation")]
    result_path = work / "result.npy-stream"
    # -P: the working folder (the participant's) is not put before the harness on the path
    inside = f"{ENV_TARGET}/{python.relative_to(env_dir)}"
    command = [inside, "-P", "-m", "evaluation.participant", INPUTS_TARGET]
    report = run_sandboxed(command, binds=binds, cwd=CHECKOUT_TARGET,
                           env=sandbox_environment(os.environ), budgets=budgets,
                           log_path=log_path, result_path=result_path, python=str(python),
                           unsafe_no_sandbox=unsafe_no_sandbox)
    run = read_results(result_path)
    run.report = report
    run.problem = run.problem or _ending_problem(report, budgets, log_tail(log_path, 4096))
    if run.problem is None and not run.done:
        run.problem = "the model ended without its predictions (see the log)"
    return run


def _ending_problem(report: SandboxReport, budgets: Budgets, tail: str) -> str | None:
    """Why the sandbox's run ended badly (None when it ended well)."""
    if report.timed_out:
        return f"the run passed the wall-clock limit of {budgets.wall_s:g} s and was stopped"
    out_of_memory = report.returncode != 0 and budgets.memory_mb is not None and (
        "MemoryError" in tail or "Cannot allocate memory" in tail)
    if report.stopped == "memory" or report.memory_hit or out_of_memory:
        return (f"the run exceeded the memory limit of {budgets.memory_mb} MiB (exit status "
                f"{report.returncode})")
    if report.stopped == "processes" or report.processes_hit:
        return (f"the run exceeded the process limit of {budgets.processes} (exit status "
                f"{report.returncode})")
    if report.stopped == "result":
        return f"the run wrote more than {budgets.result_bytes} bytes of results and was stopped"
    if report.returncode != 0:
        return f"the run failed with exit status {report.returncode} (see the log)"
    return None


def read_results(path: Path) -> SandboxRun:
    """Parse the result channel's records; anything malformed is a problem, never trusted."""
    run = SandboxRun()
    if not path.is_file():
        return run
    # in memory (the channel is bounded): numpy reads a real file past Python's buffer
    with io.BytesIO(path.read_bytes()) as f:
        try:
            _records(f, run)
        except (ValueError, TypeError, KeyError, EOFError, UnicodeDecodeError, OSError) as exc:
            run.problem = (f"the model's results could not be read ({type(exc).__name__}); "
                           f"they are not scored")
    return run


def _records(f, run: SandboxRun) -> None:
    while (record := _record(f)) is not None:
        if "fingerprint" in record and run.fingerprint is None:
            if not isinstance(record["fingerprint"], dict):
                raise TypeError("fingerprint")
            run.fingerprint = record["fingerprint"]
        elif record.get("done") is True:
            run.done = True
        elif "problem" in record and "fold" not in record:
            run.problem = run.problem or str(record["problem"])[:2000]
        elif "fold" in record:
            fold = int(record["fold"])
            if "error" in record:
                run.errors[fold] = str(record["error"])[:2000]
                continue
            if record.get("scores") is True:
                run.scores[fold] = read_array(f)
                run.costs[fold] = _cost(record.get("cost"))
                continue
            columns = [str(c) for c in record["columns"]][:_MAX_COLUMNS + 1]
            index = read_array(f)
            values = read_array(f)
            if values.ndim != 2 or index.ndim != 1 or len(index) != values.shape[0] \
                    or len(columns) != values.shape[1] or len(columns) > _MAX_COLUMNS:
                raise ValueError("shapes")
            run.predictions[fold] = pd.DataFrame(values, index=pd.Index(index, name="user_id"),
                                                 columns=columns)
            run.costs[fold] = _cost(record.get("cost"))




def _cost(value: object) -> dict[str, float | None]:
    """A fold's cost record from the sandbox: each of ``COST_KEYS`` a number in
    [0, ``MAX_COST``], else None."""
    data = value if isinstance(value, dict) else {}
    out: dict[str, float | None] = {}
    for key in COST_KEYS:
        v = data.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_COST:
            out[key] = float(v)
        else:
            out[key] = None
    return out


def _record(f: io.BytesIO) -> dict | None:
    """The next JSON record, None at the end of the stream."""
    if f.tell() == len(f.getbuffer()):
        return None
    data = read_array(f)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError("record")
    record = json.loads(data.tobytes().decode("utf-8"))
    if not isinstance(record, dict):
        raise ValueError("record")
    return record


class _Replay:
    """A model that replays the sandbox's predictions fold by fold, for the runner to score.

    ``train`` is called once per fold, in fold order, before ``predict``.
    """

    name = "reproduction"

    def __init__(self, predictions: Mapping[int, pd.DataFrame], errors: Mapping[int, str],
                 users: Mapping[int, pd.Series]) -> None:
        self._predictions, self._errors, self._users = predictions, errors, users
        self._fold = -1

    def train(self, train_df: pd.DataFrame, **kwargs) -> None:
        self._fold += 1

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        fold = self._fold
        expected = self._users[fold].to_numpy()
        if not np.array_equal(user_ids["user_id"].to_numpy(), expected):
            raise PredictionError(f"fold {fold}: the runner's test users are not the ones the "
                                  f"model was given")
        if fold in self._errors:
            raise PredictionError(f"fold {fold}: {self._errors[fold]}")
        if fold not in self._predictions:
            raise PredictionError(f"fold {fold}: the model sent no predictions")
        return self._predictions[fold]


def score(dataset: ChallengeDataset, run: SandboxRun, users: Mapping[int, pd.Series],
          config: Mapping, results_dir: Path) -> tuple[dict, str | None]:
    """The run's results, scored here by the runner from the sandbox's predictions, and the
    per-user values of its folds (the blob of ``evaluation.challenge.encode_user_values``; None
    when they cannot be made).

    The model fingerprint in them is the sandbox's (what the model's code says it is); every
    number is computed here.

    Raises
    ------
    PredictionError
        When a fold's predictions are missing or malformed.
    """
    runner = EvalRSRunner(dataset, results_dir=results_dir, k=int(config["k"]),
                          n_boot=int(config["n_boot"]), progress=False, verbose=False)
    result = runner.evaluate(_Replay(run.predictions, run.errors, users),
                             seed=int(config["seed"]), limit=0, upload=False, resume=False)
    results = result.to_dict()
    blob, _ = run_user_values(results, Path(str(result.path)).parent)
    results["model"] = {**(results.get("model") or {}), "fingerprint": run.fingerprint}
    shutil.rmtree(results_dir, ignore_errors=True)
    return results, blob
