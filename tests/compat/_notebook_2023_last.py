"""A 2023 notebook on the last-interaction split (``folded_dataset_split=False``), in the
shapes of the official 2023 notebooks and ``eval.py``: the dataset's 2023 arguments, a model
with ``predict`` only, predictions for ``_get_test_set()[['user_id']]`` (one row per test
row), the song2vec vectors loaded from ``path_to_dataset``, and ``EvalRSReclist`` called
without a fold. The harness's own code; ``source`` is the one harness argument (the data)."""

import os

import numpy as np
import pandas as pd
from evaluation.EvalRSReclist import EvalRSReclist
from gensim.models import KeyedVectors
from reclist.reclist import CHART_TYPE, LOGGER, METADATA_STORE, rec_test

from evaluation.EvalRSRunner import ChallengeDataset


class PopularModel:
    """The most played training tracks, drawn with replacement from the top 150 per row."""

    def __init__(self, train: pd.DataFrame, top_k: int = 100, **kwargs):
        plays = train.groupby('track_id')['user_track_count'].sum()
        self.top = plays.sort_values(ascending=False, kind='stable').index.values[:150]
        self.top_k = top_k

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        k = self.top_k
        num_users = len(user_ids)
        rng = np.random.RandomState(11)
        pred = rng.choice(self.top, size=(num_users, k), replace=True)
        pred = np.concatenate((user_ids[['user_id']].values, pred), axis=1)
        return pd.DataFrame(pred, columns=['user_id', *[str(i) for i in range(k)]]) \
            .set_index('user_id')


class MyReclist(EvalRSReclist):

    @rec_test(test_type='TARGETS_PER_USER', display_type=CHART_TYPE.SCALAR)
    def targets_per_user(self):
        """test rows per test user"""
        return float(len(self._y_test) / self._x_test['user_id'].nunique())


def run(source):
    dataset = ChallengeDataset(num_folds=1, seed=42, force_download=False,
                               dataset_out_path=None, folded_dataset_split=False,
                               sample_users_perc=0.5, min_user_item_freq=10, source=source)
    events_train_df, events_test_df = dataset._get_train_set(), dataset._get_test_set()
    print(len(events_train_df), len(events_test_df))
    my_df_model = PopularModel(events_train_df, top_k=100)
    df_predictions = my_df_model.predict(dataset._get_test_set(fold=0)[['user_id']])
    similarity_model = KeyedVectors.load(os.path.join(dataset.path_to_dataset, 'song2vec.wv'))
    cdf = MyReclist(
        dataset=dataset,
        model_name="PopularModel",
        predictions=df_predictions,
        logger=LOGGER.LOCAL,
        metadata_store=METADATA_STORE.LOCAL,
        similarity_model=similarity_model,
    )
    cdf(verbose=True)
    return dataset, df_predictions, cdf
