"""Rating prediction in the protocols: which models predict ratings, their checked predictions
and the errors (RMSE, MAE, NRMSE, NMAE) against the test ratings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, DataError, PredictionError, show_values
from evaluation.metrics import evaluate_ratings
from evaluation.splits import Split, check_events

RATING_ERRORS = ("rmse", "mae", "nrmse", "nmae")


def supports_ratings(model: Any) -> bool:
    """Tell whether ``model`` predicts ratings.

    Parameters
    ----------
    model : Any
        A ``RecModel`` or any object with the same methods.

    Returns
    -------
    bool
        The model's own boolean ``supports_ratings`` attribute when it has one, else whether it
        has a callable ``predict_ratings``.
    """
    flag = getattr(model, "supports_ratings", None)
    if isinstance(flag, bool):
        return flag
    return callable(getattr(model, "predict_ratings", None))


def rating_errors_from(
    y_pred: np.ndarray, y_true: np.ndarray, *, users=None, items=None,
    aggregate: str = "global", rating_range: tuple[float, float] | None = None,
) -> dict[str, float]:
    """``{name: value}`` of RMSE, MAE, NRMSE and NMAE of predicted against true ratings."""
    return evaluate_ratings(y_true, y_pred, RATING_ERRORS, users=users, items=items,
                            aggregate=aggregate, rating_range=rating_range)


def rating_errors(
    model: Any, test_df: pd.DataFrame, *, aggregate: str = "global",
    rating_range: tuple[float, float] | None = None,
) -> dict[str, float]:
    """Errors of ``model.predict_ratings`` on the rated events of ``test_df``.

    Parameters
    ----------
    model : Any
        A trained model that predicts ratings (see :func:`supports_ratings`).
    test_df : pandas.DataFrame
        Test events with ``user_id``, ``track_id`` and the true ``rating``.
    aggregate : {"global", "user", "item"}
        ``"global"`` pools all test ratings; ``"user"`` (``"item"``) computes each error per
        user (item), then averages.
    rating_range : tuple of float, optional
        The rating scale's (min, max), which NRMSE and NMAE divide by; default: the range of
        the test ratings.

    Returns
    -------
    dict of str to float
        ``rmse``, ``mae``, ``nrmse`` and ``nmae``.

    Raises
    ------
    ConfigError
        When the model does not predict ratings.
    DataError
        When ``test_df`` lacks the ``user_id``, ``track_id`` or ``rating`` column.
    PredictionError
        When ``predict_ratings`` returns the wrong number of values, values that are not
        numbers, or missing or infinite ratings.
    """
    if not supports_ratings(model):
        raise ConfigError(f"{type(model).__name__} does not predict ratings: implement "
                          f"predict_ratings(pairs_df) -> pd.Series to get rating errors.")
    check_events(test_df, ["user_id", "track_id"], name="test")
    if "rating" not in test_df.columns:
        raise DataError(f"test: rating errors need a 'rating' column; the test events have "
                        f"{list(map(str, test_df.columns))}.")
    values = predicted_ratings(model, test_df)
    return rating_errors_from(values, test_df["rating"].to_numpy(np.float64),
                              users=test_df["user_id"].to_numpy(),
                              items=test_df["track_id"].to_numpy(),
                              aggregate=aggregate, rating_range=rating_range)


def predicted_ratings(model: Any, test_df: pd.DataFrame) -> np.ndarray:
    """``model.predict_ratings`` for the (user_id, track_id) rows of ``test_df``, as float64."""
    pairs = test_df[["user_id", "track_id"]]
    name = type(model).__name__
    pred = _aligned(model.predict_ratings(pairs), pairs, name)
    try:
        values = np.asarray(pred, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise PredictionError(f"{name}.predict_ratings must return numeric ratings: "
                              f"{exc}") from None
    if not isinstance(pred, pd.Series) and len(values) != len(pairs):
        raise PredictionError(f"{name}.predict_ratings returned {len(values)} values for "
                              f"{len(pairs)} pairs; return one per row of pairs_df.")
    bad = ~np.isfinite(values)
    if bad.any():
        rows = pairs[bad].head(5).to_dict("records")
        raise PredictionError(f"{name}.predict_ratings returned "
                              f"{int(bad.sum())} missing or infinite ratings, e.g. for "
                              f"{show_values(rows)}; predict a finite rating for every pair "
                              f"(fall back to a global mean for unknown users or items).")
    return values


def _aligned(pred: Any, pairs: pd.DataFrame, name: str) -> Any:
    """``pred`` in the row order of ``pairs`` when it is a Series indexed like them, else as is."""
    if not isinstance(pred, pd.Series):
        return pred
    if len(pred) == len(pairs) and pred.index.equals(pairs.index):
        return pred
    if pred.index.has_duplicates or not pairs.index.isin(pred.index).all():
        raise PredictionError(
            f"{name}.predict_ratings returned {len(pred)} values whose index does not "
            f"match the {len(pairs)} rows asked for; return a Series indexed like "
            f"pairs_df (pd.Series(values, index=pairs_df.index)).")
    return pred.reindex(pairs.index)


def rating_scale(split: Split) -> tuple[float, float]:
    """(min, max) of the ratings in train and test: the scale NRMSE and NMAE divide by."""
    parts = [f["rating"].to_numpy(np.float64) for f in (split.train, split.test)
             if "rating" in f.columns and len(f)]
    values = np.concatenate(parts) if parts else np.zeros(1)
    return float(values.min()), float(values.max())
