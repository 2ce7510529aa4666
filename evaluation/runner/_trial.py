"""A trial run of a custom RecList before the first fold trains.

:func:`check_reclist` builds the RecList on a few test users of fold 0, with fold 0's real
training frame and predictions a real model could make (the most played training tracks),
and runs its tests: a misspelt name shows in seconds, at the line of the participant's code,
not after a fold has trained. Only a mistake no data can cause stops the run there
(:func:`is_code_error`); any other failure may come from the trial's few users or its
predictions, so it is said (a :class:`~evaluation.errors.RunWarning`) and the run goes on.
"""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, PredictionWarning, RunWarning, ScoringWarning

if TYPE_CHECKING:
    from evaluation.challenge_reclist import EvalRSRecList

#: Users of the trial run of a custom RecList.
TRIAL_USERS = 20
#: What a test may read, named when the trial fails.
_ATTRIBUTES = ("self.y_preds, self.y_test, self.x_train, self.x_test, self.dataset, "
               "self.ranks, and the 2022 names _y_preds, _y_test, _x_train, _x_test, "
               "product_data, _dense_repr")


def trial_predictions(train: pd.DataFrame, users: np.ndarray, k: int) -> pd.DataFrame:
    """Every user's list: the ``k`` most played tracks of ``train`` (``-1`` padded).

    What a popularity model trained on ``train`` predicts: every track it names is a track
    of ``train``, as with a real model. Ties go to the smaller track id.
    """
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
        # compiled extensions (numpy's .pyx) name a relative path
        if not path.is_absolute() or "site-packages" in path.parts \
                or "importlib" in path.parts:
            continue
        try:
            path.resolve().relative_to(harness)
        except ValueError:
            return frame
    return frames[-1] if frames else None


def _raised_in_participant_code(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is the participant's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and _participant_frame(exc) is frames[-1]


def is_code_error(exc: BaseException, cls: type) -> bool:
    """Whether ``exc`` is a mistake in the code that no data can cause.

    A ``NameError`` (a misspelt name), an ``AttributeError`` on the RecList itself
    (``self._y_pred``), or a ``TypeError`` of a call of the class or of a test with the
    wrong arguments (raised by the call, before the participant's code ran). Any other error
    may depend on the users, the training frame or the predictions, which differ between the
    trial and a real fold.

    Parameters
    ----------
    exc : BaseException
        What the trial raised.
    cls : type
        The custom RecList class.
    """
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError):
        return True
    if isinstance(exc, AttributeError):
        # Python sets ``obj``: the object whose attribute was missing
        target = getattr(exc, "obj", None)
        return isinstance(target, cls) or target is cls
    if isinstance(exc, TypeError):
        # a call with the wrong arguments fails before the called function's first line
        return "argument" in str(exc) and not _raised_in_participant_code(exc)
    return False


def check_reclist(dataset: Any, cls: type[EvalRSRecList], *, k: int = 100,
                  n_users: int = TRIAL_USERS) -> str | None:
    """Build ``cls`` on ``n_users`` test users of fold 0 and run its tests, before training.

    The RecList gets fold 0's full training frame (as on the real fold) and, as predictions,
    the ``k`` most played tracks of that frame for every user, so no model is needed. The
    trial's scoring warnings (its values mean nothing) are not shown.

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

    Returns
    -------
    str or None
        None when the trial passed; else what failed (also warned as a ``RunWarning``): an
        error data can cause, so the run goes on and a real fold decides.

    Raises
    ------
    ConfigError
        When a test fails with an error no data can cause (:func:`is_code_error`); the
        message names the exception and the participant's line, the original is chained.
    """
    train, test = dataset.get_train_and_test_sets(0, limit=n_users)
    users = test["user_id"].to_numpy()
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
        what = (f"the custom RecList {cls.__module__}.{cls.__qualname__} failed on a trial "
                f"run ({len(users)} test users of fold 0, before any training, with the "
                f"fold's training events and its {k} most played tracks as every user's "
                f"list): {type(exc).__name__}: {exc}{at}")
        if is_code_error(exc, cls):
            raise ConfigError(f"{what}\nFix: correct that test (its attributes: "
                              f"{_ATTRIBUTES}) and run again.") from exc
        message = (f"{what}\nThis error may come from the trial's data, not the code: the "
                   f"full run may still succeed, so it goes on (a real fold that fails the "
                   f"same way stops it there).")
        warnings.warn(RunWarning(message), stacklevel=3)
        return message
    return None
