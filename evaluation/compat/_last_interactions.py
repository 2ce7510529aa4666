"""The 2023 split on each user's last interactions (``folded_dataset_split=False``), scored as
the 2023 ``EvalRSReclist`` scored it.

The split: every event at a user's latest timestamp is a test event, so a user may have
several targets (``evaluation.splits.leave_last_out``, on the users sampled with the fixed
seed 42 and reduced to their k-core, as in 2023). The 2023 RecList compared its predictions
with its targets row by row (reclist's ``hits_at_k`` on ``.values``): each test row, a
(user, target) pair, is one case, whose list is the prediction row at the same position (the
2023 notebooks predicted for ``_get_test_set()[['user_id']]``, one row per test row). HIT_RATE,
MRR and each MRED average over cases, so a user with three targets counts three times;
BEING_LESS_WRONG averages over the missed cases. These numbers are of another protocol than
the leaderboard's folds (one target per user) and never go into its score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.jsonable import to_jsonable
from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    MRED_SLICES,
    MRR,
    STATS,
    ChallengeFold,
    dataset_not_applicable,
)
from evaluation.errors import PredictionError
from evaluation.splits import Split

#: The protocol of the 2023 split, as the RecList's ``protocol`` and in its report.
PROTOCOL_2023 = "evalrs-2023-last-interactions"
#: What the protocol is, said where it scores.
PROTOCOL_2023_NOTE = (
    "protocol evalrs-2023-last-interactions: the 2023 split (every event at a user's latest "
    "timestamp is a target), each (user, target) pair scored as one case, as the 2023 "
    "EvalRSReclist did; not the leaderboard's folds (one target per user), which it never "
    "feeds")
#: The tests of the 2023 RecList (it had no LATENT_DIVERSITY).
TESTS_2023: tuple[str, ...] = (HIT_RATE, MRR, *MRED_SLICES, BEING_LESS_WRONG, STATS)


def case_predictions(predictions: Any, case_users: np.ndarray, k: int) -> pd.DataFrame:
    """One list per case (test row): ``predictions`` as the 2023 RecList read them.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Indexed by ``user_id`` (or with that column), the lists in the columns, best first:
        either one row per test row, in the test set's order (the 2023 call
        ``model.predict(dataset._get_test_set()[['user_id']])``; a user's rows may differ),
        or one row per test user (the same list for each of the user's targets).
    case_users : numpy.ndarray
        The user of each test row, in order.
    k : int
        The first ``k`` columns are scored.

    Returns
    -------
    pandas.DataFrame
        One row per case, indexed by ``user_id``, columns ``"0"``..``str(k - 1)``.

    Raises
    ------
    PredictionError
        When the frame is neither form, or holds a value that is not a track id.
    """
    if not isinstance(predictions, pd.DataFrame):
        raise PredictionError(f"predictions must be a pandas DataFrame indexed by user_id, "
                              f"got {type(predictions).__name__}")
    if "user_id" in predictions.columns and predictions.index.name != "user_id":
        predictions = predictions.set_index("user_id")
    values = predictions.iloc[:, :k]
    if values.shape[1] == 0 or values.isna().to_numpy().any() \
            or not all(pd.api.types.is_numeric_dtype(t) for t in values.dtypes):
        raise PredictionError(
            f"predictions: every cell must be a track id (a whole number), with at least one "
            f"column; got columns {list(predictions.columns)[:5]}... with dtypes "
            f"{sorted({str(t) for t in predictions.dtypes})}. Fix: return track ids, -1 for "
            f"an empty slot.")
    lists = values.to_numpy()
    if not np.array_equal(lists, np.round(lists)):
        raise PredictionError("predictions: a cell is not a whole number; track ids are")
    lists = lists.astype(np.int64)
    index = predictions.index.to_numpy()
    if len(index) == len(case_users) and np.array_equal(index, case_users):
        rows = np.arange(len(case_users))
    elif predictions.index.is_unique and np.isin(case_users, index).all():
        rows = predictions.index.get_indexer(case_users)
    else:
        missing = np.setdiff1d(case_users, index)
        raise PredictionError(
            f"predictions for the 2023 last-interaction split: {len(index)} rows for "
            f"{len(case_users)} test rows of {len(np.unique(case_users))} users, neither one "
            f"row per test row in the test set's order nor one row per test user"
            + (f" ({len(missing)} test users have no row, e.g. {missing[:3].tolist()})"
               if len(missing) else "")
            + ". Fix: predict for dataset._get_test_set()[['user_id']] (its rows, in order) "
              "or for each of its users once.")
    return pd.DataFrame(lists[rows], index=pd.Index(case_users, name="user_id"),
                        columns=[str(i) for i in range(lists.shape[1])])


class LastInteractionScorer:
    """The 2023 RecList's tests on the last-interaction split, one case per test row.

    Offers what a test of a RecList reads: ``dataset``, ``fold`` (0), ``k``, ``x_train``
    (the split's training events), ``x_test`` (``user_id`` of each test row), ``y_test``
    (``track_id`` indexed by ``user_id``, one row per case), ``y_preds`` (one list per case,
    rows as ``y_test``'s) and ``state`` (the cases as a
    :class:`~evaluation.challenge.ChallengeFold`: ``state.ranks`` per case).

    Parameters
    ----------
    dataset : ChallengeDataset
        A 2023 dataset built with ``folded_dataset_split=False``.
    predictions : pandas.DataFrame
        See :func:`case_predictions`.
    k : int
        List length scored.
    """

    def __init__(self, dataset: Any, predictions: Any, *, k: int = 100) -> None:
        split: Split = dataset.last_interaction_split()
        test = split.test
        self.dataset, self.fold, self.k = dataset, 0, k
        self.x_train = split.train
        self.x_test = test[["user_id"]]
        self.y_test = test[["user_id", "track_id"]].set_index("user_id")
        case_users = test["user_id"].to_numpy()
        self.y_preds = case_predictions(predictions, case_users, k)
        self.not_applicable = dataset_not_applicable(dataset)
        self.state = ChallengeFold.from_frames(
            case_users, self.y_test["track_id"].to_numpy(), self.y_preds.to_numpy(),
            train=self.x_train, users=dataset.df_users, tracks=dataset.df_tracks,
            vectors=dataset.track_vectors, k=k)
        self._vector_detail: dict | None = None

    def test(self, name: str) -> Any:
        """The raw result of test ``name`` of :data:`TESTS_2023` over the cases; None when
        the dataset cannot measure it."""
        if name not in TESTS_2023:
            raise KeyError(f"{name!r} is no test of the 2023 RecList ({list(TESTS_2023)})")
        if name in self.not_applicable:
            return None
        if name == HIT_RATE:
            return self.state.hit_rate()
        if name == MRR:
            return self.state.mrr()
        if name in MRED_SLICES:
            return self.state.mred(MRED_SLICES[name])
        if name == BEING_LESS_WRONG:
            return self._being_less_wrong()["value"]
        return self._stats()

    def _being_less_wrong(self) -> dict:
        if self._vector_detail is None:
            self._vector_detail = self.state.being_less_wrong()
        return self._vector_detail

    def _stats(self) -> dict:
        """Test users, cases (targets) and the fewest and most targets of a user."""
        per_user = pd.Series(self.y_test.index).value_counts()
        return {"num_users": int(len(per_user)), "num_targets": int(len(self.y_test)),
                "min_targets": int(per_user.min()), "max_targets": int(per_user.max()),
                "k": self.state.k}

    def details(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Per-test detail of ``raw`` (``{test: raw result}``): the groups of a slice test,
        the cases behind BEING_LESS_WRONG, any other raw result as it is."""
        out: dict[str, Any] = {}
        for name, value in raw.items():
            if name in self.not_applicable:
                out[name] = {"not_applicable": self.not_applicable[name]}
            elif name == BEING_LESS_WRONG:
                out[name] = self._being_less_wrong()
            else:
                out[name] = to_jsonable(value.to_dict() if hasattr(value, "to_dict") else value)
        return out
