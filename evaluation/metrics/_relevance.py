"""Inputs of the ranking metrics: recommendation lists and relevance judgements.

Representation (every ranking metric takes these two arrays):

- ``recs``: an ``(n_users, k)`` integer array. Row ``u`` is user ``u``'s ranked list of item
  *indices* (column 0 = best), padded with ``-1``. An item repeated in one list counts at its first
  (best) position only; ``-1`` never matches anything.
- ``relevance``: a ``scipy.sparse`` ``(n_users, n_items)`` matrix of gains, row ``u`` = user ``u``'s
  test items. A stored entry with a gain > 0 is a *test point* (a relevant user-item pair);
  binary relevance is a gain of 1. Explicit zeros are ignored.

``relevance_matrix`` builds the matrix from (user, item, gain) triples (optionally keeping only
ratings at or above a threshold) and ``ranking_inputs`` maps a ``predict`` DataFrame and a test
DataFrame with arbitrary ids onto both arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from evaluation._util.arrays import IdIndex, isin, sorted_positions, sorted_unique
from evaluation._util.validation import check_k
from evaluation.errors import ConfigError, show_values

if TYPE_CHECKING:  # annotations only: SciPy is imported where it is used
    import scipy.sparse as sp


def relevance_matrix(
    users,
    items,
    gains=None,
    *,
    shape: tuple[int, int] | None = None,
    threshold: float | None = None,
    binary: bool = False,
) -> sp.csr_array:
    """Build the ``(n_users, n_items)`` gain matrix from index triples.

    ``gains`` defaults to 1 (binary relevance). With ``threshold`` only pairs whose gain (e.g. a
    rating) is ``>= threshold`` are relevant; ``binary=True`` then sets their gain to 1. A pair
    given twice keeps its largest gain.

    Parameters
    ----------
    users, items : array-like of int
        Row and column index of each pair (>= 0).
    gains : array-like of float, optional
        Gain of each pair (>= 0 after ``threshold``).
    shape : (int, int), optional
        Matrix shape (default: the largest indices + 1).
    threshold : float, optional
        Keep only pairs with a gain at least this.
    binary : bool, default False
        Set every kept gain to 1.

    Returns
    -------
    scipy.sparse.csr_array
        The gains, explicit zeros removed.

    Raises
    ------
    ConfigError
        On indices or gains that break these rules.
    """
    users = _index_array(users, "users")
    items = _index_array(items, "items")
    if len(users) != len(items):
        raise ConfigError(
            f"'users' and 'items' must have the same length; got {len(users)} and {len(items)}."
        )
    gains = np.ones(len(users)) if gains is None else np.asarray(gains, dtype=np.float64)
    if gains.shape != users.shape:
        raise ConfigError(
            f"'gains' must have one value per (user, item) pair; got shape {gains.shape} "
            f"for {len(users)} pairs."
        )
    if not np.isfinite(gains).all():
        raise ConfigError(
            f"'gains' must be finite; got {show_values(gains[~np.isfinite(gains)])}."
        )
    if threshold is not None:
        keep = gains >= threshold
        users, items, gains = users[keep], items[keep], gains[keep]
    if binary:
        gains = np.ones(len(users))
    if (gains < 0).any():
        raise ConfigError(
            f"'gains' must be >= 0 (use 'threshold' to turn ratings into relevance); got "
            f"{show_values(gains[gains < 0])}."
        )
    if shape is None:
        shape = (int(users.max(initial=-1)) + 1, int(items.max(initial=-1)) + 1)
    elif len(users) and (users.max() >= shape[0] or items.max() >= shape[1]):
        raise ConfigError(
            f"(user, item) indices must lie inside shape={shape}; got max user "
            f"{users.max()} and max item {items.max()}."
        )
    # A pair given twice keeps its largest gain: sort by gain so that the last write wins.
    order = np.lexsort((gains, items, users))
    users, items, gains = users[order], items[order], gains[order]
    last = np.ones(len(users), dtype=bool)
    last[:-1] = (users[1:] != users[:-1]) | (items[1:] != items[:-1])
    users, items, gains = users[last], items[last], gains[last]
    import scipy.sparse as sp  # here: importing the metrics needs no SciPy

    matrix = sp.csr_array((gains, (users, items)), shape=shape)
    matrix.eliminate_zeros()
    return matrix


def _index_array(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or (len(array) and array.dtype.kind not in "iu"):
        raise ConfigError(
            f"'{name}' must be a 1-D array of integer indices; got dtype {array.dtype} "
            f"with shape {array.shape}."
        )
    array = array.astype(np.int64, copy=False)
    if len(array) and array.min() < 0:
        raise ConfigError(f"'{name}' must be >= 0; got {show_values(array[array < 0])}.")
    return array


def check_recs(recs, name: str = "recs") -> np.ndarray:
    """Return ``recs`` as a 2-D int64 array, or raise ``ConfigError``."""
    array = np.asarray(recs)
    if array.ndim != 2 or (array.size and array.dtype.kind not in "iu"):
        raise ConfigError(
            f"'{name}' must be a 2-D integer array (users x ranked item indices, -1 padding); "
            f"got dtype {array.dtype} with shape {array.shape}."
        )
    array = array.astype(np.int64, copy=False)
    if array.size and array.min() < -1:
        raise ConfigError(
            f"'{name}' holds item indices >= 0 and -1 for padding; got "
            f"{show_values(sorted_unique(array[array < -1]))}."
        )
    return array


def check_relevance(relevance, recs: np.ndarray) -> sp.csr_array:
    """Return ``relevance`` as a canonical CSR array matching ``recs``, or raise ``ConfigError``."""
    import scipy.sparse as sp

    if not sp.issparse(relevance):
        raise ConfigError(
            "'relevance' must be a scipy.sparse (n_users x n_items) matrix of gains "
            f"(see relevance_matrix); got {type(relevance).__name__}."
        )
    matrix = sp.csr_array(relevance, dtype=np.float64)
    if matrix.shape[0] != recs.shape[0]:
        raise ConfigError(
            f"'relevance' has {matrix.shape[0]} rows but 'recs' has {recs.shape[0]}: both need "
            "one row per user, in the same order."
        )
    if recs.size and recs.max() >= matrix.shape[1]:
        bad = sorted_unique(recs[recs >= matrix.shape[1]])
        raise ConfigError(
            f"'recs' holds item indices beyond the {matrix.shape[1]} columns of 'relevance': "
            f"{show_values(bad)}. Give 'relevance' the full catalog width."
        )
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    if (matrix.data < 0).any() or not np.isfinite(matrix.data).all():
        bad = matrix.data[(matrix.data < 0) | ~np.isfinite(matrix.data)]
        raise ConfigError(f"'relevance' gains must be finite and >= 0; got {show_values(bad)}.")
    if (matrix.data == 0).any():
        matrix = matrix.copy()
        matrix.eliminate_zeros()
    return matrix


@dataclass(frozen=True)
class Judged:
    """Recommendation lists matched against the relevance matrix (computed once, sliced per k).

    ``gain``/``hit``/``listed`` are ``(n_users, k)``: the gain (0 when not relevant, padding or a
    repeat), whether the slot holds a relevant item, and whether it holds a real item listed for
    the first time. The ``point_*`` arrays have one entry per test point
    (stored entry of ``relevance``, in CSR order): its user, item, gain and 1-based rank in the
    list (0 when absent).
    """

    gain: np.ndarray
    hit: np.ndarray
    listed: np.ndarray
    n_relevant: np.ndarray
    point_user: np.ndarray
    point_item: np.ndarray
    point_gain: np.ndarray
    point_rank: np.ndarray
    n_items: int

    @property
    def n_users(self) -> int:
        return self.gain.shape[0]

    @property
    def depth(self) -> int:
        return self.gain.shape[1]


def first_occurrence(recs: np.ndarray) -> np.ndarray:
    """Mask of the slots that hold a real item not already listed higher in the same row."""
    valid = recs >= 0
    if recs.shape[1] < 2:
        return valid
    order = np.argsort(recs, axis=1, kind="stable")
    ranked = np.take_along_axis(recs, order, axis=1)
    repeat = ranked[:, 1:] == ranked[:, :-1]
    if not repeat.any():
        return valid
    first = np.ones(recs.shape, dtype=bool)
    rows = np.broadcast_to(np.arange(recs.shape[0])[:, None], repeat.shape)
    first[rows[repeat], order[:, 1:][repeat]] = False
    return valid & first


def judge(recs, relevance, k: int | None = None) -> Judged:
    """Match ``recs`` (truncated at ``k``; padded with -1 when shorter) against ``relevance``.

    Parameters
    ----------
    recs : array-like of int
        ``(n_users, depth)`` item indices, ``-1`` padding.
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains.
    k : int, optional
        Depth to judge (default: the lists' width).

    Returns
    -------
    Judged
        Per slot: gain, hit and listed flags; per test point: its rank; every ranking metric
        reads these.
    """
    recs = check_recs(recs)
    matrix = check_relevance(relevance, recs)
    if k is not None:
        k = check_k(k, owner="judge")
        if recs.shape[1] >= k:
            recs = recs[:, :k]
        else:
            pad = np.full((recs.shape[0], k - recs.shape[1]), -1, dtype=np.int64)
            recs = np.hstack([recs, pad])
    n_users, n_items = matrix.shape
    point_user = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(matrix.indptr))
    point_item = matrix.indices.astype(np.int64)
    # CSR order is (user, item) sorted, so user * n_items + item is a sorted key.
    keys = point_user * n_items + point_item
    # Look the slots up in row-sorted order: the queries are then globally sorted, which makes
    # searchsorted cache-friendly, and repeats sit next to each other.
    order = np.argsort(recs, axis=1, kind="stable")
    ranked = np.take_along_axis(recs, order, axis=1)
    valid_sorted = ranked >= 0
    valid_sorted[:, 1:] &= ranked[:, 1:] != ranked[:, :-1]
    rows = np.arange(n_users, dtype=np.int64)[:, None]
    query = rows * n_items + ranked
    pos = sorted_positions(keys, query)
    found = valid_sorted & (pos >= 0)
    hit = np.zeros(recs.shape, dtype=bool)
    listed = np.zeros(recs.shape, dtype=bool)
    gain = np.zeros(recs.shape, dtype=np.float64)
    np.put_along_axis(hit, order, found, axis=1)
    np.put_along_axis(listed, order, valid_sorted, axis=1)
    if len(keys):
        np.put_along_axis(gain, order, np.where(found, matrix.data[np.maximum(pos, 0)], 0.0),
                          axis=1)
    point_rank = np.zeros(len(keys), dtype=np.int64)
    point_rank[pos[found]] = order[found] + 1
    return Judged(
        gain=gain,
        hit=hit,
        listed=listed,
        n_relevant=np.diff(matrix.indptr).astype(np.int64),
        point_user=point_user,
        point_item=point_item,
        point_gain=matrix.data.copy(),
        point_rank=point_rank,
        n_items=n_items,
    )


@dataclass(frozen=True)
class RankingInputs:
    """``recs`` and ``relevance`` built from DataFrames, with the ids behind rows and columns."""

    recs: np.ndarray
    relevance: sp.csr_array
    user_ids: np.ndarray
    item_ids: np.ndarray


def ranking_inputs(
    predictions: pd.DataFrame,
    test: pd.DataFrame,
    *,
    item_col: str = "track_id",
    user_col: str = "user_id",
    gain_col: str | None = None,
    threshold: float | None = None,
    binary: bool = False,
    items=None,
) -> RankingInputs:
    """Map a ``predict`` frame and a test frame (arbitrary ids) onto ``recs`` and ``relevance``.

    ``predictions`` is indexed by user id with ranked item-id columns and ``-1`` padding (the
    ``RecModel.predict`` format). ``test`` has one row per test point (``user_col``, ``item_col``
    and optionally ``gain_col``, e.g. a rating turned into relevance by ``threshold``). Rows are
    the test users, sorted; a test user without predictions gets an empty list. ``items`` is the
    catalog (defaults to every item in ``test`` and ``predictions``), which sets the width of the
    relevance matrix and so the catalog used by AUC and coverage.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Ranked item ids per user, as ``predict`` returns them.
    test : pandas.DataFrame
        One row per test point.
    item_col, user_col, gain_col : str
        Columns of ``test``.
    threshold, binary
        As for :func:`relevance_matrix`.
    items : array-like, optional
        The catalog.

    Returns
    -------
    RankingInputs
        ``recs``, ``relevance`` and the user and item ids behind their rows and columns.

    Raises
    ------
    ConfigError
        On missing columns, non-integer predictions, an empty test frame or test items outside
        ``items``.
    """
    for col in (user_col, item_col, *([gain_col] if gain_col else [])):
        if col not in test.columns:
            raise ConfigError(
                f"The test frame has no column {col!r} (columns: {list(test.columns)})."
            )
    pred_values = predictions.to_numpy()
    if pred_values.size and pred_values.dtype.kind not in "iu":
        raise ConfigError(
            f"The predictions must hold integer item ids (-1 padding); got dtype "
            f"{pred_values.dtype}. Validate them with the harness's prediction checks first."
        )
    if len(test) == 0:
        raise ConfigError("The test frame is empty: there is nothing to rank against.")
    test_items = test[item_col].to_numpy()
    if items is None:
        listed = pred_values[pred_values != -1]
        item_ids = sorted_unique(np.concatenate([test_items, listed]))
    else:
        item_ids = sorted_unique(np.asarray(items))
        unknown = ~isin(test_items, item_ids)
        if unknown.any():
            raise ConfigError(
                f"Test column {item_col!r} holds items outside 'items': "
                f"{show_values(sorted_unique(test_items[unknown]))}."
            )
    user_ids, test_user_idx = np.unique(test[user_col].to_numpy(), return_inverse=True)
    relevance = relevance_matrix(
        test_user_idx.astype(np.int64),
        np.searchsorted(item_ids, test_items).astype(np.int64),
        None if gain_col is None else test[gain_col].to_numpy(dtype=np.float64),
        shape=(len(user_ids), len(item_ids)),
        threshold=threshold,
        binary=binary,
    )
    recs = np.full((len(user_ids), pred_values.shape[1]), -1, dtype=np.int64)
    row = sorted_positions(user_ids, predictions.index.to_numpy())
    known = row >= 0
    block = pred_values[known].astype(np.int64)
    recs[row[known]] = IdIndex(item_ids, is_sorted=True, queries=block.size).positions(block)
    return RankingInputs(recs=recs, relevance=relevance, user_ids=user_ids, item_ids=item_ids)
