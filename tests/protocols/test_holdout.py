"""Rating prediction (BiasModel, rating errors) and evaluate_split on hand-made and real data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evaluation.baselines import BiasModel
from evaluation.errors import ConfigError, DataError, PredictionError
from evaluation.model import RecModel
from evaluation.protocols import SplitResult, evaluate_split, rating_errors
from evaluation.splits import Split, global_time_split, temporal_user_split
from tests.protocols._split_data import TEST, TRAIN, FixedModel, random_ratings

RATED = pd.DataFrame({"user_id": [1, 1, 2, 2, 3], "track_id": [10, 11, 10, 12, 11],
                      "rating": [5.0, 3.0, 4.0, 2.0, 1.0]})


class PopularModel(RecModel):
    """Most frequent training items the user has not seen (a slow, obvious implementation)."""

    k = 10

    def train(self, train_df, **kwargs):
        counts = train_df.groupby("track_id").size()
        self.order = sorted(counts.index, key=lambda i: (-counts[i], i))
        self.seen = train_df.groupby("user_id")["track_id"].agg(set).to_dict()

    def predict(self, user_ids):
        rows = []
        for u in user_ids["user_id"]:
            seen = self.seen.get(u, set())
            top = [i for i in self.order if i not in seen][: self.k]
            rows.append(top + [-1] * (self.k - len(top)))
        return pd.DataFrame(rows, index=pd.Index(user_ids["user_id"], name="user_id"),
                            columns=[str(i) for i in range(self.k)])


class RandomItems(RecModel):
    k = 10

    def train(self, train_df, **kwargs):
        self.items = np.unique(train_df["track_id"])

    def predict(self, user_ids):
        rng = np.random.default_rng(0)
        picks = np.array([rng.choice(self.items, self.k, replace=False) for _ in user_ids.index])
        return pd.DataFrame(picks, index=pd.Index(user_ids["user_id"], name="user_id"),
                            columns=[str(i) for i in range(self.k)])


# -- BiasModel ---------------------------------------------------------------------------------

def test_bias_model_hand_computed_one_sweep_without_regularisation():
    model = BiasModel(top_k=3, reg_users=0, reg_items=0, n_sweeps=1).train(RATED)
    assert model.global_mean == 3.0  # (5 + 3 + 4 + 2 + 1) / 5
    # residuals r - mu: u1: (10: 2, 11: 0), u2: (10: 1, 12: -1), u3: (11: -2)
    # items first (b_u = 0): b_10 = (2 + 1) / 2, b_11 = (0 - 2) / 2, b_12 = -1 / 1
    np.testing.assert_allclose(model.item_bias, [1.5, -1.0, -1.0])
    # users: b_1 = ((2 - 1.5) + (0 + 1)) / 2, b_2 = ((1 - 1.5) + (-1 + 1)) / 2, b_3 = (-2 + 1) / 1
    np.testing.assert_allclose(model.user_bias, [0.75, -0.25, -1.0])


def test_bias_model_hand_computed_with_regularisation():
    model = BiasModel(reg_users=2, reg_items=1, n_sweeps=1).train(RATED)
    b_i = np.array([(2 + 1) / (2 + 1), (0 - 2) / (2 + 1), -1 / (1 + 1)])
    b_u = np.array([((2 - b_i[0]) + (0 - b_i[1])) / (2 + 2),
                    ((1 - b_i[0]) + (-1 - b_i[2])) / (2 + 2),
                    (-2 - b_i[1]) / (1 + 2)])
    np.testing.assert_allclose(model.item_bias, b_i)
    np.testing.assert_allclose(model.user_bias, b_u)
    pairs = pd.DataFrame({"user_id": [1, 99, 2, 99], "track_id": [12, 10, 77, 77]},
                         index=[7, 5, 3, 1])
    pred = model.predict_ratings(pairs)
    assert pred.index.tolist() == [7, 5, 3, 1]
    # known pair; unknown user -> mu + b_i; unknown item -> mu + b_u; both unknown -> mu
    np.testing.assert_allclose(pred, [3 + b_u[0] + b_i[2], 3 + b_i[0], 3 + b_u[1], 3.0])


def _slow_biases(frame, reg_u, reg_i, sweeps):
    mu = frame.rating.mean()
    b_u = {u: 0.0 for u in frame.user_id.unique()}
    b_i = {i: 0.0 for i in frame.track_id.unique()}
    for _ in range(sweeps):
        for i, g in frame.groupby("track_id"):
            b_i[i] = sum(r - mu - b_u[u] for u, r in zip(g.user_id, g.rating)) / (len(g) + reg_i)
        for u, g in frame.groupby("user_id"):
            b_u[u] = sum(r - mu - b_i[i] for i, r in zip(g.track_id, g.rating)) / (len(g) + reg_u)
    return mu, b_u, b_i


def test_bias_model_equals_slow_reference(rng):
    frame = random_ratings(rng)
    model = BiasModel(reg_users=3, reg_items=5, n_sweeps=4).train(frame)
    mu, b_u, b_i = _slow_biases(frame, 3, 5, 4)
    assert model.global_mean == pytest.approx(mu)
    np.testing.assert_allclose(model.user_bias, [b_u[u] for u in model.user_ids])
    np.testing.assert_allclose(model.item_bias, [b_i[i] for i in model.item_ids])
    # huge or negative ids (factorised instead of tabled) give the same biases
    odd = BiasModel(reg_users=3, reg_items=5, n_sweeps=4).train(
        frame.assign(user_id=-frame.user_id, track_id=frame.track_id + 2**40))
    np.testing.assert_allclose(odd.user_bias, [b_u[-u] for u in odd.user_ids])
    np.testing.assert_allclose(odd.item_bias, [b_i[i - 2**40] for i in odd.item_ids])


def test_bias_model_converges_to_the_ridge_solution(rng):
    frame = random_ratings(rng, n=200, n_users=10, n_items=15)
    reg_u, reg_i = 2.0, 4.0
    model = BiasModel(reg_users=reg_u, reg_items=reg_i, n_sweeps=500).train(frame)
    # Independent solution: least squares on one-hot [users | items] with ridge rows appended.
    users, u = np.unique(frame.user_id, return_inverse=True)
    items, i = np.unique(frame.track_id, return_inverse=True)
    a = np.zeros((len(frame), len(users) + len(items)))
    a[np.arange(len(frame)), u] = 1
    a[np.arange(len(frame)), len(users) + i] = 1
    ridge = np.diag(np.sqrt(np.r_[np.full(len(users), reg_u), np.full(len(items), reg_i)]))
    y = np.r_[frame.rating - frame.rating.mean(), np.zeros(len(users) + len(items))]
    x = np.linalg.lstsq(np.vstack([a, ridge]), y, rcond=None)[0]
    np.testing.assert_allclose(model.user_bias, x[: len(users)], atol=1e-6)
    np.testing.assert_allclose(model.item_bias, x[len(users):], atol=1e-6)


def test_bias_model_predict_ranks_unseen_items_by_bias(rng):
    frame = random_ratings(rng)
    model = BiasModel(top_k=7).train(frame)
    bias = dict(zip(model.item_ids, model.item_bias))
    order = sorted(bias, key=lambda i: (-bias[i], i))
    users = np.r_[frame.user_id.unique()[:12], [-3, 10**6]]  # two unknown users
    got = model.predict(pd.DataFrame({"user_id": users}))
    assert got.index.tolist() == users.tolist() and list(got.columns) == [str(j) for j in range(7)]
    for u in users:
        seen = set(frame.track_id[frame.user_id == u])
        expected = [i for i in order if i not in seen][:7]
        assert got.loc[u].tolist() == expected
    # a small catalog pads with -1; k can be overridden per call
    small = BiasModel(top_k=3).train(RATED).predict(pd.DataFrame({"user_id": [1]}), k=4)
    assert small.loc[1].tolist() == [12, -1, -1, -1]


def test_bias_model_clipping_play_counts_and_errors():
    model = BiasModel(reg_users=0, reg_items=0, n_sweeps=3).train(RATED)
    pred = model.predict_ratings(pd.DataFrame({"user_id": [1, 3], "track_id": [10, 12]}))
    assert pred.between(1.0, 5.0).all()
    unclipped = BiasModel(reg_users=0, reg_items=0, n_sweeps=3, clip=False).train(RATED)
    raw = unclipped.predict_ratings(pd.DataFrame({"user_id": [1], "track_id": [10]}))
    assert raw.iloc[0] > 5.0  # 3 + b_1 + b_10 overshoots; the clipped model stops at 5
    assert pred.iloc[0] == 5.0
    # without a rating column the play count is the signal
    plays = RATED.rename(columns={"rating": "user_track_count"})
    assert BiasModel().train(plays).global_mean == 3.0
    with pytest.raises(DataError, match="lacks column.*'user_track_count'"):
        BiasModel().train(RATED.drop(columns="rating"))
    with pytest.raises(DataError, match="missing or infinite values"):
        BiasModel().train(RATED.assign(rating=[1.0, np.nan, 2.0, 3.0, 4.0]))
    with pytest.raises(ConfigError, match="not trained"):
        BiasModel().predict_ratings(RATED)
    with pytest.raises(ConfigError, match="'reg_users'.*Got -1"):
        BiasModel(reg_users=-1)
    with pytest.raises(ConfigError, match="'top_k'.*Got 0"):
        BiasModel(top_k=0)


# -- rating errors and evaluate_split ----------------------------------------------------------

def test_rating_errors_match_scikit_learn(rng, sklearn_metrics):
    frame = random_ratings(rng)
    split = temporal_user_split(frame, 0.3)
    model = BiasModel().train(split.train)
    pred = model.predict_ratings(split.test)
    errors = rating_errors(model, split.test, rating_range=(1, 5))
    y = split.test.rating
    assert errors["rmse"] == pytest.approx(np.sqrt(sklearn_metrics.mean_squared_error(y, pred)))
    assert errors["mae"] == pytest.approx(sklearn_metrics.mean_absolute_error(y, pred))
    assert errors["nrmse"] == pytest.approx(errors["rmse"] / 4)
    assert errors["nmae"] == pytest.approx(errors["mae"] / 4)
    per_user = rating_errors(model, split.test, aggregate="user")
    expected = np.mean([np.sqrt(np.mean((g.rating - pred[g.index]) ** 2))
                        for _, g in split.test.groupby("user_id")])
    assert per_user["rmse"] == pytest.approx(expected)


def test_rating_errors_reject_bad_models():
    class NoRatings(FixedModel):
        pass

    class BadRatings(FixedModel):
        def predict_ratings(self, pairs_df):
            return pd.Series(np.nan, index=pairs_df.index)

    class Shuffled(FixedModel):
        def predict_ratings(self, pairs_df):
            return pd.Series(np.arange(len(pairs_df), dtype=float), index=pairs_df.index[::-1])

    class Short(FixedModel):
        def predict_ratings(self, pairs_df):
            return np.ones(len(pairs_df) - 1)

    class Words(FixedModel):
        def predict_ratings(self, pairs_df):
            return pd.Series("good", index=pairs_df.index)

    with pytest.raises(ConfigError, match="does not predict ratings"):
        rating_errors(NoRatings({}), RATED)
    with pytest.raises(PredictionError, match="5 missing or infinite ratings"):
        rating_errors(BadRatings({}), RATED)
    with pytest.raises(PredictionError, match="returned 4 values for 5 pairs"):
        rating_errors(Short({}), RATED)
    with pytest.raises(PredictionError, match="must return numeric ratings"):
        rating_errors(Words({}), RATED)
    with pytest.raises(DataError, match="need a 'rating' column"):
        rating_errors(BiasModel().train(RATED), RATED.drop(columns="rating"))
    # a Series in another row order is aligned by index, not by position
    errors = rating_errors(Shuffled({}), RATED)
    pred = np.arange(5, dtype=float)[::-1]
    assert errors["mae"] == pytest.approx(np.mean(np.abs(RATED.rating - pred)))


def test_evaluate_split_hand_computed():
    split = Split(TRAIN, TEST, params={"kind": "hand"})
    model = FixedModel({1: [13, 14, 12], 2: [12, 13, 14], 3: [11, 12, 13]})
    result = evaluate_split(model, split, k=3,
                            metrics=("precision@3", "recall@3", "hit_rate@3", "ndcg@3", "mrr@3"))
    assert model.trained_on == 5
    assert isinstance(result, SplitResult)
    m = result.metrics
    # user 1: hits at ranks 1 and 3 of {12, 13}; user 2: miss; user 3: miss
    assert m["precision@3"] == pytest.approx((2 / 3) / 3)
    assert m["recall@3"] == pytest.approx(1 / 3)
    assert m["hit_rate@3"] == pytest.approx(1 / 3)
    assert m["mrr@3"] == pytest.approx(1 / 3)
    idcg = 1 + 1 / np.log2(3)
    assert m["ndcg@3"] == pytest.approx(((1 + 1 / np.log2(4)) / idcg) / 3)
    assert result.n_users_evaluated == 3 and result.rating_errors is None
    assert result.audit.test_events_unseen_item == 0
    assert result.split["kind"] == "hand" and result.split["test_events"] == 4
    json.dumps(result.to_dict())


def test_evaluate_split_threshold_graded_and_names_without_cutoff():
    split = Split(TRAIN, TEST)
    model = FixedModel({1: [13, 14, 12], 2: [12, 13, 14], 3: [11, 12, 13]})
    # relevant: rating >= 4 -> user 1: {12}, user 2: {11}; user 3 (rating 1) is not evaluated
    result = evaluate_split(model, split, k=3, metrics=("recall", "ndcg"),
                            relevance_threshold=4, audit=False)
    assert result.n_users_evaluated == 2 and result.audit is None
    assert "audit" not in result.to_dict()
    assert result.metrics["recall@3"] == pytest.approx(0.5)
    assert result.metrics["ndcg@3"] == pytest.approx((1 / np.log2(4)) / 2)
    # graded: gains are the ratings of the relevant items (user 1: 5 at rank 3 of ideal rank 1)
    graded = evaluate_split(model, split, k=3, metrics=("ndcg@3",), relevance_threshold=1,
                            graded=True, audit=False)
    # user 1: gains {12: 5, 13: 2}; list 13, 14, 12 -> DCG 2 + 5/log2(4); IDCG 5 + 2/log2(3)
    user1 = (2 + 5 / np.log2(4)) / (5 + 2 / np.log2(3))
    assert graded.metrics["ndcg@3"] == pytest.approx(user1 / 3)
    with pytest.raises(ConfigError, match="needs a 'rating' column"):
        evaluate_split(model, Split(TRAIN, TEST.drop(columns="rating")), relevance_threshold=4)


def test_evaluate_split_rating_errors_and_short_lists(sklearn_metrics):
    split = Split(TRAIN, TEST)
    result = evaluate_split(BiasModel(top_k=3), split, k=3, metrics=("hit_rate@3", "rmse"))
    model = BiasModel(top_k=3).train(TRAIN)
    pred = model.predict_ratings(TEST)
    assert result.rating_errors == {
        "rmse": pytest.approx(np.sqrt(sklearn_metrics.mean_squared_error(TEST.rating, pred)))}
    with pytest.warns(UserWarning, match="returned 3 ranked items per user but the metrics "
                                         "look at the top 5"):
        evaluate_split(FixedModel({1: [13]}), split, k=5, metrics=("hit_rate@5",))
    with pytest.raises(PredictionError, match="same item more than once"):
        evaluate_split(FixedModel({1: [13, 13]}), split, k=3, metrics=("hit_rate@3",))
    with pytest.raises(ConfigError, match="'split' must be a Split"):
        evaluate_split(BiasModel(), (TRAIN, TEST))
    with pytest.raises(ConfigError, match="Unknown metric 'ndgc@3'"):
        evaluate_split(BiasModel(), split, metrics=("ndgc@3",))


def test_evaluate_split_verbose_prints_tables(capsys):
    split = temporal_user_split(random_ratings(np.random.default_rng(2)), 0.2)
    evaluate_split(BiasModel(), split, k=3, metrics=("hit_rate@3",), verbose=True, sampled=5)
    out = capsys.readouterr().out
    assert "hit_rate@3" in out and "rmse" in out and "Leakage audit" in out
    assert "sampled hit_rate@5 (N=5)" in out and "Krichene" in out and "n_points" not in out


# -- real data ---------------------------------------------------------------------------------

def _movielens(name):
    from evaluation.data import load_source
    from tests._shared_data import shared_dataset

    return load_source(f"movielens:{shared_dataset(name)}").events


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["ml-100k", "ml-latest-small"])
def test_real_data_temporal_split_bias_and_popularity(name):
    events = _movielens(name)
    assert "rating" in events.columns
    split = temporal_user_split(events, 0.2, min_events=5)
    bias = evaluate_split(BiasModel(), split, k=10, metrics=("hit_rate@10", "ndcg@10"))
    mean = split.train["rating"].mean()
    global_rmse = float(np.sqrt(((split.test["rating"] - mean) ** 2).mean()))
    assert bias.rating_errors["rmse"] < global_rmse
    assert 0.7 < bias.rating_errors["rmse"] < 1.2
    assert bias.audit.train_events_after_user_test == 0
    assert bias.audit.train_events_after_cut > 0  # the per-user split sees the future
    pop = evaluate_split(PopularModel(), split, k=10, metrics=("hit_rate@10", "ndcg@10"),
                         audit=False)
    rnd = evaluate_split(RandomItems(), split, k=10, metrics=("hit_rate@10", "ndcg@10"),
                         audit=False)
    assert pop.metrics["hit_rate@10"] > 3 * rnd.metrics["hit_rate@10"]
    assert pop.metrics["ndcg@10"] > rnd.metrics["ndcg@10"]
    cut = global_time_split(events, quantile=0.8)
    audit = evaluate_split(BiasModel(), cut, metrics=("ndcg@10",)).to_dict()["audit"]
    assert audit["train_events_after_cut"] == 0 and not audit["has_leakage"]


def test_evaluate_split_sampled_negatives():
    from evaluation.protocols import evaluate_sampled
    from evaluation.protocols._ranking import list_scorer

    frame = random_ratings(np.random.default_rng(5), n=900, n_users=20, n_items=200)
    split = temporal_user_split(frame, 0.2)
    result = evaluate_split(BiasModel(), split, metrics=("ndcg@10",), sampled=50)
    direct = evaluate_sampled(BiasModel().train(split.train), split.test, split.train,
                              n_negatives=50)
    assert result.sampled.metrics == pytest.approx(direct.metrics)
    assert result.sampled_scorer == "score_items"
    assert "Krichene" in result.sampled.warning
    assert result.to_dict()["sampled"]["scorer"] == "score_items"
    json.dumps(result.to_dict())
    # a model without score_items is scored by list position (depth - rank; 0 when unlisted)
    preds = pd.DataFrame([[7, 3, -1], [1, 2, 3]], index=pd.Index([5, 9], name="user_id"),
                         columns=["0", "1", "2"])
    score = list_scorer(preds)
    got = score(np.array([9, 5, 4]), np.array([[3, 1, 8], [3, 7, -1], [1, 2, 3]]))
    np.testing.assert_array_equal(got, [[1, 3, 0], [2, 3, 0], [0, 0, 0]])
    with pytest.warns(UserWarning, match="no score_items"):
        listed = evaluate_split(PopularModel(), split, metrics=("ndcg@10",),
                                sampled={"n_negatives": 20, "seed": 3})
    assert listed.sampled_scorer == "top-10 list position"
    assert listed.to_dict()["sampled"]["scorer"] == "top-10 list position"
    with pytest.raises(ConfigError, match="'sampled'.*Got 'many'"):
        evaluate_split(BiasModel(), split, sampled="many")


def test_evaluate_split_on_lfm_shaped_data_with_every_split_kind():
    from evaluation.baselines import PopularityModel, RandomModel
    from evaluation.data import synthetic_tables
    from evaluation.splits import leave_last_out

    events = synthetic_tables("tiny").events
    metrics = ("hit_rate@10", "ndcg@10", "coverage@10")
    for split in (temporal_user_split(events, 0.2), global_time_split(events, quantile=0.9),
                  leave_last_out(events)):
        pop = evaluate_split(PopularityModel(top_k=10), split, metrics=metrics)
        rnd = evaluate_split(RandomModel(top_k=10), split, metrics=metrics, audit=False)
        assert pop.metrics["hit_rate@10"] > rnd.metrics["hit_rate@10"]
        assert rnd.metrics["coverage@10"] > pop.metrics["coverage@10"]
        assert pop.rating_errors is None  # play counts, no ratings
        assert "rating_errors" not in pop.to_dict()
        assert pop.split["kind"] == split.kind
        json.dumps(pop.to_dict())
    assert pop.audit.train_events_after_user_test == 0  # leave-last-out holds the latest
