"""Rating-prediction errors: RMSE, MAE and their range-normalised forms NRMSE, NMAE.

``NRMSE = RMSE / (r_max - r_min)`` and ``NMAE = MAE / (r_max - r_min)``, the rating range being
``rating_range`` (e.g. ``(1, 5)`` for MovieLens) or, by default, the min and max of ``y_true``.
Aggregation: ``"global"`` (default) over all test ratings; ``"user"`` / ``"item"``: the error of
each user's (item's) ratings, then the mean over users (items) — pass ``users`` / ``items``.
"""

from __future__ import annotations

import numpy as np

from evaluation.errors import ConfigError, show_values
from evaluation.metrics._aggregate import check_aggregate, group_codes


def _arrays(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ConfigError(
            f"'y_true' and 'y_pred' must be 1-D arrays of the same length; got shapes "
            f"{y_true.shape} and {y_pred.shape}."
        )
    for name, values in (("y_true", y_true), ("y_pred", y_pred)):
        bad = ~np.isfinite(values)
        if bad.any():
            raise ConfigError(
                f"'{name}' must hold finite ratings; got {show_values(values[bad])} at positions "
                f"{show_values(np.flatnonzero(bad))}."
            )
    if len(y_true) == 0:
        raise ConfigError("Rating errors need at least one (y_true, y_pred) pair; got none.")
    return y_true, y_pred


def _groups(aggregate: str, users, items, n: int) -> np.ndarray | None:
    if aggregate == "global":
        return None
    key = users if aggregate == "user" else items
    name = "users" if aggregate == "user" else "items"
    if key is None:
        raise ConfigError(f"aggregate={aggregate!r} needs '{name}': one id per rating.")
    key = np.asarray(key)
    if key.shape != (n,):
        raise ConfigError(f"'{name}' must have one id per rating ({n}); got shape {key.shape}.")
    return group_codes(key)[0]


def _grouped_mean(values: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
    """Mean of ``values`` per group (one value for the global pool)."""
    if groups is None:
        return np.array([values.mean()])
    counts = np.bincount(groups)
    return np.bincount(groups, weights=values) / counts


def _range(y_true: np.ndarray, rating_range) -> float:
    low, high = (y_true.min(), y_true.max()) if rating_range is None else rating_range
    if not high > low:
        raise ConfigError(
            f"NRMSE/NMAE divide by the rating range, which must be positive; got "
            f"({low}, {high}). Pass rating_range=(min, max) of the rating scale."
        )
    return float(high - low)


def rmse(y_true, y_pred, *, users=None, items=None, aggregate: str = "global") -> float:
    """Root mean squared error (per group, then averaged over groups).

    Parameters
    ----------
    y_true, y_pred : array-like of float
        True and predicted ratings, one per (user, item) pair.
    users, items : array-like, optional
        The pair's user and item, for ``aggregate="user"`` or ``"item"``.
    aggregate : {"global", "user", "item"}
        Over all pairs, or per group and then averaged over groups.
    Returns
    -------
    float
        The error.

    Raises
    ------
    ConfigError
        On inputs of different lengths, non-finite values or a missing grouping.
    """
    check_aggregate(aggregate, ("user", "item", "global"), "rmse")
    y_true, y_pred = _arrays(y_true, y_pred)
    groups = _groups(aggregate, users, items, len(y_true))
    return float(np.sqrt(_grouped_mean((y_true - y_pred) ** 2, groups)).mean())


def mae(y_true, y_pred, *, users=None, items=None, aggregate: str = "global") -> float:
    """Mean absolute error (per group, then averaged over groups).

    Parameters
    ----------
    y_true, y_pred : array-like of float
        True and predicted ratings, one per (user, item) pair.
    users, items : array-like, optional
        The pair's user and item, for ``aggregate="user"`` or ``"item"``.
    aggregate : {"global", "user", "item"}
        Over all pairs, or per group and then averaged over groups.
    Returns
    -------
    float
        The error.

    Raises
    ------
    ConfigError
        On inputs of different lengths, non-finite values or a missing grouping.
    """
    check_aggregate(aggregate, ("user", "item", "global"), "mae")
    y_true, y_pred = _arrays(y_true, y_pred)
    groups = _groups(aggregate, users, items, len(y_true))
    return float(_grouped_mean(np.abs(y_true - y_pred), groups).mean())


def nrmse(y_true, y_pred, *, users=None, items=None, aggregate="global", rating_range=None):
    """RMSE divided by the rating range.

    Parameters
    ----------
    y_true, y_pred : array-like of float
        True and predicted ratings, one per (user, item) pair.
    users, items : array-like, optional
        The pair's user and item, for ``aggregate="user"`` or ``"item"``.
    aggregate : {"global", "user", "item"}
        Over all pairs, or per group and then averaged over groups.
    rating_range : (float, float), optional
        The scale's (min, max); default: the range of ``y_true``.
    Returns
    -------
    float
        The error.

    Raises
    ------
    ConfigError
        On inputs of different lengths, non-finite values or a missing grouping.
    """
    value = rmse(y_true, y_pred, users=users, items=items, aggregate=aggregate)
    return value / _range(np.asarray(y_true, dtype=np.float64), rating_range)


def nmae(y_true, y_pred, *, users=None, items=None, aggregate="global", rating_range=None):
    """MAE divided by the rating range.

    Parameters
    ----------
    y_true, y_pred : array-like of float
        True and predicted ratings, one per (user, item) pair.
    users, items : array-like, optional
        The pair's user and item, for ``aggregate="user"`` or ``"item"``.
    aggregate : {"global", "user", "item"}
        Over all pairs, or per group and then averaged over groups.
    rating_range : (float, float), optional
        The scale's (min, max); default: the range of ``y_true``.
    Returns
    -------
    float
        The error.

    Raises
    ------
    ConfigError
        On inputs of different lengths, non-finite values or a missing grouping.
    """
    value = mae(y_true, y_pred, users=users, items=items, aggregate=aggregate)
    return value / _range(np.asarray(y_true, dtype=np.float64), rating_range)
