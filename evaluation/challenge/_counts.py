"""Exact sums of play counts per user, track or artist (the activity and popularity slices)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation._util.arrays import dense_ok
from evaluation.errors import DataError

#: Rows per ``np.bincount`` call in :func:`sum_by_key`.
_SUM_CHUNK = 1 << 20


#: Float64 sums of non-negative integers are exact below this; int64 holds them.
_EXACT_SUM = 2.0**53


def sum_by_key(keys, weights, query, *, name: str = "weights") -> np.ndarray:
    """For each id in ``query``: the sum of ``weights`` over the rows with that key (0 if none).

    The sums are taken in float64, exact below 2**53 (int64 arithmetic would wrap larger sums
    to negative values: the wrong activity or popularity group).

    Parameters
    ----------
    keys : array-like of int
        The key of each row.
    weights : array-like
        Non-negative integer counts, one per row.
    query : array-like of int
        The ids to sum for.
    name : str
        What the counts are, for the error message.

    Returns
    -------
    numpy.ndarray
        int64 sums, one per id of ``query``.

    Raises
    ------
    DataError
        When the counts of a key sum to 2**53 or more.
    """
    keys = np.asarray(keys)
    query = np.asarray(query)
    weights = np.asarray(weights)
    out = np.zeros(len(query), dtype=np.int64)
    if len(keys) == 0 or len(query) == 0:
        return out
    kmin, kmax = int(keys.min()), int(keys.max())
    if dense_ok(kmin, kmax, len(keys)):  # else a table would be mostly empty
        # float64 sums of integer counts are exact below 2**53. In chunks: bincount converts
        # its keys to intp and its weights to float64, two copies of a whole training set.
        sums = np.zeros(kmax + 1)
        for start in range(0, len(keys), _SUM_CHUNK):
            stop = start + _SUM_CHUNK
            sums += np.bincount(keys[start:stop], minlength=kmax + 1,
                                weights=weights[start:stop].astype(np.float64, copy=False))
        _check_sums(sums, name)
        inside = (query >= 0) & (query <= kmax)
        out[inside] = np.rint(sums[query[inside]]).astype(np.int64)
        return out
    # float64 here too: pandas sums int64 groups with wrapping arithmetic
    sums = pd.Series(weights.astype(np.float64, copy=False)).groupby(keys).sum()
    _check_sums(sums.to_numpy(), name)
    return np.rint(sums.reindex(query, fill_value=0).to_numpy()).astype(np.int64)


def _check_sums(sums: np.ndarray, name: str) -> None:
    """Nothing; a ``DataError`` when a sum is too large to be exact."""
    top = sums.max(initial=0.0)
    if not top < _EXACT_SUM:  # NaN included
        raise DataError(
            f"{name}: the counts of one key sum to {top:.4g}, at or above 2**53, where sums of "
            "counts are no longer exact (and do not fit the activity and popularity groups); "
            "no play count is that large: correct or drop the rows with impossible counts"
        )
