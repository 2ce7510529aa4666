"""``load_results``: a finished run directory read back as a typed, verified object."""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation.challenge import References, UserScores
from evaluation.contract import (
    MODEL_KEY,
    FoldRecord,
    RecordRefused,
    ResultsRecord,
    read_results,
    run_label,
    run_name,
    run_params,
)
from evaluation.errors import ConfigError
from evaluation.runner import CHECKSUMS_FILE, verify_fold, verify_fold_files

#: Names of the two scores in ``LoadedRun.to_frame()`` and in comparisons.
SCORES: tuple[str, ...] = ("phase1_score", "phase2_score")


@dataclass(frozen=True)
class LoadedRun:
    """A finished run, read back from its directory (see :func:`load_results`).

    The fold files were checked against the checksums recorded when each fold finished, and
    the per-fold tests of ``results.json`` against those files. The per-user arrays are read
    (and checked again) only when :meth:`user_scores` asks for them.

    Attributes
    ----------
    run_dir : Path
        The run directory.
    run_id, run_hash, run_key : str
        The directory's name, the hash of what makes scores comparable (data, folds, harness
        version, tests) and the key of the run's configuration.
    model : dict
        ``{"name", "class", "fingerprint"}`` as ``results.json`` records it.
    dataset_fingerprint : str
    fold_params : dict
        The parameters the folds were drawn with.
    num_folds : int
        Folds.
    seed, limit, k : int or None
        The run's seed, test users per fold scored (0: all) and the list length (None when
        ``results.json`` does not record them).
    tests : list of str
        The RecList's tests.
    fold_tests : list of dict
        Per fold, test name -> value (the numeric tests; NaN where a fold has none).
    n_users : list of int
        Test users per fold.
    aggregate : dict
        ``results.json``'s aggregate: per-test ``mean`` and ``std``, ``phase1_score``,
        ``phase2_score``, ``gated``, ``normalised``.
    intervals : dict or None
        ``results.json``'s bootstrap intervals (``confidence_intervals``; None without them).
    references : References or None
        The phase-2 references the run was scored with.
    not_applicable : dict of str to str
        The leaderboard tests the dataset cannot measure, each with the reason (their values
        are NaN; the scores leave them out).
    results : dict
        The whole ``results.json``.
    """

    run_dir: Path
    run_id: str
    run_hash: str
    run_key: str
    model: dict
    dataset_fingerprint: str
    fold_params: dict
    num_folds: int
    seed: int | None
    limit: int | None
    k: int | None
    tests: list[str]
    fold_tests: list[dict[str, float]]
    n_users: list[int]
    aggregate: dict
    intervals: dict | None
    references: References | None
    not_applicable: dict[str, str]
    results: dict = field(repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        """A one-line summary: the run, its model, its hash and its folds."""
        return (f"LoadedRun(run_id={self.run_id!r}, model={self.model_name!r}, "
                f"run_hash={self.run_hash[:12]!r}..., num_folds={self.num_folds}, "
                f"n_users={self.n_users}, phase1_score={self.phase1_score!r}, "
                f"leaderboard_score={self.leaderboard_score!r})")

    @property
    def model_name(self) -> str:
        """The model's name (the run directory's prefix)."""
        return str(self.model.get("name", self.run_id))

    @property
    def name(self) -> str:
        """The run's name (``evaluate(name=...)``), else its model's name."""
        return run_name(self.results)

    @property
    def params(self) -> dict:
        """The model's parameters the run was asked for (empty when none were recorded)."""
        return run_params(self.results)

    @property
    def label(self) -> str:
        """The run's name with its parameters, as compare and the report show it."""
        return run_label(self.results)

    @property
    def test_means(self) -> dict[str, float]:
        """Test name -> its mean over folds."""
        return dict(self.aggregate["mean"])

    @property
    def phase1_score(self) -> float | None:
        """The mean of the nine leaderboard tests."""
        return self.aggregate.get("phase1_score")

    @property
    def leaderboard_score(self) -> float | None:
        """The phase-2 score against the references; None without references."""
        return self.aggregate.get("phase2_score")

    def user_scores(self, fold: int) -> UserScores:
        """The per-user contributions of ``fold``, read (and verified) on first use.

        Raises
        ------
        ConfigError
            When ``fold`` is not a fold of the run, or its files no longer match their
            checksums (changed since the run was loaded).
        """
        fold = self._check_fold(fold)
        if fold not in self._cache:
            found = verify_fold(self.run_dir, fold, self.run_key, self.tests)
            if not isinstance(found, tuple):
                raise ConfigError(_refusal(self.run_dir, found or f"fold_{fold}.json: missing"))
            self._cache[fold] = found[1]
        return self._cache[fold]

    def users_signature(self, fold: int) -> str:
        """A digest of the fold's test users: their count and slice groups, in order.

        The run directory does not keep user ids; the users' groups (country, activity,
        gender, the target's popularity) do not depend on the model, so two runs on the same
        test users in the same order have the same signature, and a different set or order
        almost surely changes it.
        """
        scores = self.user_scores(fold)
        h = hashlib.sha256(str(len(scores)).encode())
        for name in sorted(scores.slices):
            h.update(name.encode())
            h.update(np.ascontiguousarray(scores.slices[name], dtype="<i4").tobytes())
        return h.hexdigest()

    def test_users(self, fold: int, dataset) -> np.ndarray:
        """The ids of the fold's test users, in the order of :meth:`user_scores`.

        The run directory does not store user ids: they are the dataset's test users of the
        fold (the first ``limit`` of them when the run had a limit), so the dataset the run
        was made on is needed.

        Parameters
        ----------
        fold : int
        dataset : ChallengeDataset
            The run's dataset: same fingerprint and fold parameters.

        Raises
        ------
        ConfigError
            When ``dataset`` is not the run's dataset.
        """
        fold = self._check_fold(fold)
        if getattr(dataset, "fingerprint", None) != self.dataset_fingerprint \
                or getattr(dataset, "fold_params", None) != self.fold_params:
            raise ConfigError(
                f"test_users: the dataset given is not the one run {self.run_id} was made on "
                f"(fingerprint {str(getattr(dataset, 'fingerprint', None))[:12]!r} vs "
                f"{self.dataset_fingerprint[:12]!r}, or other fold parameters). Pass the run's "
                f"dataset.")
        users = dataset.get_test_set(fold, limit=self.limit or None)["user_id"].to_numpy()
        if len(users) != self.n_users[fold]:
            raise ConfigError(f"test_users: the dataset gives {len(users)} test users for fold "
                              f"{fold}, the run scored {self.n_users[fold]}.")
        return users

    def to_frame(self) -> pd.DataFrame:
        """Tabulate the run: one row per (fold or ``"mean"``, test).

        Returns
        -------
        pandas.DataFrame
            Columns ``fold`` (an int, or ``"mean"`` for the fold means and the two scores),
            ``test``, ``value``, ``ci_low`` and ``ci_high`` (the bootstrap interval of the
            means and scores; NaN for single folds and without intervals).
        """
        rows = [{"fold": f, "test": t, "value": v, "ci_low": math.nan, "ci_high": math.nan}
                for f, tests in enumerate(self.fold_tests) for t, v in tests.items()]
        ci = self.intervals or {}
        means = {**self.aggregate["mean"],
                 **{s: self.aggregate.get(s) for s in SCORES}}
        for t, v in means.items():
            low, high = (ci.get(t) if t in SCORES else ci.get("tests", {}).get(t)) \
                or (math.nan, math.nan)
            rows.append({"fold": "mean", "test": t, "value": _float(v), "ci_low": low,
                         "ci_high": high})
        frame = pd.DataFrame(rows, columns=["fold", "test", "value", "ci_low", "ci_high"])
        frame["fold"] = frame["fold"].astype(object)
        return frame.astype({"value": "float64", "ci_low": "float64", "ci_high": "float64"})

    def _check_fold(self, fold) -> int:
        """``fold`` if it is a fold of the run; else a ``ConfigError``."""
        if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) \
                or not 0 <= fold < self.num_folds:
            raise ConfigError(f"fold must be an int in [0, {self.num_folds - 1}] for run "
                              f"{self.run_id}; got {fold!r}.")
        return int(fold)


