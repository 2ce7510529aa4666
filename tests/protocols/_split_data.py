"""What the hold-out and results tests share: a hand-made split (``TRAIN``, ``TEST``), a model
that returns hand-written lists, and random explicit ratings."""

from __future__ import annotations

import pandas as pd

from evaluation.model import RecModel

# A hand-made split: users 1-3, each test item unseen in the user's training rows.
TRAIN = pd.DataFrame({"user_id": [1, 1, 2, 2, 3], "track_id": [10, 11, 10, 12, 13],
                      "timestamp": [1, 2, 3, 4, 5], "rating": [4.0, 3.0, 5.0, 2.0, 4.0]})
TEST = pd.DataFrame({"user_id": [1, 1, 2, 3], "track_id": [12, 13, 11, 10],
                     "timestamp": [6, 7, 6, 8], "rating": [5.0, 2.0, 4.0, 1.0]})


class FixedModel(RecModel):
    """Returns the same hand-written lists whatever it is trained on."""

    def __init__(self, lists: dict[int, list[int]], k: int = 3):
        self.lists, self.k = lists, k

    def train(self, train_df, **kwargs):
        self.trained_on = len(train_df)

    def predict(self, user_ids):
        users = user_ids["user_id"].to_numpy()
        rows = [(self.lists.get(int(u), []) + [-1] * self.k)[: self.k] for u in users]
        return pd.DataFrame(rows, index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(self.k)])


def random_ratings(rng, n=400, n_users=30, n_items=50):
    """Unique (user, track) rows with ratings 1-5 and timestamps; sparse, shifted ids."""
    frame = pd.DataFrame({"user_id": rng.integers(0, n_users, n) * 2 + 5,
                          "track_id": rng.integers(0, n_items, n) + 100,
                          "rating": rng.integers(1, 6, n).astype(float),
                          "timestamp": rng.integers(0, 10_000, n)})
    return frame.drop_duplicates(["user_id", "track_id"]).reset_index(drop=True)
