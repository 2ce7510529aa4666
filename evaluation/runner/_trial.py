"""A trial run of a custom RecList before the first fold trains.

:func:`check_reclist` builds the RecList on a few users of fold 0 and runs its tests, so that
a missing attribute shows in seconds, at the line of the participant's code, not after a fold
has trained.
"""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, PredictionWarning, ScoringWarning

if TYPE_CHECKING:
    from evaluation.challenge import EvalRSRecList

#: Users of the trial run of a custom RecList.
TRIAL_USERS = 20


def trial_predictions(train: pd.DataFrame, users: np.ndarray, k: int) -> pd.DataFrame:
    """Every user's list: the ``k`` most played tracks of ``train`` (``-1`` padded)."""
    plays = train.groupby("track_id")["user_track_count"].sum() \
        if "user_track_count" in train.columns else train["track_id"].value_counts()
    top = plays.sort_index().sort_values(ascending=False, kind="stable").index.to_numpy()[:k]
    row = np.full(k, -1, dtype=np.int64)
    row[: len(top)] = top
    return pd.DataFrame(np.tile(row, (len(users), 1)), index=pd.Index(users, name="user_id"),
                        columns=[str(i) for i in range(k)])


def _participant_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the traceback outside the harness and installed libraries."""
    harness = Path(__file__).resolve().parents[1]
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        path = Path(frame.filename)
        if "site-packages" in path.parts or "importlib" in path.parts:
            continue
        try:
            path.resolve().relative_to(harness)
        except ValueError:
            return frame
    return frames[-1] if frames else None


def check_reclist(dataset: Any, cls: type[EvalRSRecList], *, k: int = 100,
                  n_users: int = TRIAL_USERS) -> None:
    """Build ``cls`` on ``n_users`` test users of fold 0 and run its tests, before training.

    The predictions are the most played tracks of those users' training rows, so no model
    is needed. The trial's scoring warnings (its values mean nothing) are not shown.

    Parameters
    ----------
    dataset : ChallengeDataset
        The run's dataset.
    cls : type
        The custom RecList, a subclass of ``EvalRSRecList`` (which is not checked itself).
    k : int
        The run's list length.
    n_users : int
        How many test users the trial scores.

    Raises
    ------
    ConfigError
        When building the RecList or one of its tests raises; the message names the
        exception and the participant's line, the original is chained.
    """
    train, test = dataset.get_train_and_test_sets(0, limit=n_users)
    users = test["user_id"].to_numpy()
    train = train[train["user_id"].isin(users)]
    predictions = trial_predictions(train, users, k)
    try:
        with warnings.catch_warnings():
            # the trial's values mean nothing: its scoring warnings are not shown (the
            # deprecation warnings are, once: they are about the participant's code)
            for category in (ScoringWarning, PredictionWarning, RuntimeWarning):
                warnings.simplefilter("ignore", category)
            rl = cls.for_fold(dataset, 0, predictions, model_name="trial", k=k,
                              x_train=train, y_test=test, warn_training_items=False)
            rl.run_tests()
    except Exception as exc:
        where = _participant_frame(exc)
        at = (f"\n  at {where.filename}:{where.lineno} in {where.name}: {where.line}"
              if where is not None else "")
        raise ConfigError(
            f"the custom RecList {cls.__module__}.{cls.__qualname__} failed on a trial run "
            f"({len(users)} test users of fold 0, before any training): "
            f"{type(exc).__name__}: {exc}{at}\nFix: correct that test (its attributes: "
            f"self.y_preds, self.y_test, self.x_train, self.x_test, self.dataset, self.ranks, "
            f"and the 2022 names _y_preds, _y_test, _x_train, _x_test, product_data, "
            f"_dense_repr) and run again.") from exc