def load_results(path: str | os.PathLike) -> LoadedRun:
    """Read a finished run back, checking its files as a resume does.

    Parameters
    ----------
    path : str or os.PathLike
        A run directory (``results/<run id>/``) or its ``results.json``.

    Returns
    -------
    LoadedRun

    Raises
    ------
    ConfigError
        When the path is no finished run, or a fold's files do not match the checksums
        recorded when the fold finished, or ``results.json`` disagrees with the fold files.
    """
    run_dir = _run_dir(path)
    results = _read_object(run_dir / "results.json", "the run's results")
    record = _read_object(run_dir / "run.json", "the run's configuration")
    key = record.get("run_key")
    if not isinstance(key, str):
        raise ConfigError(_refusal(run_dir, "run.json: it records no 'run_key'"))
    if record.get("run_hash") != results.get("run_hash"):
        raise ConfigError(_refusal(run_dir, "results.json and run.json name different run "
                                            "hashes: they belong to different runs"))
    checked, aggregate = _read_record(run_dir, results)
    if not (run_dir / CHECKSUMS_FILE).is_file():
        raise ConfigError(_refusal(run_dir, f"{CHECKSUMS_FILE}: missing"))
    tests = list(checked.tests)
    by_number = {f.fold: f for f in checked.folds}
    fold_json = [_verified_fold(run_dir, f, key, tests, by_number[f])
                 for f in range(checked.dataset.num_folds)]
    refs = (checked.references or {}).get("values")
    return LoadedRun(
        run_dir=run_dir, run_id=checked.run_id, run_hash=checked.run_hash, run_key=key,
        model=dict(results[MODEL_KEY]), dataset_fingerprint=checked.dataset.fingerprint,
        fold_params=checked.dataset.fold_params, num_folds=checked.dataset.num_folds,
        seed=checked.seed, limit=checked.limit, k=checked.k, tests=tests,
        fold_tests=[{t: _float(v) for t, v in d["tests"].items()
                     if v is None or isinstance(v, (int, float))} for d in fold_json],
        n_users=[d["n_users"] for d in fold_json], aggregate=aggregate,
        intervals=checked.confidence_intervals,
        references=None if refs is None else References.from_dict(refs, path=str(run_dir)),
        not_applicable=dict(checked.not_applicable), results=results)


