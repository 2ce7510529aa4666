"""Reference models: valid predictions, determinism, hand-checkable cases, beating Random."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.baselines import BiasModel, CBOWModel, PopularityModel, RandomModel
from evaluation.baselines._random import sample_distinct
from evaluation.errors import ConfigError, DataError
from evaluation.model import RecModel


def hit_rate(pred: pd.DataFrame, test: pd.DataFrame) -> float:
    aligned = pred.loc[test["user_id"].to_numpy()].to_numpy()
    return float((aligned == test["track_id"].to_numpy()[:, None]).any(axis=1).mean())


def check_format(pred: pd.DataFrame, users: np.ndarray, k: int) -> None:
    assert pred.index.name == "user_id"
    np.testing.assert_array_equal(pred.index.to_numpy(), users)
    assert list(pred.columns) == [str(j) for j in range(k)]
    m = pred.to_numpy()
    real = m != -1
    assert not (np.maximum.accumulate(~real, axis=1) & real).any(), "item after padding"
    for row in m:
        items = row[row != -1]
        assert len(set(items)) == len(items), "repeated item"


def seen_pairs(train: pd.DataFrame) -> set:
    return set(zip(train["user_id"].to_numpy().tolist(), train["track_id"].to_numpy().tolist()))


# --------------------------------------------------------------------------- hand-made cases

TRAIN = pd.DataFrame({
    "user_id":          [1, 1, 2, 2, 2, 3],
    "track_id":         [10, 20, 20, 30, 40, 40],
    "timestamp":        [1, 2, 1, 2, 3, 1],
    "user_track_count": [5, 1, 1, 1, 9, 1],
})


def test_popularity_ranks_by_plays_and_excludes_heard_tracks():
    # plays: 40 -> 10, 10 -> 5, 20 -> 2, 30 -> 1
    model = PopularityModel(top_k=3).train(TRAIN)
    pred = model.predict(pd.DataFrame({"user_id": [1, 2, 3, 99]}))
    assert pred.loc[1].tolist() == [40, 30, -1]     # heard 10 and 20
    assert pred.loc[2].tolist() == [10, -1, -1]     # heard 20, 30, 40
    assert pred.loc[3].tolist() == [10, 20, 30]
    assert pred.loc[99].tolist() == [40, 10, 20]    # unknown user: the global top


def test_popularity_by_users_counts_listeners():
    # listeners: 20 -> 2, 40 -> 2, 10 -> 1, 30 -> 1; ties by track id
    pred = PopularityModel(top_k=4, by="users").train(TRAIN).predict(
        pd.DataFrame({"user_id": [99]}))
    assert pred.loc[99].tolist() == [20, 40, 10, 30]


def test_random_model_draws_distinct_catalog_items_deterministically():
    catalog = np.arange(100, 130)
    users = pd.DataFrame({"user_id": np.arange(50)})
    a = RandomModel(catalog, top_k=10, seed=0).train(TRAIN).predict(users)
    b = RandomModel(catalog, top_k=10, seed=0).train(TRAIN).predict(users)
    c = RandomModel(catalog, top_k=10, seed=1).train(TRAIN).predict(users)
    check_format(a, np.arange(50), 10)
    assert np.isin(a.to_numpy(), catalog).all()
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_sample_distinct_is_uniform_and_pads_small_catalogs(rng):
    draws = sample_distinct(rng, np.arange(1000), 2000, 50)
    srt = np.sort(draws, axis=1)
    assert not (srt[:, 1:] == srt[:, :-1]).any()
    counts = np.bincount(draws.ravel(), minlength=1000)
    # 100k draws over 1000 items: ~100 each; a chi-square-ish bound
    assert counts.min() > 50 and counts.max() < 160
    small = sample_distinct(rng, np.array([7, 8, 9]), 4, 5)
    assert (np.sort(small[:, :3], axis=1) == [7, 8, 9]).all() and (small[:, 3:] == -1).all()


def test_cbow_recommends_neighbours_of_recent_tracks():
    # two disjoint "genres" listened to in sequence; a user of genre A gets genre A tracks
    rng = np.random.default_rng(0)
    rows = []
    for u in range(200):
        genre = np.arange(0, 30) if u % 2 == 0 else np.arange(100, 130)
        for t, track in enumerate(rng.permutation(genre)[:10]):
            rows.append((u, track, t))
    train = pd.DataFrame(rows, columns=["user_id", "track_id", "timestamp"])
    model = CBOWModel(top_k=5, vector_size=16, window=5, epochs=30, seed=1).train(train)
    pred = model.predict(pd.DataFrame({"user_id": [0, 1, 999]}))
    assert (pred.loc[0] < 100).all() and (pred.loc[1] >= 100).all()
    assert (pred.loc[999] == -1).all()  # unknown user: nothing to go on
    seen = seen_pairs(train)
    assert not any((0, t) in seen for t in pred.loc[0])


def test_bad_arguments_and_inputs_are_clear_errors():
    with pytest.raises(ConfigError, match="'top_k' parameter of PopularityModel"):
        PopularityModel(top_k=0)
    with pytest.raises(ConfigError, match="'seed' parameter of RandomModel"):
        RandomModel(seed=-1)
    with pytest.raises(ConfigError, match="'window' parameter of CBOWModel"):
        CBOWModel(window=0)
    with pytest.raises(DataError, match=r"lacks column\(s\) \['user_track_count'\]"):
        PopularityModel().train(TRAIN.drop(columns="user_track_count"))
    with pytest.raises(ConfigError, match="not trained"):
        PopularityModel().predict(pd.DataFrame({"user_id": [1]}))
    with pytest.raises(DataError, match="no 'user_id' column"):
        PopularityModel().train(TRAIN).predict(pd.DataFrame({"uid": [1]}))


# --------------------------------------------------------------------------- synthetic data


@pytest.mark.parametrize("make", [PopularityModel, CBOWModel], ids=["popularity", "cbow"])
def test_baseline_beats_random_on_hit_rate(tiny, make):
    for fold in (0, 1):
        train, test = tiny.get_train_set(fold), tiny.get_test_set(fold)
        users = test[["user_id"]]
        random_hr = hit_rate(RandomModel(tiny.df_tracks).train(train).predict(users), test)
        model = make().train(train)
        pred = model.predict(users)
        check_format(pred, test["user_id"].to_numpy(), 100)
        seen = seen_pairs(train)
        assert not any((u, t) in seen for u, row in zip(pred.index, pred.to_numpy())
                       for t in row)
        assert hit_rate(pred, test) > 3 * random_hr, (fold, hit_rate(pred, test), random_hr)


def test_cbow_is_deterministic_for_a_seed(tiny):
    train, test = tiny.get_train_set(0), tiny.get_test_set(0)
    a = CBOWModel(seed=3).train(train).predict(test[["user_id"]])
    b = CBOWModel(seed=3).train(train).predict(test[["user_id"]])
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("cls", [BiasModel, CBOWModel, PopularityModel, RandomModel])
def test_top_k_is_the_one_list_length_and_k_reads_it(cls):
    model = cls(top_k=7)
    assert model.top_k == 7 and model.k == 7
    with pytest.raises(AttributeError):
        model.k = 3  # read-only: top_k is the attribute to set
    assert cls().k == 100 == RecModel.k


def test_bad_model_parameters_name_the_parameter_rule_and_value():
    with pytest.raises(ConfigError, match=r"^The 'by' parameter of PopularityModel must be one of "
                                          r"\['plays', 'users'\]\. Got 'x' instead\.$"):
        PopularityModel(by="x")
    with pytest.raises(ConfigError, match=r"'reg_users' parameter of BiasModel must be a number "
                                          r"in the range \[0\.0, inf\)\. Got -1 instead"):
        BiasModel(reg_users=-1)
    with pytest.raises(ConfigError, match=r"'n_sweeps' parameter of BiasModel must be an int in "
                                          r"the range \[1, inf\)\. Got True instead"):
        BiasModel(n_sweeps=True)


@pytest.mark.parametrize("model", [PopularityModel, RandomModel, CBOWModel, BiasModel])
def test_every_baseline_takes_the_catalog_first_and_old_calls_still_work(tiny, model):
    catalog = tiny.df_tracks
    assert model(catalog, top_k=7).top_k == 7
    assert model(catalog, 8).top_k == 8
    assert model(top_k=9).top_k == 9
    assert model(10).top_k == 10  # the old shape: top_k first
    with pytest.raises(ConfigError, match="got top_k twice"):
        model(5, top_k=7)


def test_a_misplaced_dataframe_is_shown_by_its_type_and_size(tiny):
    with pytest.raises(ConfigError) as err:
        PopularityModel(tiny.df_tracks, tiny.df_tracks)
    message = str(err.value)
    rows, cols = tiny.df_tracks.shape
    assert f"Got a DataFrame of shape ({rows}, {cols}) instead." in message
    assert "\n" not in message and len(message) < 200


def test_the_catalog_does_not_change_what_a_baseline_recommends(tiny):
    train = tiny.get_train_set(0)
    users = tiny.get_test_set(0)[["user_id"]].head(20)
    plain = PopularityModel(top_k=10)
    plain.train(train)
    with_catalog = PopularityModel(tiny.df_tracks, top_k=10)
    with_catalog.train(train)
    pd.testing.assert_frame_equal(plain.predict(users), with_catalog.predict(users))
