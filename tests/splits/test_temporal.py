"""Temporal per-user split and global time cut: invariants, hand cases, a slow reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.errors import ConfigError, DataError
from evaluation.splits import Split, global_cut_fold, global_time_split, temporal_user_split


def _events(rng, n_users=40, n_items=30, max_events=25, time_span=50):
    sizes = rng.integers(1, max_events, n_users)
    users = np.repeat(np.arange(n_users) * 3 + 1, sizes)
    rows = []
    for u in np.unique(users):  # unique items per user, as in the schema
        m = int((users == u).sum())
        rows.append(pd.DataFrame({"user_id": u, "track_id": rng.choice(n_items, m, replace=False),
                                  "timestamp": rng.integers(0, time_span, m)}))
    ev = pd.concat(rows, ignore_index=True)
    ev = ev.sample(frac=1.0, random_state=1).reset_index(drop=True)
    return ev.astype({"user_id": "int32", "track_id": "int32", "timestamp": "int64"})


def _reference(events, ratio, min_events):
    """Slow per-user reference: sort the user's rows by (time, item, row), cut the tail."""
    test_rows = []
    for _, group in events.groupby("user_id"):
        n = len(group)
        if n < min_events:
            continue
        ordered = sorted(group.index, key=lambda r: (group.at[r, "timestamp"],
                                                     group.at[r, "track_id"], r))
        n_test = min(n - 1, max(1, math.floor(ratio * n + 1e-9)))
        test_rows += ordered[n - n_test:]
    return sorted(test_rows)


def _check_invariants(events, split, ratio, min_events):
    train, test = split.train, split.test
    assert len(train) + len(test) == len(events)
    assert not set(train.index) & set(test.index)
    assert list(train.columns) == list(events.columns)
    sizes = events.groupby("user_id").size()
    n_test = test.groupby("user_id").size().reindex(sizes.index, fill_value=0)
    expected = np.where(sizes >= min_events,
                        np.minimum(sizes - 1, np.maximum(1, np.floor(ratio * sizes + 1e-9))), 0)
    np.testing.assert_array_equal(n_test.to_numpy(), expected)
    # every test event is later than the user's train events, or tied and ordered after them
    last_train = train.sort_values(["timestamp", "track_id"]).groupby("user_id").tail(1)
    first_test = test.sort_values(["timestamp", "track_id"]).groupby("user_id").head(1)
    both = first_test.merge(last_train, on="user_id", suffixes=("_te", "_tr"))
    later = both.timestamp_te > both.timestamp_tr
    tied = (both.timestamp_te == both.timestamp_tr) & (both.track_id_te > both.track_id_tr)
    assert (later | tied).all()


@pytest.mark.parametrize("ratio,min_events", [(0.2, 5), (0.5, 2), (0.34, 3), (0.9, 10)])
def test_temporal_split_matches_slow_reference(rng, ratio, min_events):
    events = _events(rng)
    split = temporal_user_split(events, ratio, min_events=min_events)
    assert sorted(split.test.index) == _reference(events, ratio, min_events)
    _check_invariants(events, split, ratio, min_events)
    assert split.params["kind"] == "temporal_user"
    assert split.params["ratio"] == ratio and split.params["min_events"] == min_events


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ratio=st.floats(0.01, 0.99),
       min_events=st.integers(2, 8))
def test_temporal_split_invariants_property(seed, ratio, min_events):
    events = _events(np.random.default_rng(seed), n_users=12, max_events=12, time_span=6)
    _check_invariants(events, temporal_user_split(events, ratio, min_events=min_events),
                      ratio, min_events)


def test_temporal_split_hand_case():
    ev = pd.DataFrame({"user_id": [1, 1, 1, 1, 1, 2, 2, 2, 3],
                       "track_id": [14, 10, 13, 12, 11, 10, 12, 15, 10],
                       "timestamp": [5, 1, 3, 3, 2, 2, 8, 9, 4]})
    split = temporal_user_split(ev, 0.4, min_events=3)
    # user 1: 5 events, floor(2.0) = 2 -> 14@5 and, of the tie at t=3, the larger id 13
    # user 2: 3 events, floor(1.2) = 1 -> 15@9; user 3: one event < min_events -> all train
    assert split.test.index.tolist() == [0, 2, 7]
    assert split.train.index.tolist() == [1, 3, 4, 5, 6, 8]
    # at least one test event per eligible user, at least one train event always
    one = temporal_user_split(ev, 0.01, min_events=3)
    assert one.test.index.tolist() == [0, 7]
    most = temporal_user_split(ev, 0.99, min_events=3)
    assert most.test.groupby("user_id").size().to_dict() == {1: 4, 2: 2}


