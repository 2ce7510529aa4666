"""The trial run of a custom RecList before the folds: never refuses a test that passes on
a real fold; warns and goes on for errors data can cause; refuses code errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tests.runner._trial_reclists as code
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError, RunWarning
from evaluation.runner import EvalRSRunner
from evaluation.runner._trial import TRIAL_USERS, check_reclist, trial_predictions

# the popularity model recommends training tracks, on purpose
pytestmark = pytest.mark.filterwarnings("ignore::evaluation.errors.PredictionWarning")


@pytest.fixture(scope="module")
def tiny():
    return ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)


class Pop:
    """The most played tracks of the training events, for everyone."""

    def train(self, train_df: pd.DataFrame) -> None:
        self.trained = True
        plays = train_df.groupby("track_id")["user_track_count"].sum()
        self.top = plays.sort_values(ascending=False, kind="stable").index.to_numpy()[:100]

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        users = user_ids["user_id"].to_numpy()
        return pd.DataFrame(np.tile(self.top, (len(users), 1)),
                            index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(100)])


class NeverTrained(Pop):
    def train(self, train_df: pd.DataFrame) -> None:
        raise AssertionError("the trial must come before any training")


def runner(dataset, tmp_path):
    return EvalRSRunner(dataset, results_dir=tmp_path / "results", progress=False,
                        verbose=False, reports=False, n_boot=0)


def test_the_trial_gives_the_folds_training_frame_and_tracks_a_model_could_predict(tiny):
    train, test = tiny.get_train_and_test_sets(0, limit=TRIAL_USERS)
    users = test["user_id"].to_numpy()
    preds = trial_predictions(train, users, 100)
    plays = train.groupby("track_id")["user_track_count"].sum()
    # by hand: sort the plays, the smaller id first among equals
    ranked = sorted(plays.items(), key=lambda kv: (-kv[1], kv[0]))
    assert list(preds.iloc[0]) == [t for t, _ in ranked[:100]]
    assert (preds.to_numpy() == preds.to_numpy()[0]).all()
    # every predicted track and every target is in the statistics of the full training
    # frame; the 20 trial users' own rows miss some (what the trial used to give)
    assert preds.isin(plays.index).all().all() and test["track_id"].isin(plays.index).all()
    own_rows = train[train["user_id"].isin(users)]
    assert not test["track_id"].isin(own_rows["track_id"]).all()


def test_a_test_reading_x_train_statistics_passes_the_trial_and_the_run(tiny, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        assert check_reclist(tiny, code.TrainStatsRecList) is None
        result = runner(tiny, tmp_path).evaluate(Pop(), reclist_cls=code.TrainStatsRecList)
    for fold, record in enumerate(result.folds):
        train = tiny.get_train_set(fold)
        plays = train.groupby("track_id")["user_track_count"].sum()
        want = plays.loc[tiny.get_test_set(fold)["track_id"].to_numpy()].mean()
        assert record["tests"]["TARGET_PLAYS"] == pytest.approx(want, rel=1e-12)


def test_a_data_dependent_failure_warns_and_the_run_goes_on(tiny, tmp_path):
    assert len(tiny.get_test_set(0)) >= 30  # a real fold has the 30 users the test samples
    with pytest.warns(RunWarning, match=r"(?s)SampledUsersRecList failed on a trial run.*"
                      r"ValueError.*_trial_reclists.py.*in hit_rate_30_users.*"
                      r"the full run may still succeed"):
        result = runner(tiny, tmp_path).evaluate(Pop(), reclist_cls=code.SampledUsersRecList)
    assert all(0.0 <= f["tests"]["HIT_RATE_30_USERS"] <= 1.0 for f in result.folds)


@pytest.mark.parametrize("cls, error", [(code.MisspeltRecList, "NameError: name 'hit_ratio'"),
                                        (code.WrongSignatureRecList, "TypeError")])
def test_a_code_error_is_refused_before_the_folds(tiny, tmp_path, cls, error):
    with pytest.raises(ConfigError) as caught:
        runner(tiny, tmp_path).evaluate(NeverTrained(), reclist_cls=cls)
    text = str(caught.value)
    assert error in text and "before any training" in text
    if cls is code.MisspeltRecList:
        assert "_trial_reclists.py" in text and "pd.Series(hit_ratio)" in text
