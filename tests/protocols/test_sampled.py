"""The sampled-negative protocol: a hand-checked case, the sampler's guarantees, errors."""

from __future__ import annotations

import itertools
import json
from math import log2

import numpy as np
import pandas as pd
import pytest

import evaluation.protocols._sampled as sampled_module
from evaluation import evaluate_sampled
from evaluation.errors import ConfigError, PredictionError
from evaluation.protocols._sampled import SAMPLED_METRICS_WARNING, sample_negatives
from evaluation.protocols._sampled_correction import bv_table, hypergeometric_matrix

# Catalog 10..15. User 1 knows 10, 11 (train) and 12 (test): its negatives can only be 13, 14, 15.
# User 2 knows 13 (train) and 10 (test).
TRAIN = pd.DataFrame({"user_id": [1, 1, 2], "track_id": [10, 11, 13]})
TEST = pd.DataFrame({"user_id": [2, 1], "track_id": [10, 12]})
CATALOG = [10, 11, 12, 13, 14, 15]
SCORES = {10: 1.0, 11: 0.0, 12: 0.5, 13: 0.9, 14: 0.5, 15: 0.1}


def lookup_scores(user_ids, item_ids):
    return np.vectorize(SCORES.get)(item_ids).astype(float)


def test_tiny_case_by_hand():
    result = evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                              hit_ks=(1, 2, 3), ndcg_ks=(3,))
    # user 1: target 12 (0.5) vs 13 (0.9), 14 (0.5, tie -> ranks above), 15 (0.1): rank 3.
    # user 2: target 10 (1.0) beats any negative: rank 1.
    assert result.user_ids.tolist() == [1, 2]
    assert result.ranks.tolist() == [3, 1]
    assert result.metrics == pytest.approx({
        "hit_rate@1": 1 / 2, "hit_rate@2": 1 / 2, "hit_rate@3": 2 / 2,
        "ndcg@3": (1 / log2(3 + 1) + 1 / log2(1 + 1)) / 2,
    })


def test_default_report_has_hr5_hr10_ndcg10_and_the_warning():
    result = evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG)
    assert set(result.metrics) == {"hit_rate@5", "hit_rate@10", "ndcg@10"}
    summary = json.loads(json.dumps(result.to_dict()))
    assert summary["warning"] == SAMPLED_METRICS_WARNING
    assert "Krichene & Rendle" in summary["warning"] and "reorder models" in summary["warning"]
    assert summary["n_negatives"] == 3 and summary["seed"] == 42
    assert "pessimistic" in summary["tie_rule"]


def test_constant_scores_rank_last():
    result = evaluate_sampled(lambda u, items: np.zeros(items.shape), TEST, TRAIN, n_negatives=3,
                              items=CATALOG)
    assert result.ranks.tolist() == [4, 4]
    assert result.metrics["hit_rate@5"] == 1.0  # 4 candidates only: every rank is <= 5


class DotModel:
    def __init__(self, rng, n_users=60, n_items=400):
        self.user = rng.standard_normal((n_users, 4))
        self.item = rng.standard_normal((n_items, 4))

    def score_items(self, user_ids, item_ids):
        return np.einsum("bd,bnd->bn", self.user[user_ids], self.item[item_ids])


def random_frames(rng, n_users=60, n_items=400, per_user=30):
    users = np.repeat(np.arange(n_users), per_user)
    items = rng.integers(0, n_items, len(users))
    events = pd.DataFrame({"user_id": users, "track_id": items}).drop_duplicates()
    test = events.groupby("user_id").sample(n=1, random_state=0)
    return events.drop(test.index), test


def test_negatives_are_unseen_distinct_and_in_the_catalog(rng):
    train, test = random_frames(rng)
    test = pd.concat([test, test.assign(track_id=(test["track_id"] + 1) % 400)]).drop_duplicates()
    seen = set(zip(pd.concat([train, test])["user_id"], pd.concat([train, test])["track_id"],
                   strict=True))
    captured = []

    def spy(user_ids, item_ids):
        captured.append((user_ids, item_ids))
        return np.zeros(item_ids.shape)

    evaluate_sampled(spy, test, train, n_negatives=50, batch_size=17)
    catalog = set(pd.concat([train, test])["track_id"])
    for user_ids, item_ids in captured:
        assert item_ids.shape[1] == 51
        for u, row in zip(user_ids, item_ids, strict=True):
            assert (u, row[0]) in seen  # column 0 is the target
            negatives = row[1:]
            assert len(set(negatives)) == 50
            assert not any((u, i) in seen for i in negatives)
            assert set(negatives) <= catalog


