"""PopularityModel: the most-played tracks that the user has not heard yet."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_positions
from evaluation._util.validation import check_choice
from evaluation.baselines._bias import topk_excluding
from evaluation.baselines._common import (
    TopKModel,
    catalog_first,
    frame_of_ids,
    item_ids,
    require_columns,
    seen_csr,
    user_ids_of,
)
from evaluation.errors import ConfigError


class PopularityModel(TopKModel):
    """Ranks tracks by total play count in the training set (``user_track_count`` summed;
    ``by="users"`` counts listeners instead), ties by track id, and gives each user the top
    ``top_k`` tracks that are not among the user's training rows. A user unseen in training
    gets the global top list.

    Parameters
    ----------
    items : DataFrame or array-like, optional
        The catalog (``dataset.df_tracks``), first as in every baseline and the template.
        The model recommends only tracks it saw in training, all of which are in it, so it
        is recorded, not needed.
    top_k : int
        Length of every list (>= 1).
    by : {"plays", "users"}
        Rank by play count or by number of listeners.
    """

    def __init__(self, items: Any = None, top_k: int = 100, by: str = "plays", **kwargs: Any):
        items, top_k = catalog_first(items, top_k, "PopularityModel")
        super().__init__(top_k)
        if items is not None:  # only when given: a model built without one is as before
            self.items = item_ids(items, "PopularityModel")
        self.by = check_choice("by", by, ("plays", "users"), owner="PopularityModel")
        self.item_ids: np.ndarray | None = None

    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> PopularityModel:
        cols = ("user_id", "track_id") + (("user_track_count",) if self.by == "plays" else ())
        require_columns(train_df, cols, "PopularityModel")
        users = train_df["user_id"].to_numpy(np.int64)
        tracks = train_df["track_id"].to_numpy(np.int64)
        self.user_ids, u = np.unique(users, return_inverse=True)
        self.item_ids, i = np.unique(tracks, return_inverse=True)
        weights = (train_df["user_track_count"].to_numpy(np.float64) if self.by == "plays"
                   else None)
        self.popularity = np.bincount(i, weights=weights, minlength=len(self.item_ids))
        self._order = np.lexsort((self.item_ids, -self.popularity))
        self._seen, self._ptr = seen_csr(u, i, len(self.user_ids))
        return self

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        if self.item_ids is None:
            raise ConfigError("PopularityModel.predict: the model is not trained; call train() "
                              "first.")
        users = user_ids_of(user_ids, "PopularityModel")
        rows = sorted_positions(self.user_ids, users)
        known = rows >= 0
        n_seen = np.where(known, self._ptr[np.maximum(rows, 0) + 1]
                          - self._ptr[np.maximum(rows, 0)], 0)
        codes = topk_excluding(self._order, rows, self._ptr, self._seen, n_seen, self.top_k)
        ids = np.where(codes >= 0, self.item_ids[np.maximum(codes, 0)], -1)
        return frame_of_ids(users, ids)
