"""A scoring job: a submission's uploaded predictions scored with the organizers' data.

No participant code runs: the upload is data, read strictly (``read_predictions``: int32 ids,
exact sizes, nothing after the last fold), and each fold's lists go through the runner's own
fold code (``score_fold``: what ``compute_fold`` does once a model has predicted): the same
validation, the same ``FoldScorer`` and the same per-user values as the participant's run, on
the test targets of the organizers' copy of the data, by the competition's repeated-items rule
(as the worker's server sends it). A fold's lists must be for exactly its test users, in its
order. The interval is the runner's (the user-level bootstrap of the full-precision values,
with the run's ``n_boot``, seed and references), so the board shows the interval its team saw
locally.

What does not depend on the upload is kept between the jobs of a worker (``ScoringData``):
the organizers' dataset, per fold its test rows and MRED slices, and the bootstrap's
resamples, so that a job reads, validates and scores only the lists (the first job on a
competition's data prepares them); the numbers are the same to the bit.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    FoldUsers,
    PairedResamples,
    References,
    UserScores,
    bootstrap,
    dataset_not_applicable,
    encode_user_values,
    paired_resamples,
)
from evaluation.contract import (
    RESULTS_KEY,
    SLICE_LABELS_KEY,
    TEST_USERS_SHA256_KEY,
    read_predictions,
)
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError, DataError, EvalRSError, PredictionError
from evaluation.reproduce._predict import rebuild_dataset
from evaluation.reproduce._reproduce import worker_config
from evaluation.runner import FoldJob, PreparedFold, prepare_fold, score_fold

#: The most bytes a stream's lists may inflate to when the worker reads it (the server has
#: bounded the upload by the competition's ``max_upload_bytes`` already).
MAX_INFLATED = 8 << 30
#: The references' parts that change a score (as the server compares them).
_SCORING_KEYS = ("baseline", "best", "hit_rate_threshold", "groups", "weights")


class ScoringFailed(EvalRSError):
    """The upload cannot be scored for what it is (its lists, its data): no retry helps."""


def score_upload(payload: Mapping[str, Any], stream: bytes, *, source: str | None = None,
                 repeated: str | None = None) -> dict[str, Any]:
    """The numbers of a predictions upload, as a scoring job sends them (``scored``).

    Parameters
    ----------
    payload : mapping
        The submission as stored (the claim: its run's data, folds, ``k``, seed).
    stream : bytes
        The uploaded predictions.
    source : str, optional
        The organizers' data source (default: the one the run records).
    repeated : {"first", "error"}, optional
        The competition's repeated-items rule, as the worker's server knows it (default:
        the one the stored run records).

    Returns
    -------
    dict
        ``{"fold_tests", "user_values", "k", "not_applicable", "interval"}`` (see
        ``evaluation.server.core.read_scored``).

    Raises
    ------
    ScoringFailed
        When the lists cannot be read or scored (other users than a fold's, ids not in the
        catalogue, other data): the team's upload is at fault.
    """
    results = payload[RESULTS_KEY]
    try:
        config = worker_config(results, source=source)
        lists = read_predictions(stream, max_bytes=len(stream), max_inflated=MAX_INFLATED)
    except (ConfigError, DataError) as exc:
        raise ScoringFailed(f"the upload cannot be scored: {exc}") from None
    if lists.k != config["k"] or len(lists.folds) != int(config["fold_params"]["num_folds"]):
        raise ScoringFailed(f"the upload's lists (k={lists.k}, {len(lists.folds)} folds) are "
                            f"not the run's (k={config['k']}, "
                            f"{config['fold_params']['num_folds']} folds)")
    if repeated not in (None, "first", "error"):
        raise ValueError(f"repeated must be 'first' or 'error', not {repeated!r}")
    data = scoring_data(config)
    return score_lists(data, [(np.frombuffer(f.users, "<i4"),
                               np.frombuffer(f.items, "<i4").reshape(f.n_users, lists.k))
                              for f in lists.folds], results, config,
                       repeated=repeated or _repeated(results))


@dataclass(frozen=True)
class ScoringData:
    """The organizers' data of a run, ready to score uploads on: the dataset and each fold's
    test rows and slices (:func:`~evaluation.runner.prepare_fold`); none of it depends on an
    upload, so a worker keeps it between jobs (:func:`scoring_data`)."""

    dataset: ChallengeDataset
    folds: tuple[PreparedFold, ...]
    #: the bootstrap's resamples by (seed, n_boot), drawn for the first upload that asks
    resamples: dict[tuple[int, int], PairedResamples] = field(default_factory=dict)

    def resamples_for(self, seed: int, n_boot: int) -> PairedResamples:
        """The run's resamples of these folds for ``seed`` and ``n_boot``, drawn once (the
        last ones asked for are kept: about ``n_boot`` bytes per test user)."""
        key = (seed, n_boot)
        with _KEPT_LOCK:
            found = self.resamples.get(key)
            if found is None:
                found = paired_resamples(seed, n_boot, [len(f.test) for f in self.folds])
                self.resamples.clear()
                self.resamples[key] = found
            return found


#: The data kept, by what rebuilds it: one competition's at a time (a worker serves one
#: board; at full scale the dataset is about 1 GiB).
_KEPT: dict[str, ScoringData] = {}
_KEPT_LOCK = threading.Lock()


def scoring_data(config: Mapping[str, Any]) -> ScoringData:
    """The data of a run's configuration (``worker_config``): kept from an earlier job on the
    same data and folds, else rebuilt (the dataset is checked against the run's fingerprint
    and fold parameters) and kept in its place.

    Raises
    ------
    ScoringFailed
        When the organizers' data or folds are not the run's.
    """
    key = json.dumps([config["source"], config["data_options"], config["fold_params"],
                      config["dataset_fingerprint"]], sort_keys=True, default=str)
    # one job builds the data, the others of the same data wait for it
    with _KEPT_LOCK:
        found = _KEPT.get(key)
        if found is not None:
            return found
        dataset, problem = rebuild_dataset(config)
        if dataset is None:
            raise ScoringFailed(f"the upload cannot be scored on the organizers' data: "
                                f"{problem}")
        found = ScoringData(dataset, tuple(prepare_fold(dataset, fold)
                                           for fold in range(dataset.num_folds)))
        _KEPT.clear()
        _KEPT[key] = found
        return found


def score_lists(data: ScoringData, folds: list[tuple[np.ndarray, np.ndarray]],
                results: Mapping[str, Any], config: Mapping[str, Any], *,
                repeated: str = "first") -> dict[str, Any]:
    """Score each fold's lists (user ids, ``(users, k)`` track ids) with the runner's fold
    code; the report of :func:`score_upload`.

    Raises
    ------
    ScoringFailed
        When a fold's lists are not for its test users or are not valid predictions.
    """
    k, seed = int(config["k"]), int(config["seed"])
    fold_tests, found, scores = [], [], []
    dataset = data.dataset
    with tempfile.TemporaryDirectory(prefix="evalrs-scoring-") as tmp:
        for number, (users, items) in enumerate(folds):
            job = FoldJob(fold=number, name="scoring", seed=seed, limit=0, k=k,
                          reclist_cls=None, reports=False, verbose=False, progress=False,
                          report_dir=Path(tmp) / f"fold_{number}", repeated=repeated)
            try:
                result, user_scores, _ = score_fold(
                    _lists_frame(number, data.folds[number].test, users, items, k), dataset,
                    job, data.folds[number])
            except PredictionError as exc:
                raise ScoringFailed(f"fold {number}: {exc}") from None
            fold_tests.append({t: float(result["tests"][t]) for t in LEADERBOARD_TESTS
                               if isinstance(result["tests"].get(t), (int, float))})
            scores.append(user_scores)
            found.append(FoldUsers(scores=user_scores,
                                   users_sha256=result[TEST_USERS_SHA256_KEY],
                                   labels={t: tuple(v) for t, v in
                                           result[SLICE_LABELS_KEY].items()}))
    skip = dataset_not_applicable(dataset)
    return {"fold_tests": fold_tests, "user_values": encode_user_values(found, k), "k": k,
            "not_applicable": skip,
            "interval": _interval(scores, results, int(config["n_boot"]), seed, skip, data)}


def _interval(scores: list[UserScores], results: Mapping[str, Any], n_boot: int, seed: int,
              skip: Mapping[str, str], data: ScoringData) -> dict[str, Any] | None:
    """The runner's interval of the leaderboard score, with the run's references (None when
    the run records none that can be read: the server computes it with the phase's)."""
    record = results.get("references")
    values = record.get("values") if isinstance(record, Mapping) else None
    try:
        references = References.from_dict(values) if isinstance(values, Mapping) else None
    except (EvalRSError, TypeError, ValueError, KeyError):
        references = None
    if references is None or n_boot < 2:
        return None
    found = bootstrap(scores, references, n_boot=n_boot, seed=seed, not_applicable=dict(skip),
                      resamples=data.resamples_for(seed, n_boot)).get("phase2_score")
    if found is None:
        return None
    used = references.to_dict()
    return {"low": float(found[0]), "high": float(found[1]), "n_boot": n_boot, "seed": seed,
            "references": {key: used[key] for key in _SCORING_KEYS}}


def _repeated(results: Mapping[str, Any]) -> str:
    """How lists naming a track twice are scored: refused when the run's competition or data
    refuse them, else as 2022 did."""
    competition = results.get("competition")
    rule = competition.get("repeated_items") if isinstance(competition, Mapping) else None
    return "error" if rule == "error" else "first"


def _lists_frame(fold: int, test: pd.DataFrame, users: np.ndarray, items: np.ndarray,
                 k: int) -> pd.DataFrame:
    """A fold's uploaded lists as a model returns them, once they are found to be for the
    fold's test users in their order; the runner's validation checks every id.

    Raises
    ------
    PredictionError
        When the lists are for other users.
    """
    expected = test["user_id"].to_numpy()
    if len(expected) != len(users) or not np.array_equal(expected, users):
        raise PredictionError(f"the lists are for other users than fold {fold}'s "
                              f"{len(expected)} test users (in their order): upload the "
                              f"run's own predictions, on the competition's folds")
    return pd.DataFrame(items.astype(np.int64),
                        index=pd.Index(users.astype(np.int64), name="user_id"),
                        columns=[str(c) for c in range(k)])
