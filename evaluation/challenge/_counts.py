"""Exact sums of play counts per user, track or artist (the activity and popularity slices)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation._util.arrays import dense_ok, sorted_positions
from evaluation.errors import DataError

#: Rows per step of :func:`sum_by_key`: bounds its temporary copies to a few MiB.
_SUM_CHUNK = 1 << 18


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
    if weights.dtype.kind in "iu" and weights.dtype.itemsize <= 4:
        starts = _run_starts(keys)
        if starts is not None:
            return _sum_runs(starts, keys, weights, query, name)
    kmin, kmax = int(keys.min()), int(keys.max())
    if dense_ok(kmin, kmax, len(keys)):  # else a table would be mostly empty
        # float64 sums of integer counts are exact below 2**53. In chunks: the weights are
        # converted to float64 a piece at a time, not a copy of a whole training set.
        sums = np.zeros(kmax + 1)
        for start in range(0, len(keys), _SUM_CHUNK):
            stop = start + _SUM_CHUNK
            np.add.at(sums, keys[start:stop],
                      weights[start:stop].astype(np.float64, copy=False))
        _check_sums(sums, name)
        inside = (query >= 0) & (query <= kmax)
        out[inside] = np.rint(sums[query[inside]]).astype(np.int64)
        return out
    # float64 here too: pandas sums int64 groups with wrapping arithmetic
    sums = pd.Series(weights.astype(np.float64, copy=False)).groupby(keys).sum()
    _check_sums(sums.to_numpy(), name)
    return np.rint(sums.reindex(query, fill_value=0).to_numpy()).astype(np.int64)


def _run_starts(keys: np.ndarray) -> np.ndarray | None:
    """Where each run of equal keys starts, or None when the keys ever decrease.

    A training set in the events' order has its users' rows in runs; read a piece at a time.
    """
    parts = [np.zeros(1, dtype=np.intp)]
    for start in range(0, len(keys) - 1, _SUM_CHUNK):
        piece = keys[start:start + _SUM_CHUNK + 1]
        if (piece[1:] < piece[:-1]).any():
            return None
        parts.append(np.flatnonzero(piece[1:] != piece[:-1]) + (start + 1))
    return np.concatenate(parts)


def _sum_runs(starts: np.ndarray, keys: np.ndarray, weights: np.ndarray, query: np.ndarray,
              name: str) -> np.ndarray:
    """:func:`sum_by_key` for ascending keys, whose runs start at ``starts``: a run at a time.

    int64 sums of at most 32-bit integers are exact here (a run would need 2**31 rows to
    wrap), the same values as the float64 sums of the general case.
    """
    sums = np.empty(len(starts), dtype=np.int64)
    run = 0
    while run < len(starts):
        # whole runs, about _SUM_CHUNK rows at a time: reduceat converts its input to int64
        # first, a copy of the whole slice it gets
        stop = max(run + 1, int(np.searchsorted(starts, starts[run] + _SUM_CHUNK)))
        end = starts[stop] if stop < len(starts) else len(keys)
        sums[run:stop] = np.add.reduceat(weights[starts[run]:end], starts[run:stop] - starts[run],
                                         dtype=np.int64)
        run = stop
    _check_sums(sums, name)
    pos = sorted_positions(keys[starts], query)
    return np.where(pos >= 0, sums[pos], 0)


def _check_sums(sums: np.ndarray, name: str) -> None:
    """Nothing; a ``DataError`` when a sum is too large to be exact."""
    top = sums.max(initial=0.0)
    if not top < _EXACT_SUM:  # NaN included
        raise DataError(
            f"{name}: the counts of one key sum to {top:.4g}, at or above 2**53, where sums of "
            "counts are no longer exact (and do not fit the activity and popularity groups); "
            "no play count is that large: correct or drop the rows with impossible counts"
        )
