"""A 2022-style model module, as a participant wrote it: it imports reclist 0.x first and
scores users in a spawn-started process pool, whose workers import this module afresh."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from reclist.abstractions import RecModel


def _top_for_users(model, user_ids):
    # runs in a worker: unpickling `model` imported this module there first
    return np.tile(model.top, (len(user_ids), 1))


class SpawnPoolModel(RecModel):
    def __init__(self, top_k=5, workers=2):
        super().__init__()
        self.top_k = top_k
        self.workers = workers
        self.top = None

    def train(self, train_df, **kwargs):
        self.top = train_df["track_id"].value_counts().index[: self.top_k].to_numpy()

    def predict(self, user_ids):
        users = user_ids["user_id"].to_numpy()
        chunks = np.array_split(users, self.workers)
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            parts = list(pool.map(_top_for_users, [self] * len(chunks), chunks))
        frame = pd.DataFrame(np.concatenate(parts), columns=[str(i) for i in range(self.top_k)])
        frame.insert(0, "user_id", users)
        return frame.set_index("user_id")
