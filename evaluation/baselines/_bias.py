"""Bias baseline for rating prediction: global mean plus regularised user and item biases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from evaluation._util.arrays import sorted_positions
from evaluation._util.validation import check_int, check_number
from evaluation.baselines._common import (
    TopKModel,
    catalog_first,
    frame_of_ids,
    item_ids,
    seen_csr,
    user_ids_of,
)
from evaluation.errors import ConfigError, DataError, show_values


class BiasModel(TopKModel):
    """Predicts ``mu + b_user + b_item`` (the classic baseline predictor of Koren, 2010).

    ``mu`` is the mean training rating; the biases minimise the regularised squared error
    ``sum (r - mu - b_u - b_i)^2 + reg_users * sum b_u^2 + reg_items * sum b_i^2`` by
    ``n_sweeps`` alternating least-squares sweeps (items first, starting from zero user biases),
    each an exact closed-form update::

        b_i = sum_u (r_ui - mu - b_u) / (n_i + reg_items)
        b_u = sum_i (r_ui - mu - b_i) / (n_u + reg_users)

    A user (item) unseen in training contributes no bias: its prediction falls back to the
    terms that are known (``mu + b_i``, ``mu + b_u``, or ``mu``). Predicted ratings are clipped
    to the training rating range unless ``clip=False``.

    The ratings come from ``rating_col`` (default: ``rating`` when the events have it, as for
    MovieLens, else the play count ``user_track_count``). ``predict`` ranks, for each user, the
    items the user has not interacted with in training by predicted rating; with biases only
    that is the item-bias order (a damped mean rating), the same for every user.

    Parameters
    ----------
    items : DataFrame or array-like, optional
        The catalog (``dataset.df_tracks``), first as in every baseline and the template.
        The model scores only tracks it saw in training, all of which are in it, so it
        is recorded, not needed.
    top_k : int
        Length of every list (>= 1).
    reg_users, reg_items : float
        Regularisation of the user and item biases (>= 0).
    n_sweeps : int
        Alternating least-squares sweeps (>= 1).
    rating_col : str, optional
        The ratings column.
    clip : bool, default True
        Clip predicted ratings to the training range.
    exclude_seen : bool, default True
        Leave the user's training items out of ``predict``'s lists.
    """

    def __init__(
        self,
        items: Any = None,
        top_k: int = 100,
        *,
        reg_users: float = 15.0,
        reg_items: float = 10.0,
        n_sweeps: int = 10,
        rating_col: str | None = None,
        clip: bool = True,
        exclude_seen: bool = True,
    ) -> None:
        self.reg_users = check_number("reg_users", reg_users, low=0.0, owner="BiasModel")
        self.reg_items = check_number("reg_items", reg_items, low=0.0, owner="BiasModel")
        items, top_k = catalog_first(items, top_k, "BiasModel")
        if items is not None:  # only when given: a model built without one is as before
            self.items = item_ids(items, "BiasModel")
        super().__init__(top_k)
        self.n_sweeps = check_int("n_sweeps", n_sweeps, minimum=1, owner="BiasModel")
        self.rating_col = rating_col
        self.clip = bool(clip)
        self.exclude_seen = bool(exclude_seen)
        self.global_mean: float | None = None

    # -- fitting -------------------------------------------------------------------------------

    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> BiasModel:
        """Fit ``mu`` and the biases on ``train_df`` (``user_id``, ``track_id``, ratings)."""
        col = self._rating_column(train_df)
        ratings = train_df[col].to_numpy(dtype=np.float64)
        if len(ratings) == 0:
            raise DataError("BiasModel.train: the training table is empty.")
        if not np.isfinite(ratings).all():
            bad = np.flatnonzero(~np.isfinite(ratings))
            raise DataError(f"BiasModel.train: column {col!r} has missing or infinite values at "
                            f"rows {show_values(bad)}; drop or fill them first.")
        u, self.user_ids = _codes(train_df["user_id"].to_numpy(np.int64))
        i, self.item_ids = _codes(train_df["track_id"].to_numpy(np.int64))
        self.global_mean, self.user_bias, self.item_bias = fit_biases(
            u, i, ratings, len(self.user_ids), len(self.item_ids),
            reg_users=self.reg_users, reg_items=self.reg_items, n_sweeps=self.n_sweeps)
        self.rating_range = (float(ratings.min()), float(ratings.max()))
        # Items each user has seen, as CSR over user rows (for excluding them from top-k).
        self._seen_items, self._seen_ptr = seen_csr(u, i, len(self.user_ids))
        # Ranking order of all items: item bias descending, ties by item id.
        self._item_order = np.lexsort((self.item_ids, -self.item_bias))
        return self

    def _rating_column(self, frame: pd.DataFrame) -> str:
        col = self.rating_col or ("rating" if "rating" in frame.columns else "user_track_count")
        missing = [c for c in ("user_id", "track_id", col) if c not in frame.columns]
        if missing:
            raise DataError(f"BiasModel.train: the training table lacks column(s) {missing}; "
                            f"it has {list(map(str, frame.columns))}. Pass rating_col=... to "
                            f"name the column that holds the ratings.")
        return col

    def _check_fitted(self, what: str) -> None:
        if self.global_mean is None:
            raise ConfigError(f"BiasModel.{what}: the model is not trained; call train() first.")

    # -- prediction ----------------------------------------------------------------------------

    def predict_ratings(self, pairs_df: pd.DataFrame) -> pd.Series:
        """Predicted rating of each ``(user_id, track_id)`` row, indexed like ``pairs_df``."""
        self._check_fitted("predict_ratings")
        missing = [c for c in ("user_id", "track_id") if c not in pairs_df.columns]
        if missing:
            raise DataError(f"BiasModel.predict_ratings: the pairs table lacks column(s) "
                            f"{missing}; pass a DataFrame with user_id and track_id columns.")
        bu = _lookup(self.user_ids, self.user_bias, pairs_df["user_id"].to_numpy(np.int64))
        bi = _lookup(self.item_ids, self.item_bias, pairs_df["track_id"].to_numpy(np.int64))
        pred = self.global_mean + bu + bi
        if self.clip:
            pred = np.clip(pred, *self.rating_range)
        return pd.Series(pred, index=pairs_df.index, name="prediction")

    def score_items(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """Unclipped predicted ratings of ``item_ids`` (``(b, c)``) for ``user_ids`` (``b``).

        The scoring hook of the sampled-negative protocol (``evaluate_sampled``).
        """
        self._check_fitted("score_items")
        items = np.asarray(item_ids, dtype=np.int64)
        bu = _lookup(self.user_ids, self.user_bias, np.asarray(user_ids, dtype=np.int64))
        bi = _lookup(self.item_ids, self.item_bias, items.ravel()).reshape(items.shape)
        return self.global_mean + bu.reshape(-1, *([1] * (items.ndim - 1))) + bi

    def predict(self, user_ids: pd.DataFrame, k: int | None = None) -> pd.DataFrame:
        """Top-``k`` (default ``top_k``) items by predicted rating for each user, excluding the
        user's training items (unless ``exclude_seen=False``).

        Returns a DataFrame indexed by ``user_id`` (input order), columns ``"0".."k-1"``, padded
        with -1 when fewer than ``k`` candidate items remain.
        """
        self._check_fitted("predict")
        k = self.top_k if k is None else int(k)
        users = user_ids_of(user_ids, "BiasModel")
        rows = sorted_positions(self.user_ids, users)
        known = rows >= 0
        if self.exclude_seen:
            ptr = self._seen_ptr
            rows_c = np.maximum(rows, 0)
            n_seen = np.where(known, ptr[rows_c + 1] - ptr[rows_c], 0)
            top = topk_excluding(self._item_order, rows, ptr, self._seen_items, n_seen, k)
        else:
            top = np.broadcast_to(self._item_order[:k], (len(users), min(k, len(self.item_ids))))
        ids = np.full((len(users), k), -1, dtype=np.int64)
        width = top.shape[1]
        ids[:, :width] = np.where(top >= 0, self.item_ids[np.maximum(top, 0)], -1)
        return frame_of_ids(users, ids)


def fit_biases(
    u: np.ndarray, i: np.ndarray, r: np.ndarray, n_users: int, n_items: int, *,
    reg_users: float, reg_items: float, n_sweeps: int,
) -> tuple[float, np.ndarray, np.ndarray]:
    """``(mu, user_bias, item_bias)`` by alternating closed-form sweeps (see ``BiasModel``).

    ``sum_u (r_ui - mu - b_u)`` is ``S_i - (M^T b)_i`` with the residual sums ``S`` computed
    once and ``M`` the sparse user x item count matrix, so each sweep is two sparse
    matrix-vector products instead of passes of gathers over every rating.
    """
    mu = float(r.mean())
    resid = r - mu
    n_u = np.bincount(u, minlength=n_users).astype(np.float64)
    n_i = np.bincount(i, minlength=n_items).astype(np.float64)
    sum_u = np.bincount(u, resid, minlength=n_users)
    sum_i = np.bincount(i, resid, minlength=n_items)
    items, ptr = seen_csr(u, i, n_users)
    counts = sp.csr_array((np.ones(len(items)), items, ptr), shape=(n_users, n_items))
    counts_t = counts.T.tocsr()
    # Users (items) without ratings cannot occur: codes come from the ratings themselves.
    b_u = np.zeros(n_users)
    b_i = np.zeros(n_items)
    for _ in range(n_sweeps):
        b_i = (sum_i - counts_t @ b_u) / (n_i + reg_items)
        b_u = (sum_u - counts @ b_i) / (n_u + reg_users)
    return mu, b_u, b_i


def topk_excluding(
    order: np.ndarray, rows: np.ndarray, ptr: np.ndarray, seen: np.ndarray,
    n_seen: np.ndarray, k: int, *, chunk_cells: int = 1 << 22,
) -> np.ndarray:
    """For each user row, the first ``k`` entries of the global ``order`` not among its seen items.

    ``order`` lists item codes best first; a user's seen item codes are
    ``seen[ptr[row]:ptr[row + 1]]`` (row -1: nothing seen). Returns item codes, -1 padded.
    Only the first ``k + max(n_seen)`` ranks can matter, so each user needs a mask of that
    width; users are processed in chunks to bound memory.
    """
    n_items = len(order)
    n = len(rows)
    width = int(min(n_items, k + (n_seen.max() if n else 0)))
    rank = np.empty(n_items, dtype=np.int64)
    rank[order] = np.arange(n_items)
    out = np.full((n, k), -1, dtype=np.int64)
    step = max(1, chunk_cells // max(width, 1))
    for start in range(0, n, step):
        block = np.arange(start, min(start + step, n))
        counts = n_seen[block]
        owner = np.repeat(np.arange(len(block)), counts)
        # Positions of each user's seen items in ``seen`` (vectorised CSR gather).
        first = np.repeat(np.where(rows[block] >= 0, ptr[np.maximum(rows[block], 0)], 0), counts)
        offset = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        seen_rank = rank[seen[first + offset]]
        keep = seen_rank < width
        mask = np.zeros((len(block), width), dtype=bool)
        mask[owner[keep], seen_rank[keep]] = True
        pos = np.argsort(mask, axis=1, kind="stable")[:, :k]
        valid = ~np.take_along_axis(mask, pos, axis=1)
        out[block, : pos.shape[1]] = np.where(valid, order[pos], -1)
    return out


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values`` at the position of each query key in sorted ``keys``; 0 where absent."""
    if len(keys) == 0:
        return np.zeros(len(query))
    pos = sorted_positions(keys, query)
    return np.where(pos >= 0, values[pos], 0.0)


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0..n-1`` of ``values`` in sorted order of the distinct values, and those values.

    Compact non-negative ids go through a presence table (no hashing or sorting of the rows);
    others through ``pandas.factorize``.
    """
    if len(values) and int(values.min()) >= 0 and int(values.max()) < max(4 * len(values),
                                                                         1 << 20):
        present = np.bincount(values) > 0
        remap = np.cumsum(present) - 1
        return remap[values], np.flatnonzero(present).astype(np.int64)
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=np.int64)
