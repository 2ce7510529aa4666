"""Participant code written the way the official EvalRS 2022 template, notebook and README
wrote it: the same imports, constructor calls, model shapes and custom-test patterns.

This is the harness's own code (not the official one); tests import it after ``evaluation``
is imported, as a 2022 ``submission.py`` did (its first import is ``evaluation.EvalRSRunner``).
"""

from random import choice

import numpy as np
import pandas as pd
from reclist.abstractions import RecModel, rec_test

from evaluation.EvalRSRecList import EvalRSRecList


class MyModel(RecModel):
    """The template's random model: tracks drawn with replacement (lists repeat tracks)."""

    def __init__(self, items: pd.DataFrame, top_k: int = 100, **kwargs):
        super(MyModel, self).__init__()  # noqa: UP008 - the 2022 template's spelling
        self.items = items
        self.top_k = top_k
        self.kwargs = kwargs

    def train(self, train_df: pd.DataFrame):
        return

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        k = self.top_k
        num_users = len(user_ids)
        pred = self.items.sample(n=k * num_users, replace=True).index.values
        pred = pred.reshape(num_users, k)
        pred = np.concatenate((user_ids[['user_id']].values, pred), axis=1)
        return pd.DataFrame(pred, columns=['user_id', *[str(i) for i in range(k)]]) \
            .set_index('user_id')


class PopModel(RecModel):
    """A 2022-style model that trains: the most played tracks, the same list for everyone."""

    def __init__(self, items: pd.DataFrame, top_k: int = 100, **kwargs):
        super(PopModel, self).__init__()  # noqa: UP008
        self.items = items
        self.top_k = top_k

    def train(self, train_df: pd.DataFrame):
        counts = train_df.groupby('track_id')['user_track_count'].sum()
        self.top = counts.sort_values(ascending=False, kind='stable').index.values[:self.top_k]

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        pred = np.tile(self.top, (len(user_ids), 1))
        pred = np.concatenate((user_ids[['user_id']].values, pred), axis=1)
        columns = ['user_id', *[str(i) for i in range(self.top_k)]]
        return pd.DataFrame(pred, columns=columns).set_index('user_id')


class myRecList(EvalRSRecList):
    """The notebook's custom test, and tests in the shapes 2022 participants wrote."""

    @rec_test(test_type='custom_test')
    def lucky_user_test(self):
        """Custom test, returning my lucky user from the catalog"""
        return {"luck_user": str(choice(self._x_test['user_id'].unique()))}

    @rec_test(test_type='MRED_COUNTRY_TOP3')
    def mred_top_countries(self):
        """per slice: MRED over the three largest countries"""
        user_countries = self.product_data['users'].loc[self._y_test.index, ['country']]
        top3 = user_countries['country'].value_counts().index[:3]
        mask = user_countries['country'].isin(top3)
        return self.miss_rate_equality_difference(
            self._y_preds[mask], self._y_test[mask], user_countries[mask], 'country')

    @rec_test(test_type='MR_FROM_MRED_COUNTRY')
    def miss_rate_read_back(self):
        """reads the overall miss rate of a slice test, as 2022 code did"""
        return self.mred_country()['mr']

    @rec_test(test_type='MRR_BY_GENDER')
    def mrr_by_gender(self):
        """per user, sliced: MRR of each gender (2022 returned JSON text)"""
        user_gender = self.product_data['users'].loc[self._y_test.index, ['gender']]
        return self.mrr_at_k_slice(self._y_preds, self._y_test, user_gender, 'gender')

    @rec_test(test_type='HIT_AT_10')
    def hits_at_10(self):
        """per user: share of users with the target in the first 10"""
        top10 = self._y_preds.iloc[:, :10].values
        target = self._y_test['track_id'].values.reshape(-1, 1)
        return float((top10 == target).any(axis=1).mean())

    @rec_test(test_type='FIRST_PRED_SIMILARITY')
    def first_prediction_similarity(self):
        """vector-based: mean cosine between the target and the first prediction"""
        known = set(self._dense_repr.key_to_index)
        mask = (self._y_test['track_id'].isin(known).values
                & self._y_preds['0'].isin(known).values)
        gt = self._dense_repr[self._y_test['track_id'].values[mask]]
        first = self._dense_repr[self._y_preds['0'].values[mask]]
        return float(self.cosine_sim(gt, first).mean())


class RecList2022Init(EvalRSRecList):
    """A custom RecList with the 2022 constructor."""

    def __init__(self, model, dataset, y_preds=None):
        super().__init__(model, dataset, y_preds)
        self.users_at_init = len(dataset.x_test)

    @rec_test(test_type='USERS_SEEN_AT_INIT')
    def users_seen(self):
        """the number of test users the 2022 dataset argument held"""
        return self.users_at_init


class UndefinedRecList(EvalRSRecList):
    """A 2022 custom test that returns NaN (2022 kept it)."""

    @rec_test(test_type='UNDEFINED')
    def undefined(self):
        """nothing to measure"""
        return float('nan')


class BrokenRecList(EvalRSRecList):
    """A custom test reading an attribute that no RecList has."""

    @rec_test(test_type='BROKEN')
    def broken(self):
        """reads a misspelt attribute"""
        return len(self._y_pred)
