"""Participant code in the shapes of the official EvalRS 2023 example: a model object with
``predict`` only (no ``RecModel``), lists drawn with replacement, and a RecList subclass
whose test reads the similarity model it was given. The harness's own code."""

import numpy as np
import pandas as pd
from reclist.reclist import CHART_TYPE, rec_test

from evaluation import EvalRSRecList


class SimpleModel:
    """Random tracks with replacement, as the 2023 example model."""

    def __init__(self, items: pd.DataFrame, top_k: int = 10, **kwargs):
        self.items = items
        self.top_k = top_k

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        k = self.top_k
        num_users = len(user_ids)
        pred = self.items.sample(n=k * num_users, replace=True, random_state=3).index.values
        pred = pred.reshape(num_users, k)
        pred = np.concatenate((user_ids[['user_id']].values, pred), axis=1)
        return pd.DataFrame(pred, columns=['user_id', *[str(i) for i in range(k)]]) \
            .set_index('user_id')


class MyReclist(EvalRSRecList):

    @rec_test(test_type='TARGET_NORM', display_type=CHART_TYPE.SCALAR)
    def target_norm(self):
        """vector-based: mean norm of the targets' vectors in the similarity model"""
        vectors = self.similarity_model[self._y_test['track_id'].values]
        return float(np.linalg.norm(vectors, axis=1).mean())