def test_seeded_deterministic_and_independent_of_row_order(rng):
    train, test = random_frames(rng)
    model = DotModel(np.random.default_rng(1))
    a = evaluate_sampled(model, test, train, seed=0)
    b = evaluate_sampled(model, test.sample(frac=1, random_state=3), train, seed=0,
                         batch_size=7)
    c = evaluate_sampled(model, test, train, seed=1)
    assert a.metrics == b.metrics and (a.ranks == b.ranks).all()
    assert not (a.ranks == c.ranks).all()


def test_per_user_aggregation(rng):
    train = pd.DataFrame({"user_id": [0, 1], "track_id": [0, 1]})
    test = pd.DataFrame({"user_id": [0, 0, 1], "track_id": [2, 3, 4]})
    # items 2 and 4 score highest; 3 scores lowest
    def score(users, items):
        return np.where(np.isin(items, [2, 4]), 10.0, np.where(items == 3, -10.0, 0.0))

    items = np.arange(200)
    point = evaluate_sampled(score, test, train, n_negatives=20, items=items, hit_ks=(1,),
                             ndcg_ks=())
    user = evaluate_sampled(score, test, train, n_negatives=20, items=items, hit_ks=(1,),
                            ndcg_ks=(), aggregate="user")
    assert point.metrics["hit_rate@1"] == pytest.approx(2 / 3)
    assert user.metrics["hit_rate@1"] == pytest.approx(((1 + 0) / 2 + 1) / 2)


def test_uniform_and_popularity_weighted_frequencies():
    n_items = 20
    interacted = np.array([0 * n_items + 0])  # user 0 knows item 0
    users = np.zeros(4000, dtype=np.int64)
    uniform = sample_negatives(users, interacted, n_items, 1, seed=0)
    counts = np.bincount(uniform.ravel(), minlength=n_items)
    assert counts[0] == 0
    assert np.abs(counts[1:] / 4000 - 1 / 19).max() < 0.02
    weights = np.arange(n_items, dtype=float)  # item 1 weight 1 ... item 19 weight 19; 0 never
    weighted = sample_negatives(users, interacted, n_items, 1, seed=0, weights=weights)
    freq = np.bincount(weighted.ravel(), minlength=n_items) / 4000
    assert freq[0] == 0
    assert np.abs(freq[1:] - weights[1:] / weights.sum()).max() < 0.02


def test_popularity_weighting_in_the_protocol_skips_untrained_items(rng):
    train, test = random_frames(rng, n_items=200)
    extra = np.arange(1000, 1100)  # catalog items nobody trained on
    captured = []

    def spy(user_ids, item_ids):
        captured.append(item_ids)
        return np.zeros(item_ids.shape)

    items = np.concatenate([np.unique(pd.concat([train, test])["track_id"]), extra])
    result = evaluate_sampled(spy, test, train, n_negatives=20, weighting="popularity",
                              items=items)
    assert result.weighting == "popularity"
    assert not np.isin(np.concatenate(captured)[:, 1:], extra).any()


def test_exact_fallback_sampler(monkeypatch):
    monkeypatch.setattr(sampled_module, "_REJECTION_ROUNDS", 0)
    n_items = 30
    interacted = np.array([0 * n_items + i for i in range(0, 30, 2)] + [1 * n_items + 5])
    users = np.array([0, 1, 0, 1])
    out = sample_negatives(users, interacted, n_items, 10, seed=3)
    for u, row in zip(users, out, strict=True):
        assert len(set(row)) == 10
        assert not set(u * n_items + row) & set(interacted)
    weights = np.ones(n_items)
    weights[1] = 0
    out = sample_negatives(users, interacted, n_items, 10, seed=3, weights=weights)
    assert not (out == 1).any()