def test_temporal_split_tie_break_is_row_order_free(rng):
    events = _events(rng, time_span=5)  # many ties
    a = temporal_user_split(events, 0.3)
    shuffled = events.sample(frac=1.0, random_state=7)
    b = temporal_user_split(shuffled, 0.3)
    assert sorted(a.test.index) == sorted(b.test.index)
    # without a tie-break column, the row position decides among ties
    c = temporal_user_split(events, 0.3, tie_break=None)
    assert len(c.test) == len(a.test)
    ordered = events.reset_index().sort_values(["user_id", "timestamp", "index"], kind="stable")
    expected = ordered.groupby("user_id").tail(1)["index"]
    expected = expected[expected.map(events.user_id).map(events.groupby("user_id").size()) >= 5]
    assert set(expected) <= set(c.test.index)  # each user's latest (row-order) event


def test_temporal_split_datetime_column():
    ev = pd.DataFrame({"user_id": [1, 1, 1], "track_id": [1, 2, 3],
                       "timestamp": pd.to_datetime(["2020-01-03", "2020-01-01", "2020-01-02"])})
    split = temporal_user_split(ev, 0.34, min_events=3)
    assert split.test.index.tolist() == [0]


def test_temporal_split_errors():
    ev = pd.DataFrame({"user_id": [1], "track_id": [1], "timestamp": [1]})
    with pytest.raises(ConfigError, match="'ratio'.*Got 1.5"):
        temporal_user_split(ev, 1.5)
    with pytest.raises(ConfigError, match="'min_events'.*Got 1"):
        temporal_user_split(ev, min_events=1)
    with pytest.raises(DataError, match="missing column.*'timestamp'"):
        temporal_user_split(ev.drop(columns="timestamp"))
    with pytest.raises(DataError, match="'user_id' must hold integer ids"):
        temporal_user_split(ev.astype({"user_id": "str"}))
    with pytest.raises(DataError, match="expected a pandas DataFrame"):
        temporal_user_split([1, 2, 3])
    with pytest.raises(DataError, match="no column 'rating' to break timestamp ties"):
        temporal_user_split(ev, tie_break="rating")
    with pytest.raises(ConfigError, match="'tie_break'.*Got 3"):
        temporal_user_split(ev, tie_break=3)
    # any column can break ties, floats included
    rated = pd.DataFrame({"user_id": [1, 1], "track_id": [1, 2], "timestamp": [5, 5],
                          "rating": [4.5, 1.0]})
    assert temporal_user_split(rated, 0.5, min_events=2, tie_break="rating").test.index == [0]
    nan = ev.astype({"timestamp": "float64"})
    nan.loc[0, "timestamp"] = np.nan
    with pytest.raises(DataError, match="'timestamp' has missing values at rows \\[0\\]"):
        temporal_user_split(nan)


def test_temporal_split_empty_and_small_users():
    empty = pd.DataFrame({"user_id": pd.Series([], dtype="int64"),
                          "track_id": pd.Series([], dtype="int64"),
                          "timestamp": pd.Series([], dtype="int64")})
    split = temporal_user_split(empty)
    assert len(split.train) == len(split.test) == 0
    ev = pd.DataFrame({"user_id": [1, 1], "track_id": [1, 2], "timestamp": [1, 2]})
    assert len(temporal_user_split(ev, min_events=3).test) == 0


def test_global_time_split_cutoff_and_quantile(rng):
    events = _events(rng)
    split = global_time_split(events, cutoff=25)
    assert isinstance(split, Split) and split.cutoff == 25
    assert (split.train.timestamp < 25).all() and (split.test.timestamp >= 25).all()
    assert len(split.train) + len(split.test) == len(events)
    q = global_time_split(events, quantile=0.8)
    assert q.cutoff == np.quantile(events.timestamp, 0.8, method="higher")
    assert 0.7 < len(q.train) / len(events) <= 0.8
    assert q.params["quantile"] == 0.8 and q.params["kind"] == "global_time"


