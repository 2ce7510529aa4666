"""``EvalRSSimpleModel``: the 2023 example's random model, under its 2023 name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


class EvalRSSimpleModel:
    """Random tracks of ``items`` for every user, drawn with replacement (lists may repeat a
    track, as the 2023 example's did; they are scored by first occurrence).

    Parameters
    ----------
    items : pandas.DataFrame
        The catalog, indexed by track id (``dataset.df_tracks``).
    top_k : int
        Tracks per user (the 2023 default: 10; the scored lists have 100).
    seed : int, optional
        Seed of the draw; None draws from NumPy's global generator, which the runner seeds
        before each fold.
    **kwargs
        Accepted and ignored, as in 2023.
    """

    def __init__(self, items: pd.DataFrame, top_k: int = 10, seed: int | None = None,
                 **kwargs: Any) -> None:
        self.items = items
        self.top_k = top_k
        self.seed = seed

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        """``top_k`` random tracks per user of ``user_ids`` (a ``user_id`` column)."""
        users = user_ids["user_id"].to_numpy()
        tracks = self.items.index.to_numpy()
        draw = (np.random.default_rng(self.seed).choice if self.seed is not None
                else np.random.choice)
        picks = draw(tracks, size=(len(users), self.top_k), replace=True)
        return pd.DataFrame(picks, index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(self.top_k)])
