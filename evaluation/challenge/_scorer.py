"""The challenge's tests on one fold's predictions, computed without reclist.

:class:`FoldScorer` validates the predictions, builds the fold's scoring state
(:class:`ChallengeFold`) once and computes every test of ``TESTS`` from it. ``score`` uses it
directly; :class:`EvalRSRecList` wraps one to render the same numbers through reclist.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.jsonable import to_jsonable
from evaluation.challenge._applicable import dataset_not_applicable
from evaluation.challenge._fold import ChallengeFold, Slice
from evaluation.challenge._mred import SliceMissRates
from evaluation.challenge._spec import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    MRED_SLICES,
    MRR,
    STATS,
    TESTS,
)
from evaluation.challenge._vectors import as_vectors
from evaluation.errors import EvalRSError, PredictionError
from evaluation.predictions import validate_predictions

#: The tests whose detail is a summary of the users behind the value, not the raw result.
_VECTOR_TESTS = (BEING_LESS_WRONG, LATENT_DIVERSITY)


def check_result(name: str, value: Any) -> None:
    """Check that a test's result can go into the results: JSON with finite numbers only.

    Parameters
    ----------
    name : str
        The test's name, for the message.
    value : Any
        What the test returned.

    Raises
    ------
    EvalRSError
        When ``value`` holds a NaN or infinity or is not JSON-writable.
    """
    try:
        json.dumps(to_jsonable(value, nonfinite_to_none=False), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EvalRSError(
            f"test {name!r} returned {value!r}, which cannot go into the results: {exc}. "
            "Return a finite float, or a dict/list of finite numbers and strings."
        ) from None


def leaderboard_value(value: Any) -> Any:
    """The value of a test result in plain Python types: an MRED for a slice test."""
    if isinstance(value, SliceMissRates):
        return value.value
    return to_jsonable(value)


def _fold_frames(dataset, fold: int, x_train: pd.DataFrame | None,
                 y_test: pd.DataFrame | None, *, need_train: bool = True
                 ) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """``(train rows, test rows with a user_id column)`` of the fold, the given ones first;
    no training rows (None) when none are given and they are not needed."""
    test = dataset.get_test_set(fold) if y_test is None else y_test
    if "user_id" not in test.columns:
        test = test.reset_index()
    train = dataset.get_train_set(fold) if x_train is None and need_train else x_train
    return train, test


def _check_normalised(predictions: Any, users: np.ndarray, k: int) -> None:
    """Nothing; a ``PredictionError`` unless ``predictions`` is a validated frame for ``users``."""
    if (not isinstance(predictions, pd.DataFrame) or predictions.shape != (len(users), k)
            or not np.array_equal(predictions.index.to_numpy(), users)):
        raise PredictionError(
            "EvalRSRecList(validate=False) expects predictions already normalised by "
            "validate_predictions (one row per test user, in test order, k columns); "
            "pass validate=True"
        )


class FoldScorer:
    """The challenge's tests on one fold.

    Parameters
    ----------
    dataset : ChallengeDataset
        The dataset the fold belongs to (its users, tracks and track vectors).
    fold : int
        The fold.
    predictions : pandas.DataFrame
        What the model's ``predict`` returned for the fold's test users; validated unless
        ``validate=False``, which expects the output of
        :func:`~evaluation.predictions.validate_predictions`.
    k : int
        Predictions per user.
    x_train, y_test : pandas.DataFrame, optional
        The fold's training rows and test rows (default: the dataset's fold; no training rows,
        ``x_train`` None, when ``slices`` are given).
    validate : bool
        Validate ``predictions``.
    warn_training_items : bool
        Warn about recommended training items (the costliest part of validation).
    slices : dict of str to Slice, optional
        The fold's MRED slices, computed once for its test users by
        :func:`~evaluation.challenge.fold_slices` (a scoring worker keeps them between
        uploads); default: computed here from the training rows.

    Raises
    ------
    PredictionError
        When the predictions are invalid.

    Notes
    -----
    The attributes ``dataset``, ``fold``, ``k``, ``x_train``, ``x_test`` (test users),
    ``y_test`` (target ``track_id`` per ``user_id``), ``y_preds`` (the validated predictions)
    and ``state`` (the :class:`ChallengeFold`) all follow the same row order.
    ``not_applicable`` (test -> reason) names the leaderboard tests the dataset cannot
    measure (decided once per dataset, see :func:`dataset_not_applicable`): their result is
    None and they are not computed.
    """

    def __init__(self, dataset, fold: int, predictions: pd.DataFrame, *, k: int = 100,
                 x_train: pd.DataFrame | None = None, y_test: pd.DataFrame | None = None,
                 validate: bool = True, warn_training_items: bool = True,
                 slices: dict[str, Slice] | None = None) -> None:
        self.dataset = dataset
        self.fold = fold
        self.k = k
        self.x_train, test = _fold_frames(dataset, fold, x_train, y_test,
                                          need_train=slices is None)
        self.x_test = test[["user_id"]].reset_index(drop=True)
        self.y_test = test.set_index("user_id")[["track_id"]]
        users = self.x_test["user_id"].to_numpy()
        if validate:
            predictions = validate_predictions(
                predictions, users, k=k, catalog=dataset.df_tracks.index,
                train=self.x_train if warn_training_items else None,
                repeated=getattr(dataset, "repeated_items", "first"))
        else:
            _check_normalised(predictions, users, k)
        self.y_preds = predictions
        self.not_applicable = dataset_not_applicable(dataset)
        vectors = dataset.track_vectors
        if vectors is None and BEING_LESS_WRONG in self.not_applicable:
            vectors = as_vectors(None)  # not applicable, said once per run: no warning per fold
        self.state = ChallengeFold.from_frames(
            users, self.y_test["track_id"].to_numpy(), predictions.to_numpy(),
            train=self.x_train, users=dataset.df_users, tracks=dataset.df_tracks,
            vectors=vectors, k=k, slices=slices,
        )
        self._details: dict[str, dict] = {}
        self._raw: dict[str, Any] | None = None

    def test(self, name: str) -> Any:
        """The raw result of the challenge test ``name`` (one of ``TESTS``).

        Returns
        -------
        Any
            A float for HIT_RATE, MRR and the vector tests, a :class:`SliceMissRates` for an
            MRED test, a dict for ``stats``; None for a test that is not applicable.
        """
        if name in self.not_applicable:
            return None
        return self._computations()[name]()

    def detail(self, name: str) -> dict:
        """The value of a vector test with the users behind it, computed once per fold."""
        if name not in self._details:
            self._details[name] = (self.state.being_less_wrong() if name == BEING_LESS_WRONG
                                   else self.state.latent_diversity())
        return self._details[name]

    def run_tests(self) -> dict[str, Any]:
        """``{test: raw result}`` for every test of ``TESTS``, each checked for the results.

        The tests run once; later calls return the same results.
        """
        if self._raw is None:
            results = {name: self.test(name) for name in TESTS}
            for name, value in results.items():
                check_result(name, value)
            self._raw = results
        return self._raw

    def results(self) -> dict[str, Any]:
        """``{test: value}`` in plain Python types; a slice test's value is its MRED."""
        return {name: leaderboard_value(value) for name, value in self.run_tests().items()}

    def details(self, raw: dict[str, Any] | None = None) -> dict[str, Any]:
        """Per-test detail: MR and each MR_g of the slice tests, the users behind the vector
        tests, ``{"not_applicable": reason}`` for a test the dataset cannot measure, and the
        raw result of any other test (of ``raw``, default: every test)."""
        raw = self.run_tests() if raw is None else raw
        return {name: to_jsonable(self._detail_of(name, value)) for name, value in raw.items()}

    def _detail_of(self, name: str, value: Any) -> Any:
        """The detail of test ``name`` whose raw result is ``value``."""
        if name in self.not_applicable:
            return {"not_applicable": self.not_applicable[name]}
        return self.detail(name) if name in _VECTOR_TESTS else value

    def _computations(self) -> dict[str, Callable[[], Any]]:
        """Test name -> the function that computes its raw result."""
        state = self.state
        out: dict[str, Callable[[], Any]] = {HIT_RATE: state.hit_rate, MRR: state.mrr}
        for test, slice_name in MRED_SLICES.items():
            out[test] = partial(state.mred, slice_name)
        out[BEING_LESS_WRONG] = lambda: self.detail(BEING_LESS_WRONG)["value"]
        out[LATENT_DIVERSITY] = lambda: self.detail(LATENT_DIVERSITY)["value"]
        out[STATS] = state.stats
        return out