def test_global_time_split_dates_and_cold_filters():
    ev = pd.DataFrame({"user_id": [1, 1, 2, 3, 3], "track_id": [1, 2, 1, 3, 2],
                       "timestamp": [1514764790, 1514764800, 1514764810, 1514764799, 1514764805]})
    split = global_time_split(ev, cutoff="2018-01-01")  # = 1514764800 UTC
    assert split.cutoff == 1514764800
    assert split.test.index.tolist() == [1, 2, 4]
    cold = global_time_split(ev, cutoff="2018-01-01", drop_cold_users=True)
    assert cold.test.index.tolist() == [1, 4]  # user 2 has no train events
    assert cold.params["dropped_cold_user_events"] == 1
    both = global_time_split(ev, cutoff=1514764800, drop_cold_users=True, drop_cold_items=True)
    assert both.test.index.tolist() == []  # item 2 appears in train only at the cut
    assert both.params["dropped_cold_item_events"] == 2


def test_global_time_split_errors():
    ev = pd.DataFrame({"user_id": [1, 2], "track_id": [1, 2], "timestamp": [10, 20]})
    with pytest.raises(ConfigError, match="exactly one of 'cutoff'"):
        global_time_split(ev)
    with pytest.raises(ConfigError, match="exactly one of 'cutoff'"):
        global_time_split(ev, 15, quantile=0.5)
    with pytest.raises(ConfigError, match="every event in test.*from 10 to 20"):
        global_time_split(ev, cutoff=5)
    with pytest.raises(ConfigError, match="every event in train"):
        global_time_split(ev, cutoff=25)
    with pytest.raises(ConfigError, match="'quantile'.*Got 0"):
        global_time_split(ev, quantile=0)
    with pytest.raises(ConfigError, match="not a time pandas can read"):
        global_time_split(ev, cutoff="yesterday-ish")


def test_temporal_split_on_lfm_shaped_synthetic_data():
    from evaluation.data import synthetic_tables

    events = synthetic_tables("tiny").events
    split = temporal_user_split(events, 0.2, min_events=5)
    _check_invariants(events, split, 0.2, 5)
    assert split.train.dtypes.equals(events.dtypes)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["ml-100k", "ml-latest-small"])
def test_temporal_split_on_movielens(name):
    from evaluation.data import load_source
    from tests._shared_data import shared_dataset

    events = load_source(f"movielens:{shared_dataset(name)}").events
    split = temporal_user_split(events, 0.2, min_events=5)
    _check_invariants(events, split, 0.2, 5)
    assert 0.18 < len(split.test) / len(events) < 0.2  # floor() keeps it at most 20 %
    cut = global_time_split(events, quantile=0.8)
    assert cut.train["timestamp"].max() < cut.cutoff <= cut.test["timestamp"].min()


def _first_after_by_hand(events: pd.DataFrame, cut: float) -> list[int]:
    """The global cut's test rows, one user at a time: each user with an event before the cut
    is tested on their earliest event at or after it (ties: the earlier row)."""
    rows = []
    for user in sorted(set(events["user_id"])):
        mine = [(t, i) for i, (u, t) in enumerate(zip(events["user_id"], events["timestamp"]))
                if u == user]
        later = [(t, i) for t, i in mine if not t < cut]
        if later and any(t < cut for t, _ in mine):
            rows.append(min(later)[1])
    return rows


@pytest.mark.parametrize("ids", ["dense", "sparse", "negative"])
@pytest.mark.parametrize("times", ["int", "float"])
def test_global_cut_fold_matches_a_user_by_user_reference(ids, times):
    rng = np.random.default_rng([len(ids), len(times)])
    users = rng.integers(0, 40, 600)
    # dense ids take the table by user id; sparse or negative ones the sorted lookup
    users = {"dense": users, "sparse": users * 10**12, "negative": users - 20}[ids]
    stamps = rng.integers(0, 50, 600)  # many ties within a user
    events = pd.DataFrame({"user_id": users, "track_id": np.arange(600),
                           "timestamp": stamps.astype(float) / 4 if times == "float"
                           else stamps})
    cut = 6.0 if times == "float" else 25.0
    fold = global_cut_fold(events, cut)
    assert fold.train_rows.tolist() == np.flatnonzero(events["timestamp"] < cut).tolist()
    expected = _first_after_by_hand(events, cut)
    assert len(expected) > 20
    assert fold.test_rows.tolist() == expected
