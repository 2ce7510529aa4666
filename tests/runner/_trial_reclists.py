"""Custom RecLists in the shapes participants wrote (the harness's own code), for the trial
run before the folds: one reading statistics of ``x_train``, one failing only on few users,
one with a misspelt name."""

import numpy as np
import pandas as pd
from reclist.reclist import rec_test

from evaluation.EvalRSRecList import EvalRSRecList


class TrainStatsRecList(EvalRSRecList):
    """Plays of each predicted and each target track, looked up in statistics of x_train."""

    @rec_test(test_type='PRED_PLAYS')
    def pred_plays(self):
        plays = self._x_train.groupby('track_id')['user_track_count'].sum()
        return float(plays.loc[self._y_preds.values.ravel()].mean())

    @rec_test(test_type='TARGET_PLAYS')
    def target_plays(self):
        plays = self._x_train.groupby('track_id')['user_track_count'].sum()
        return float(plays.loc[self._y_test['track_id'].values].mean())


class SampledUsersRecList(EvalRSRecList):
    """Hit rate on 30 sampled test users: fails where a fold has fewer."""

    @rec_test(test_type='HIT_RATE_30_USERS')
    def hit_rate_30_users(self):
        users = self._y_test.sample(n=30, random_state=0)
        preds = self._y_preds.loc[users.index]
        return float(np.mean([t in row for t, row in zip(users['track_id'], preds.values)]))


class MisspeltRecList(EvalRSRecList):
    """A name that does not exist."""

    @rec_test(test_type='BROKEN')
    def broken(self):
        return float(pd.Series(hit_ratio).mean())  # noqa: F821 - the participant's mistake


class WrongSignatureRecList(EvalRSRecList):
    """A test that takes an argument nobody passes."""

    @rec_test(test_type='NEEDS_K')
    def needs_k(self, k):
        return float(k)
