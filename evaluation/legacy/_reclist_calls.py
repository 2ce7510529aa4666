"""The 2022 and 2023 ways of building an ``EvalRSRecList``.

* 2022: a subclass with ``__init__(self, model, dataset, y_preds=None)`` that calls
  ``super().__init__(model, dataset, y_preds)``. ``EvalRSRecList.for_fold`` (how the runner
  builds a RecList) hands such a class to :func:`build_reclist`, which builds it with a
  :class:`Fold2022` as ``dataset`` (the fold's frames under their 2022 names, and what the
  harness needs); ``EvalRSRecList.__init__`` hands that call to :func:`unpack_call`.
* 2023: ``EvalRSRecList(dataset=..., model_name=..., predictions=...)`` without a fold: the
  2023 RecList scored fold 0, and so does this call (:func:`unpack_call`).
"""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd

from evaluation._util.once import warn_once
from evaluation.errors import ConfigError
from evaluation.legacy._rec_dataset import RecDataset


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


def build_reclist(cls: type, dataset: Any, fold: int, predictions: pd.DataFrame,
                  **options: Any) -> Any:
    """The 2022 call of ``cls``, whose ``__init__`` is ``(self, model, dataset, ...)``.

    Parameters
    ----------
    cls : type
        A subclass of ``EvalRSRecList`` with the 2022 constructor.
    dataset, fold, predictions, **options
        As for ``EvalRSRecList``.

    Returns
    -------
    EvalRSRecList
        The RecList of the fold.
    """
    warn_once(f"reclist-init:{cls.__module__}.{cls.__qualname__}",
              f"{cls.__qualname__}.__init__(self, model, dataset, y_preds=None) is the 2022 "
              f"RecList constructor; the harness calls it with the fold's frames. Modern "
              f"spelling: drop the __init__ (or take (dataset, fold, predictions, **kwargs) "
              f"and pass them on to EvalRSRecList.__init__)", stacklevel=4)
    bundle = Fold2022(dataset, fold, predictions, options)
    if "y_preds" in inspect.signature(cls).parameters:
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
    return dataset, fold, predictions, {}
