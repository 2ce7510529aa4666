"""Time-aware replay equals a slow per-window reference loop; static vs replay side by side."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from evaluation import replay
from evaluation.baselines import BiasModel
from evaluation.errors import ConfigError
from evaluation.model import RecModel
from evaluation.protocols._replay import window_ids
from evaluation.splits import Split, global_time_split, temporal_user_split

K = 5


class Popular(RecModel):
    """Most frequent training items the user has not seen (slow and obvious)."""

    k = K

    def train(self, train_df, **kwargs):
        counts = train_df.groupby("track_id").size()
        self.order = sorted(counts.index, key=lambda i: (-counts[i], i))
        self.seen = train_df.groupby("user_id")["track_id"].agg(set).to_dict()
        self.n_train = len(train_df)

    def predict(self, user_ids):
        rows = []
        for u in user_ids["user_id"]:
            top = [i for i in self.order if i not in self.seen.get(u, set())][: self.k]
            rows.append(top + [-1] * (self.k - len(top)))
        return pd.DataFrame(rows, index=pd.Index(user_ids["user_id"], name="user_id"),
                            columns=[str(i) for i in range(self.k)])


def _events(seed=0, n=700, n_users=25, n_items=40):
    rng = np.random.default_rng(seed)
    pop = rng.zipf(1.6, n_items * 10) % n_items  # skewed item popularity
    frame = pd.DataFrame({"user_id": rng.integers(0, n_users, n),
                          "track_id": rng.choice(pop, n),
                          "rating": rng.integers(1, 6, n).astype(float),
                          "timestamp": rng.integers(0, 200, n) * 60})
    return frame.drop_duplicates(["user_id", "track_id"]).reset_index(drop=True)


def _user_metrics(lists, relevant):
    """hit_rate, recall and binary NDCG at K for one user (pure Python)."""
    hits = [i in relevant for i in lists[:K]]
    dcg = sum(1 / math.log2(r + 2) for r, h in enumerate(hits) if h)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(K, len(relevant))))
    return {"hit_rate@5": float(any(hits)), "recall@5": sum(hits) / len(relevant),
            "ndcg@5": dcg / idcg}


def _slow_replay(split, window_of, strict=False, static=False):
    """Per window: fit on train + earlier test events, predict, score each user by hand."""
    test = split.test.sort_values(["timestamp", "user_id", "track_id"], kind="stable")
    wins = window_of(test)
    per_window, units = [], []
    static_model = None
    if static:
        static_model = Popular()
        static_model.train(split.train)
    for w in sorted(set(wins)):
        part = test[wins == w]
        earlier = test[wins < w]
        history = pd.concat([split.train, earlier])
        if strict:
            history = history[history.timestamp < part.timestamp.min()]
        model = static_model
        if model is None:
            model = Popular()
            model.train(history)
        users = sorted(part.user_id.unique())
        preds = model.predict(pd.DataFrame({"user_id": users}))
        scores = [_user_metrics(preds.loc[u].tolist(), set(part.track_id[part.user_id == u]))
                  for u in users]
        units += scores
        per_window.append({name: np.mean([s[name] for s in scores]) for name in scores[0]}
                          | {"history": len(history), "n_points": len(part)})
    overall = {name: np.mean([s[name] for s in units]) for name in units[0]}
    return per_window, overall


METRICS = ("hit_rate@5", "recall@5", "ndcg@5")


@pytest.mark.parametrize("window,strict,quantile", [(60, False, 0.7), (1, False, 0.93),
                                                    ("2h", False, 0.7), ("90min", True, 0.7),
                                                    (500, False, 0.7)])
def test_replay_equals_slow_reference(window, strict, quantile):
    events = _events()
    split = global_time_split(events, quantile=quantile)
    result = replay(Popular, split, window=window, k=K, metrics=METRICS, mode="both",
                    strict_time=strict)
    test = split.test.sort_values(["timestamp", "user_id", "track_id"], kind="stable")
    if isinstance(window, int):
        def window_of(frame):
            return np.arange(len(frame)) // window
    else:
        seconds = pd.Timedelta(window).total_seconds()

        def window_of(frame):
            raw = np.floor((frame.timestamp.to_numpy() - test.timestamp.min()) / seconds)
            return np.unique(raw, return_inverse=True)[1]
    ref_windows, ref_overall = _slow_replay(split, window_of, strict)
    _, ref_static = _slow_replay(split, window_of, static=True)
    table = result.per_window
    assert len(table) == len(ref_windows) == result.params["n_windows"]
    for row, ref in zip(table.to_dict("records"), ref_windows):
        assert row["history_events"] == ref["history"]
        assert row["n_points"] == ref["n_points"]
        for name in METRICS:
            assert row[f"replay/{name}"] == pytest.approx(ref[name])
    for name in METRICS:
        assert result.overall["replay"][name] == pytest.approx(ref_overall[name])
        assert result.overall["static"][name] == pytest.approx(ref_static[name])
        assert result.overall["delta"][name] == pytest.approx(ref_overall[name]
                                                              - ref_static[name])
    assert table.n_points.sum() == len(split.test)
    json.dumps(result.to_dict())


def test_replay_single_window_equals_static():
    split = global_time_split(_events(1), quantile=0.6)
    result = replay(Popular, split, window=len(split.test), k=K, metrics=METRICS)
    assert len(result.per_window) == 1
    for name in METRICS:
        assert result.overall["replay"][name] == result.overall["static"][name]
        assert result.overall["delta"][name] == 0


def test_replay_modes_ratings_and_text():
    events = _events(2)
    split = temporal_user_split(events, 0.3)
    only = replay(BiasModel, split, window="1D", k=K, metrics=("ndcg@5",), mode="replay")
    assert list(only.overall) == ["replay"]
    assert {"replay/ndcg@5", "replay/rmse", "replay/mae"} <= set(only.per_window.columns)
    static = replay(lambda: BiasModel(top_k=K), split, window=50, k=K, metrics=("ndcg@5",),
                    mode="static")
    assert list(static.overall) == ["static"]
    # static rating errors over all windows equal the errors of one fit on train
    model = BiasModel().train(split.train)
    pred = model.predict_ratings(split.test)
    rmse = float(np.sqrt(((pred - split.test.rating) ** 2).mean()))
    assert static.overall["static"]["rmse"] == pytest.approx(rmse)
    both = replay(BiasModel, split, window=100, k=K, metrics=("ndcg@5",))
    text = str(both)
    assert "static" in text and "replay" in text and "delta" in text and "rmse" in text
    assert "Leakage audit" in text and both.to_dict()["audit"]["train_events_after_cut"] > 0
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(both)
    assert "Leakage audit" in console.export_text()
    assert replay(BiasModel, split, window=100, k=K, metrics=("ndcg@5",), audit=False).audit is None


def test_window_ids_and_errors():
    times = np.array([0, 10, 10, 3600, 3601, 7300])
    assert window_ids(times, 2).tolist() == [0, 0, 1, 1, 2, 2]
    assert window_ids(times, "1h").tolist() == [0, 0, 0, 1, 1, 2]
    assert window_ids(times, pd.Timedelta(minutes=90)).tolist() == [0, 0, 0, 0, 0, 1]
    assert window_ids(np.array([0, 10, 9000]), "1h").tolist() == [0, 0, 1]  # empty one skipped
    with pytest.raises(ConfigError, match="'window'.*Got 0"):
        window_ids(times, 0)
    with pytest.raises(ConfigError, match="not a duration"):
        window_ids(times, "soon")
    with pytest.raises(ConfigError, match="positive duration"):
        window_ids(times, 1.5)
    split = global_time_split(_events(), quantile=0.7)
    with pytest.raises(ConfigError, match="'mode'.*Got 'dynamic'"):
        replay(Popular, split, window=10, mode="dynamic")
    with pytest.raises(ConfigError, match="model_factory"):
        replay(Popular(), split, window=10)
    with pytest.raises(ConfigError, match="test set is empty"):
        replay(Popular, Split(split.train, split.test.iloc[:0]), window=10)


def test_public_names():
    import evaluation

    assert evaluation.replay is replay and replay.__name__ == "replay"  # a function, not a module
    assert evaluation.ReplayResult.__name__ == "ReplayResult"


@pytest.mark.realdata
def test_replay_on_movielens_100k():
    from evaluation.baselines import PopularityModel
    from evaluation.data import load_source
    from tests._shared_data import shared_dataset

    events = load_source(f"movielens:{shared_dataset('ml-100k')}").events
    split = global_time_split(events, quantile=0.9)
    result = replay(BiasModel, split, window="14D", k=10, metrics=("hit_rate@10", "ndcg@10"))
    assert result.per_window.n_points.sum() == len(split.test)
    assert 0.8 < result.overall["replay"]["rmse"] < 1.2
    assert 0.8 < result.overall["static"]["rmse"] < 1.2
    pop = replay(PopularityModel, split, window="14D", k=10, metrics=("hit_rate@10",))
    # refitting on the test events already seen can only add information for popularity
    assert pop.overall["replay"]["hit_rate@10"] >= pop.overall["static"]["hit_rate@10"] - 0.02
    assert pop.overall["static"]["hit_rate@10"] > 0.2


def test_replay_on_lfm_shaped_synthetic_data():
    from evaluation.baselines import PopularityModel
    from evaluation.data import synthetic_tables

    events = synthetic_tables("tiny").events
    split = global_time_split(events, quantile=0.9)
    result = replay(PopularityModel, split, window=len(split.test) // 4 + 1, k=10,
                    metrics=("hit_rate@10", "recall@10"))
    assert len(result.per_window) == 4
    assert set(result.overall) == {"static", "replay", "delta"}
    assert "rmse" not in result.overall["replay"]  # play counts are not ratings
    assert result.overall["static"]["hit_rate@10"] > 0