def test_errors():
    with pytest.raises(ConfigError, match=r"n_negatives=4 is more than.*users \[1\]"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=4, items=CATALOG)
    with pytest.raises(ConfigError, match="'weighting'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, weighting="pop", items=CATALOG)
    with pytest.raises(ConfigError, match="score_items"):
        evaluate_sampled(object(), TEST, TRAIN, n_negatives=3, items=CATALOG)
    with pytest.raises(ConfigError, match="lacks column"):
        evaluate_sampled(lookup_scores, TEST.rename(columns={"track_id": "item"}), TRAIN)
    with pytest.raises(ConfigError, match="outside 'items'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, items=[10, 11])
    with pytest.raises(ConfigError, match="'n_negatives'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=0, items=CATALOG)
    with pytest.raises(ConfigError, match="'aggregate'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                         aggregate="item")
    with pytest.raises(PredictionError, match="expected"):
        evaluate_sampled(lambda u, i: np.zeros(len(u)), TEST, TRAIN, n_negatives=3,
                         items=CATALOG)
    with pytest.raises(PredictionError, match="non-finite"):
        evaluate_sampled(lambda u, i: np.full(i.shape, np.nan), TEST, TRAIN, n_negatives=3,
                         items=CATALOG)


@pytest.mark.realdata
def test_ml100k_popularity_beats_random_and_is_reproducible():
    from tests._shared_data import shared_dataset

    path = shared_dataset("ml-100k") / "u.data"
    ratings = pd.read_csv(path, sep="\t", names=["user_id", "track_id", "rating", "timestamp"])
    last = ratings.sort_values(["timestamp", "track_id"]).groupby("user_id").tail(1)
    train = ratings.drop(last.index)
    counts = train["track_id"].value_counts()

    def popularity(user_ids, item_ids):
        return counts.reindex(item_ids.ravel(), fill_value=0).to_numpy().reshape(item_ids.shape)

    noise = np.random.default_rng(0)

    def random_scores(user_ids, item_ids):
        return noise.random(item_ids.shape)

    pop = evaluate_sampled(popularity, last, train, seed=7)
    again = evaluate_sampled(popularity, last, train, seed=7)
    rand = evaluate_sampled(random_scores, last, train, seed=7)
    assert pop.metrics == again.metrics
    assert len(pop.ranks) == ratings["user_id"].nunique()
    assert pop.metrics["hit_rate@10"] > 2 * rand.metrics["hit_rate@10"]
    # a random scorer ranks the target uniformly among 101 candidates: HR@10 ~ 10/101
    assert rand.metrics["hit_rate@10"] == pytest.approx(10 / 101, abs=0.04)


# -- corrected sampled metrics ----------------------------------------------------------------

def _enumerated_law(n, m):
    """P(s | r) by listing every m-subset of the n - 1 negatives (negatives 0..r-2 rank above)."""
    subsets = list(itertools.combinations(range(n - 1), m))
    law = np.zeros((n, m + 1))
    for r in range(1, n + 1):
        for subset in subsets:
            law[r - 1, sum(i < r - 1 for i in subset)] += 1 / len(subsets)
    return law


def test_hypergeometric_law_of_the_sampled_rank_matches_enumeration():
    for n, m in ((9, 4), (7, 6), (6, 1)):
        assert hypergeometric_matrix(n, m) == pytest.approx(_enumerated_law(n, m), abs=1e-12)


def test_rank_estimate_is_unbiased_for_the_full_rank():
    n, m = 9, 4
    law = _enumerated_law(n, m)
    estimate = 1 + np.arange(m + 1) * (n - 1) / m
    assert law @ estimate == pytest.approx(np.arange(1, n + 1), abs=1e-12)


@pytest.mark.parametrize("gamma", [0.0, 0.1, 1.0])
def test_bv_table_minimises_bias_squared_plus_gamma_variance(gamma, scipy_optimize):
    n, m, k = 9, 4, 3
    law = _enumerated_law(n, m)
    metric = (np.arange(1, n + 1) <= k) / np.log2(np.arange(1, n + 1) + 1.0)  # NDCG@3

    def objective(x):  # sum over full ranks of bias^2 + gamma * variance, by definition
        mean = law @ x
        return float(np.sum((mean - metric) ** 2 + gamma * (law @ x**2 - mean**2)))

    best = scipy_optimize.minimize(objective, np.zeros(m + 1), method="BFGS",
                                   options={"gtol": 1e-12})
    table = bv_table(n, m, metric, gamma)
    assert objective(table) <= best.fun + 1e-12
    assert table == pytest.approx(best.x, abs=1e-5)


def test_every_negative_sampled_makes_every_estimate_exact():
    # user 1 has exactly 3 eligible negatives: with n_negatives=3 the sampled rank is the full
    # rank (3, see the hand case), and both corrections give back the plain metric
    test = TEST[TEST["user_id"] == 1]
    for correction in ("rank", "bv"):
        result = evaluate_sampled(lookup_scores, test, TRAIN, n_negatives=3, items=CATALOG,
                                  hit_ks=(2, 3), ndcg_ks=(3,), correction=correction)
        assert result.ranks.tolist() == [3]
        assert result.corrected == pytest.approx(
            {"hit_rate@2": 0.0, "hit_rate@3": 1.0, "ndcg@3": 1 / log2(4)})


@pytest.mark.parametrize("correction", ["rank", "bv"])
def test_corrected_metrics_have_the_expected_value_of_their_estimator(correction, scipy_stats):
    # 500 users, each with 5 training items and 1 test item out of 200: n = 195 candidates.
    # Every item has a fixed score, so each target's full rank among the items its user never
    # met is known; the corrected metric must average to sum_s P(s | r) x(s) over the points,
    # with P the hypergeometric law (scipy) and x the estimator's value of sampled rank s + 1.
    rng = np.random.default_rng(4)
    n_users, n_items, m = 500, 200, 20
    known = np.array([rng.choice(n_items, 6, replace=False) for _ in range(n_users)])
    train = pd.DataFrame({"user_id": np.repeat(np.arange(n_users), 5),
                          "track_id": known[:, :5].ravel()})
    test = pd.DataFrame({"user_id": np.arange(n_users), "track_id": known[:, 5]})
    item_score = rng.permutation(n_items).astype(float)
    result = evaluate_sampled(lambda u, items: item_score[items], test, train, n_negatives=m,
                              items=np.arange(n_items), hit_ks=(10,), ndcg_ks=(10,),
                              correction=correction, seed=9)
    n = n_items - 6 + 1
    s = np.arange(m + 1)
    for name, cut in (("hit_rate@10", lambda r: (r <= 10) * 1.0),
                      ("ndcg@10", lambda r: (r <= 10) / np.log2(r + 1.0))):
        if correction == "rank":
            x = cut(1 + s * (n - 1) / m)
        else:
            x = bv_table(n, m, cut(np.arange(1, n + 1.0)), 0.1)
        expected, variance = [], []
        for user in range(n_users):
            unseen = np.setdiff1d(np.arange(n_items), known[user])
            full_rank = 1 + (item_score[unseen] > item_score[known[user, 5]]).sum()
            law = scipy_stats.hypergeom.pmf(s, n - 1, full_rank - 1, m)
            expected.append(law @ x)
            variance.append(law @ x**2 - (law @ x) ** 2)
        se = np.sqrt(np.sum(variance)) / n_users
        assert abs(result.corrected[name] - np.mean(expected)) < 4 * se + 1e-12, name


def test_correction_in_results_and_errors():
    plain = evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG)
    result = evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                              correction="bv", gamma=0.5)
    assert result.metrics == plain.metrics and "correction" not in plain.to_dict()
    summary = result.to_dict()
    assert summary["correction"] == "bv" and summary["gamma"] == 0.5
    assert summary["corrected_metrics"] == result.corrected
    frame = result.to_frame()
    assert set(frame["group"]) == {"sampled", "corrected"}
    with pytest.raises(ConfigError, match="'correction'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                         correction="mle")
    with pytest.raises(ConfigError, match="'gamma'"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                         correction="bv", gamma=1.5)
    with pytest.raises(ConfigError, match="uniformly sampled negatives"):
        evaluate_sampled(lookup_scores, TEST, TRAIN, n_negatives=3, items=CATALOG,
                         correction="rank", weighting="popularity")
