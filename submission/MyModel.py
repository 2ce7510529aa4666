"""Your model. Edit this file, then run ``python submission.py`` (or ``make submission``).

The harness calls, for every fold:

1. ``model.train(train_df)`` with the fold's training events: one row per user-track pair with
   the columns ``user_id, artist_id, album_id, track_id, timestamp, user_track_count``.
2. ``model.predict(user_ids)`` with a DataFrame holding a ``user_id`` column (the fold's test
   users). Return a DataFrame indexed by ``user_id`` with ``top_k`` columns ``"0".."99"``:
   the recommended track ids, best first, each at most once per row, padded with ``-1`` at the
   end if you have fewer than ``top_k`` tracks for a user.

The harness then checks the predictions (and tells you exactly what is wrong if something is),
scores them with the challenge's tests and writes ``results/<run id>/results.json``.

This template is a working model: it recommends the tracks with the most plays in the training
set that the user has not heard yet. Replace its body with your own ideas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation import RecModel


class MyModel(RecModel):
    def __init__(self, items: pd.DataFrame | None = None, top_k: int = 100,
                 min_plays: int = 0, exclude_heard: bool = True):
        super().__init__()
        # ``items`` is the catalog (``dataset.df_tracks``, indexed by track_id): every track id
        # you recommend must be in it. This model only recommends tracks seen in training.
        self.items = items
        self.top_k = self.k = top_k
        # Its settings, named so that a misspelt ``--param`` is an error, not silently ignored
        # (``python submission.py --param min_plays=5 --param exclude_heard=false``):
        self.min_plays = min_plays  # never recommend a track with fewer plays in training
        self.exclude_heard = exclude_heard  # skip the tracks a user already listened to

    def train(self, train_df: pd.DataFrame, **kwargs) -> None:
        # Total plays per track, most played first (ties by track id, so runs are repeatable).
        plays = train_df.groupby("track_id")["user_track_count"].sum()
        plays = plays.sort_index().sort_values(ascending=False, kind="stable")
        plays = plays[plays >= self.min_plays]
        # Keep enough candidates to fill every list after removing what a user already heard.
        longest_history = int(train_df.groupby("user_id").size().max())
        self.candidates = plays.index.to_numpy()[: self.top_k + longest_history]
        # Who heard what: the (user, track) pairs of the training set.
        self.heard = train_df[["user_id", "track_id"]]

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        users = user_ids["user_id"].to_numpy()
        candidates = self.candidates
        # heard[i, j] is True when user i already listened to candidate j.
        heard_pairs = self.heard[self.heard["track_id"].isin(candidates)
                                 & self.heard["user_id"].isin(users)]
        row = pd.Index(users).get_indexer(heard_pairs["user_id"])
        col = pd.Index(candidates).get_indexer(heard_pairs["track_id"])
        heard = np.zeros((len(users), len(candidates)), dtype=bool)
        if self.exclude_heard:
            heard[row, col] = True
        # For each user, the first top_k candidates not heard (stable sort keeps the play order).
        order = np.argsort(heard, axis=1, kind="stable")[:, : self.top_k]
        recs = np.where(np.take_along_axis(heard, order, axis=1), -1, candidates[order])
        if recs.shape[1] < self.top_k:  # a tiny catalog: pad with -1
            pad = np.full((len(users), self.top_k - recs.shape[1]), -1)
            recs = np.hstack([recs, pad])
        return pd.DataFrame(recs, index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(self.top_k)])
