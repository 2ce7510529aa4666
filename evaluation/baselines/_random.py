"""RandomModel: uniformly random recommendations, the 2022 challenge's template model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_int
from evaluation.baselines._common import (
    TopKModel,
    catalog_first,
    frame_of_ids,
    item_ids,
    require_columns,
    user_ids_of,
)
from evaluation.errors import ConfigError


class RandomModel(TopKModel):
    """Recommends ``top_k`` distinct items drawn uniformly at random for every user.

    ``items``: the catalog to draw from (``dataset.df_tracks``, any DataFrame indexed by
    track id, or an array of ids); when None, the tracks of the training set. The draws are
    seeded by ``seed`` and the training set's size, so the same fold gives the same lists in
    any process, whatever ran before.

    Parameters
    ----------
    items : DataFrame or array-like, optional
        The catalog.
    top_k : int
        Length of every list (>= 1).
    seed : int
        Seed of the draws (>= 0).
    """

    def __init__(self, items: Any = None, top_k: int = 100, seed: int = 42, **kwargs: Any):
        items, top_k = catalog_first(items, top_k, "RandomModel")
        super().__init__(top_k)
        self.seed = check_int("seed", seed, minimum=0, owner="RandomModel")
        self.items = None if items is None else item_ids(items, "RandomModel")
        self._catalog: np.ndarray | None = None
        self._rng: np.random.Generator | None = None

    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> RandomModel:
        require_columns(train_df, ("track_id",), "RandomModel")
        self._catalog = (self.items if self.items is not None
                         else sorted_unique(train_df["track_id"].to_numpy(np.int64)))
        self._rng = np.random.default_rng([self.seed, len(train_df)])
        return self

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        if self._catalog is None or self._rng is None:  # train() sets both
            raise ConfigError("RandomModel.predict: the model is not trained; call train() "
                              "first.")
        users = user_ids_of(user_ids, "RandomModel")
        return frame_of_ids(users, sample_distinct(self._rng, self._catalog, len(users),
                                                        self.top_k))


def sample_distinct(rng: np.random.Generator, catalog: np.ndarray, n: int, k: int) -> np.ndarray:
    """``n`` rows of ``k`` distinct items of ``catalog`` (uniform), -1 padded if it is smaller."""
    m = len(catalog)
    out = np.full((n, k), -1, dtype=np.int64)
    if m == 0 or n == 0:
        return out
    if m <= 2 * k:
        # Small catalog: a random permutation per row (n x m keys is cheap here).
        perm = np.argsort(rng.random((n, m)), axis=1)[:, :k]
        out[:, : perm.shape[1]] = catalog[perm]
        return out
    codes = rng.integers(0, m, size=(n, k))
    while True:
        # Redraw the later copies of any repeated item in a row until every row is distinct.
        order = np.argsort(codes, axis=1, kind="stable")
        ranked = np.take_along_axis(codes, order, axis=1)
        dup_sorted = np.zeros_like(ranked, dtype=bool)
        dup_sorted[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
        if not dup_sorted.any():
            break
        dup = np.zeros_like(dup_sorted)
        np.put_along_axis(dup, order, dup_sorted, axis=1)
        codes[dup] = rng.integers(0, m, size=int(dup.sum()))
    out[:] = catalog[codes]
    return out