def _read_record(run_dir: Path, results: dict) -> tuple[ResultsRecord, dict]:
    """``results.json`` read by the contract's reader (a finished run need not be eligible),
    and its aggregate; a ``ConfigError`` naming its problems when it breaks the format, or has
    no aggregate."""
    try:
        record = read_results(results)
    except RecordRefused as exc:
        raise ConfigError(_refusal(run_dir, f"results.json breaks the results format: "
                                            f"{exc.describe()}")) from None
    if record.aggregate is None:
        raise ConfigError(_refusal(run_dir, "results.json: it records no aggregate"))
    return record, record.aggregate


def _run_dir(path) -> Path:
    """The run directory of ``path`` (the directory or its ``results.json``)."""
    try:
        p = Path(path)
    except TypeError:
        raise ConfigError(f"load_results: path must be a run directory or its results.json "
                          f"(str or os.PathLike); got a {type(path).__name__}.") from None
    if p.is_file() and p.name == "results.json":
        return p.parent
    if not p.is_dir():
        raise ConfigError(f"load_results: {str(p)!r} is neither a run directory nor a "
                          f"results.json. Pass results/<run id>/ of a finished run.")
    return p


def _read_object(path: Path, what: str) -> dict:
    """The JSON object in ``path``; a ``ConfigError`` when it is missing or not an object."""
    if not path.is_file():
        hint = " (the run has not finished: run it again to resume)" \
            if path.name == "results.json" else ""
        raise ConfigError(_refusal(path.parent, f"{path.name}: missing{hint}"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(_refusal(path.parent, f"{path.name}: {what} cannot be read "
                                                f"({exc})")) from None
    if not isinstance(data, dict):
        raise ConfigError(_refusal(path.parent, f"{path.name}: expected a JSON object"))
    return data


def _verified_fold(run_dir: Path, fold: int, key: str, tests: list,
                   in_results: FoldRecord) -> dict:
    """The fold's verified JSON; a ``ConfigError`` when its files or results.json disagree."""
    found = verify_fold_files(run_dir, fold, key, tests)
    if isinstance(found, str):
        raise ConfigError(_refusal(run_dir, found))
    if in_results.tests != found["tests"]:
        raise ConfigError(_refusal(run_dir, f"results.json: the tests of fold {fold} differ "
                                            f"from fold_{fold}.json (edited?)"))
    return found


def _refusal(run_dir: Path, problem: str) -> str:
    """The message refusing to load the run in ``run_dir`` because of ``problem``."""
    return (f"cannot load the run in {str(run_dir)!r}: {problem}. Its numbers cannot be "
            f"trusted; run the model again (a resume recomputes damaged folds).")


def _float(value) -> float:
    """``value`` as a float; NaN for None."""
    return math.nan if value is None else float(value)
