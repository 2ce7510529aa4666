"""A scoring job: a submission's uploaded predictions scored with the organizers' data.

No participant code runs: the upload is data, read strictly (``read_predictions``: int32 ids,
exact sizes, nothing after the last fold), and each fold's lists go through the runner's own
fold (``compute_fold`` with a model that replays them, as a reproduction replays a sandbox's
predictions): the same validation, the same ``FoldScorer`` and the same per-user values as
the participant's run, on the test targets of the organizers' copy of the data. A fold's
lists must be for exactly its test users, in its order. The interval is the runner's (the
user-level bootstrap of the full-precision values, with the run's ``n_boot``, seed and
references), so the board shows the interval its team saw locally.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    FoldUsers,
    References,
    UserScores,
    bootstrap,
    dataset_not_applicable,
    encode_user_values,
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
from evaluation.runner import FoldJob, compute_fold

#: The most bytes a stream's lists may inflate to when the worker reads it (the server has
#: bounded the upload by the competition's ``max_upload_bytes`` already).
MAX_INFLATED = 8 << 30
#: The references' parts that change a score (as the server compares them).
_SCORING_KEYS = ("baseline", "best", "hit_rate_threshold", "groups", "weights")


class ScoringFailed(EvalRSError):
    """The upload cannot be scored for what it is (its lists, its data): no retry helps."""


def score_upload(payload: Mapping[str, Any], stream: bytes, *, source: str | None = None
                 ) -> dict[str, Any]:
    """The numbers of a predictions upload, as a scoring job sends them (``scored``).

    Parameters
    ----------
    payload : mapping
        The submission as stored (the claim: its run's data, folds, ``k``, seed).
    stream : bytes
        The uploaded predictions.
    source : str, optional
        The organizers' data source (default: the one the run records).

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
    dataset, problem = rebuild_dataset(config)
    if dataset is None:
        raise ScoringFailed(f"the upload cannot be scored on the organizers' data: {problem}")
    return score_lists(dataset, [(np.frombuffer(f.users, "<i4"),
                                  np.frombuffer(f.items, "<i4").reshape(f.n_users, lists.k))
                                 for f in lists.folds], results, config)


def score_lists(dataset: ChallengeDataset, folds: list[tuple[np.ndarray, np.ndarray]],
                results: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """Score each fold's lists (user ids, ``(users, k)`` track ids) with the runner's fold;
    the report of :func:`score_upload`.

    Raises
    ------
    ScoringFailed
        When a fold's lists are not for its test users or are not valid predictions.
    """
    k, seed = int(config["k"]), int(config["seed"])
    fold_tests, found, scores = [], [], []
    repeated = _repeated(results)
    with tempfile.TemporaryDirectory(prefix="evalrs-scoring-") as tmp:
        for number, (users, items) in enumerate(folds):
            job = FoldJob(fold=number, name="scoring", seed=seed, limit=0, k=k,
                          reclist_cls=None, reports=False, verbose=False, progress=False,
                          report_dir=Path(tmp) / f"fold_{number}", repeated=repeated)
            try:
                result, user_scores, _ = compute_fold(_Lists(number, users, items, k),
                                                      dataset, job)
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
            "interval": _interval(scores, results, int(config["n_boot"]), seed, skip)}


def _interval(scores: list[UserScores], results: Mapping[str, Any], n_boot: int, seed: int,
              skip: Mapping[str, str]) -> dict[str, Any] | None:
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
    found = bootstrap(scores, references, n_boot=n_boot, seed=seed,
                      not_applicable=dict(skip)).get("phase2_score")
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


class _Lists:
    """A model that replays a fold's uploaded lists for the runner's fold to score."""

    name = "scoring"

    def __init__(self, fold: int, users: np.ndarray, items: np.ndarray, k: int) -> None:
        self.fold, self.users, self.items, self.k = fold, users, items, k

    def train(self, train_df: pd.DataFrame, **kwargs) -> None:
        """Nothing: the lists are made."""

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        expected = user_ids["user_id"].to_numpy()
        if len(expected) != len(self.users) or not np.array_equal(expected, self.users):
            raise PredictionError(f"the lists are for other users than fold {self.fold}'s "
                                  f"{len(expected)} test users (in their order): upload the "
                                  f"run's own predictions, on the competition's folds")
        # as a model returns them; the runner's validation checks every id
        return pd.DataFrame(self.items.astype(np.int64),
                            index=pd.Index(self.users.astype(np.int64), name="user_id"),
                            columns=[str(c) for c in range(self.k)])
