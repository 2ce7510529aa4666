"""The 2022 and 2023 ways of building an ``EvalRSRecList``, and a trial run of a custom one.

* 2022: a subclass with ``__init__(self, model, dataset, y_preds=None)`` that calls
  ``super().__init__(model, dataset, y_preds)``. The runner builds such a class with a
  :class:`Fold2022` as ``dataset`` (the fold's frames under their 2022 names, and what the
  harness needs), which ``EvalRSRecList.__init__`` unpacks.
* 2023: ``EvalRSRecList(dataset=..., model_name=..., predictions=...)`` without a fold: the
  2023 RecList scored fold 0, and so does this call.

:func:`check_reclist` builds a custom RecList on a few users of fold 0 and runs its tests
before the first fold trains, so that a missing attribute shows in seconds, at the line of
the participant's code.
"""

from __future__ import annotations

import inspect
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.compat._modules import RecDataset
from evaluation.compat._once import warn_once
from evaluation.errors import ConfigError, PredictionWarning, ScoringWarning

#: Users of the trial run of a custom RecList.
TRIAL_USERS = 20


class Fold2022(RecDataset):
    """One fold as the ``dataset`` argument of a 2022-style RecList constructor.

    The 2022 names (``x_train``, ``x_test``, ``y_test``, ``catalog``) read the fold's frames;
    ``challenge_dataset``, ``fold``, ``predictions`` and ``options`` carry what the harness's
    ``EvalRSRecList`` needs.
    """

    def __init__(self, dataset: Any, fold: int, predictions: pd.DataFrame,
                 options: dict[str, Any]) -> None:
        super().__init__()
        self.challenge_dataset = dataset
        self.fold = fold
        self.predictions = predictions
        self.options = options
        test = options.get("y_test")
        if test is None:
            test = dataset.get_test_set(fold)
        if "user_id" not in test.columns:
            test = test.reset_index()
        train = options.get("x_train")
        self.load(x_train=dataset.get_train_set(fold) if train is None else train,
                  x_test=test[["user_id"]].reset_index(drop=True),
                  y_test=test.set_index("user_id")[["track_id"]],
                  users=dataset.df_users, items=dataset.df_tracks)


def _init_of(cls: type) -> Any:
    """The ``__init__`` a call of ``cls`` runs (found along the MRO)."""
    return next(vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k))


def takes_2022_arguments(cls: type) -> bool:
    """Whether ``cls.__init__`` is the 2022 constructor ``(self, model, dataset, ...)``."""
    try:
        params = list(inspect.signature(_init_of(cls)).parameters)
    except (TypeError, ValueError):
        return False
    return params[1:3] == ["model", "dataset"]


def build_reclist(cls: type, dataset: Any, fold: int, predictions: pd.DataFrame,
                  **options: Any) -> Any:
    """``cls(dataset, fold, predictions, **options)``, or the 2022 call for a 2022 class.

    Parameters
    ----------
    cls : type
        ``EvalRSRecList`` or a subclass.
    dataset, fold, predictions, **options
        As for ``EvalRSRecList``.

    Returns
    -------
    EvalRSRecList
        The RecList of the fold.
    """
    if not takes_2022_arguments(cls):
        return cls(dataset, fold, predictions, **options)
    warn_once(f"reclist-init:{cls.__module__}.{cls.__qualname__}",
              f"{cls.__qualname__}.__init__(self, model, dataset, y_preds=None) is the 2022 "
              f"RecList constructor; the harness calls it with the fold's frames. Modern "
              f"spelling: drop the __init__ (or take (dataset, fold, predictions, **kwargs) "
              f"and pass them on to EvalRSRecList.__init__)", stacklevel=3)
    bundle = Fold2022(dataset, fold, predictions, options)
    if "y_preds" in inspect.signature(_init_of(cls)).parameters:
        return cls(model=None, dataset=bundle, y_preds=predictions)
    return cls(model=None, dataset=bundle)


def unpack_call(dataset: Any, fold: Any, predictions: Any, kwargs: dict[str, Any]
                ) -> tuple[Any, int, Any, dict[str, Any]]:
    """``EvalRSRecList.__init__``'s arguments in their modern form.

    Parameters
    ----------
    dataset, fold, predictions : Any
        As received: modern, the 2022 form ``(model, Fold2022, y_preds)`` (positional or
        by keyword) or the 2023 form (no ``fold``).
    kwargs : dict
        The other keyword arguments; the 2022 ``model``/``y_preds`` and the 2023
        ``similarity_model`` are taken out of it.

    Returns
    -------
    tuple
        ``(dataset, fold, predictions, options)``: ``options`` are keyword arguments the
        2022 form carries (``k``, ``x_train``, ...), to apply where not given.
    """
    bundle = next((a for a in (dataset, fold) if isinstance(a, Fold2022)), None)
    if bundle is not None:
        kwargs.pop("model", None)
        y_preds = kwargs.pop("y_preds", predictions)
        return (bundle.challenge_dataset, bundle.fold,
                bundle.predictions if y_preds is None else y_preds, dict(bundle.options))
    if "model" in kwargs or "y_preds" in kwargs or isinstance(fold, RecDataset):
        raise ConfigError(
            "EvalRSRecList(model, dataset, y_preds): the 2022 constructor works for a subclass "
            "the runner builds (evaluate(..., custom_RecList=MyRecList)), not called by hand. "
            "Fix: EvalRSRecList(dataset, fold, predictions) with a ChallengeDataset, the fold "
            "number and the model's predictions for the fold's test users.")
    if fold is None:
        warn_once("reclist-call:2023",
                  "EvalRSRecList(dataset=..., model_name=..., predictions=...) without a fold "
                  "is the 2023 call, which scored fold 0; pass fold=0", stacklevel=4)
        fold = 0
    if predictions is None:
        raise ConfigError("EvalRSRecList needs predictions: the model's predict() output for "
                          "the fold's test users (predictions=...).")
    return dataset, fold, predictions, {}


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


def check_reclist(dataset: Any, cls: type, *, k: int = 100,
                  n_users: int = TRIAL_USERS) -> None:
    """Build ``cls`` on ``n_users`` test users of fold 0 and run its tests, before training.

    The predictions are the most played tracks of those users' training rows, so no model
    is needed. The trial's scoring warnings (its values mean nothing) are not shown.

    Parameters
    ----------
    dataset : ChallengeDataset
        The run's dataset.
    cls : type
        The custom RecList (``EvalRSRecList`` itself is not checked).
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
            rl = build_reclist(cls, dataset, 0, predictions, model_name="trial", k=k,
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
