"""The ranking/rating/catalog metric library: hand-computed values, references, properties."""

from __future__ import annotations

import inspect
from math import log2, sqrt

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.errors import ConfigError
from evaluation.metrics import (
    METRICS,
    _catalog,
    _ranking,
    _rating,
    auc,
    catalog_coverage,
    evaluate_ranking,
    evaluate_ratings,
    f1_at_k,
    get_metric,
    hit_rate_at_k,
    item_popularity,
    mae,
    map_at_k,
    mrr_at_k,
    ndcg_at_k,
    nmae,
    nrmse,
    popularity_bias,
    precision_at_k,
    ranking_inputs,
    recall_at_k,
    relevance_matrix,
    rmse,
)

# --------------------------------------------------------------------------- hand-made example
# user 0: list [3, 1, 2, pad], relevant {1: gain 1, 2: gain 2}
# user 1: list [0, 0 (repeat), 1, 2], relevant {2: gain 1}
# user 2: list [4, 3, pad, pad], nothing relevant (scores 0 everywhere, still counted)
RECS = np.array([[3, 1, 2, -1], [0, 0, 1, 2], [4, 3, -1, -1]])
REL = relevance_matrix([0, 0, 1], [1, 2, 2], [1, 2, 1], shape=(3, 5))
POPULARITY = np.array([0.1, 0.2, 0.3, 0.4, 0.0])

HAND = {
    ("precision@2", "user"): (1 / 2) / 3,
    ("precision@2", "global"): 1 / (2 * 3),
    ("recall@3", "user"): (2 / 2) / 3,
    ("recall@4", "user"): (1 + 1) / 3,
    ("recall@3", "global"): 2 / 3,
    ("recall@3", "item"): (1 + 1 / 2) / 2,
    ("f1@3", "user"): (2 * (2 / 3) * 1 / (2 / 3 + 1)) / 3,
    ("f1@3", "global"): 2 * (2 / 9) * (2 / 3) / (2 / 9 + 2 / 3),
    ("hit_rate@1", "user"): 0.0,
    ("hit_rate@2", "user"): 1 / 3,
    ("hit_rate@3", "global"): 2 / 3,
    ("hit_rate@4", "item"): (1 + 1) / 2,
    ("mrr@4", "user"): (1 / 2 + 1 / 4) / 3,
    ("mrr@4", "global"): (1 / 2 + 1 / 3 + 1 / 4) / 3,
    ("mrr@4", "item"): (1 / 2 + (1 / 3 + 1 / 4) / 2) / 2,
    ("ndcg@3", "user"): ((1 / log2(3) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3))) / 3,
    ("ndcg@4", "user"): (
        (1 / log2(3) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3)) + (1 / log2(5)) / 1
    ) / 3,
    ("map@3", "user"): ((1 / 2 + 2 / 3) / 2) / 3,
    ("map@4", "user"): ((1 / 2 + 2 / 3) / 2 + (1 / 4) / 1) / 3,
    # AUC: u0 has 3 negatives, one listed above both positives; u1 has 4 negatives, two listed
    # above its positive; u2 has no positive (0).
    ("auc", "user"): ((2 / 3 + 2 / 3) / 2 + 2 / 4 + 0) / 3,
    ("auc", "global"): (2 / 3 + 2 / 3 + 2 / 4) / 3,
    ("auc", "item"): (2 / 3 + (2 / 3 + 2 / 4) / 2) / 2,
    # auc@2: unlisted positives tie with the unlisted negatives (1/2 each).
    ("auc@2", "user"): ((2 / 3 + (3 - 1 - 2 / 2) / 3) / 2 + (4 - 1 - 3 / 2) / 4 + 0) / 3,
}


@pytest.mark.parametrize(("name", "aggregate"), list(HAND))
def test_hand_computed_ranking_values(name, aggregate):
    metric = get_metric(name)
    assert metric(RECS, REL, aggregate=aggregate) == pytest.approx(HAND[(name, aggregate)])


def test_ndcg_gain_variants_by_hand():
    exp = (1 / log2(3) + 3 / log2(4)) / (3 / log2(2) + 1 / log2(3))
    binary = (1 / log2(3) + 1 / log2(4)) / (1 / log2(2) + 1 / log2(3))
    assert ndcg_at_k(RECS, REL, 3, gain="exp") == pytest.approx(exp / 3)
    assert ndcg_at_k(RECS, REL, 3, gain="binary") == pytest.approx(binary / 3)
    assert get_metric("ndcg@3", gain="exp")(RECS, REL) == pytest.approx(exp / 3)


def test_ndcg_ideal_ranking_counts_relevant_items_not_recommended():
    # one relevant item listed first, two more relevant never listed: IDCG over all three.
    rel = relevance_matrix([0, 0, 0], [0, 1, 2], shape=(1, 6))
    value = ndcg_at_k(np.array([[0, 5, 4]]), rel, 3)
    assert value == pytest.approx(1 / (1 + 1 / log2(3) + 1 / log2(4)))


def test_map_denominator_is_min_of_k_and_relevant_count():
    rel = relevance_matrix([0] * 5, [0, 1, 2, 3, 4], shape=(1, 10))
    # perfect top-2 for a user with 5 relevant items: AP@2 = (1 + 1) / min(2, 5) = 1
    assert map_at_k(np.array([[0, 1]]), rel, 2) == pytest.approx(1.0)
    # one hit at rank 2 of 3 for a user with 1 relevant item: (1/2) / min(3, 1)
    rel1 = relevance_matrix([0], [7], shape=(1, 10))
    assert map_at_k(np.array([[0, 7, 1]]), rel1, 3) == pytest.approx(1 / 2)


def test_catalog_metrics_by_hand():
    assert catalog_coverage(RECS, 5, 2) == pytest.approx(4 / 5)
    assert catalog_coverage(RECS, 5) == pytest.approx(5 / 5)
    assert get_metric("coverage@2")(RECS, n_items=5) == pytest.approx(4 / 5)
    # per user: u0 (0.4 + 0.2) / 2, u1 0.1 (the repeat counts once), u2 (0.0 + 0.4) / 2
    assert popularity_bias(RECS, POPULARITY, 2) == pytest.approx((0.3 + 0.1 + 0.2) / 3)
    assert popularity_bias(RECS, POPULARITY, 2, aggregate="global") == pytest.approx(1.1 / 5)
    assert get_metric("arp@2")(RECS, POPULARITY) == pytest.approx((0.3 + 0.1 + 0.2) / 3)
    assert item_popularity([0, 0, 3], 5).tolist() == [2 / 3, 0, 0, 1 / 3, 0]
    assert item_popularity([0, 0, 3], 5, normalize=False).tolist() == [2, 0, 0, 1, 0]


Y_TRUE = np.array([4.0, 3.0, 5.0, 1.0])
Y_PRED = np.array([3.5, 3.0, 4.0, 2.0])
USERS = np.array([0, 0, 1, 1])
ITEMS = np.array([7, 8, 7, 9])


def test_rating_errors_by_hand():
    assert rmse(Y_TRUE, Y_PRED) == pytest.approx(sqrt((0.25 + 0 + 1 + 1) / 4))
    assert mae(Y_TRUE, Y_PRED) == pytest.approx((0.5 + 0 + 1 + 1) / 4)
    assert rmse(Y_TRUE, Y_PRED, users=USERS, aggregate="user") == pytest.approx(
        (sqrt(0.25 / 2) + sqrt(2 / 2)) / 2
    )
    assert mae(Y_TRUE, Y_PRED, items=ITEMS, aggregate="item") == pytest.approx(
        ((0.5 + 1) / 2 + 0 + 1) / 3
    )
    # range defaults to max - min of y_true = 5 - 1
    assert nrmse(Y_TRUE, Y_PRED) == pytest.approx(0.75 / 4)
    assert nmae(Y_TRUE, Y_PRED) == pytest.approx(0.625 / 4)
    assert nmae(Y_TRUE, Y_PRED, rating_range=(0.5, 5)) == pytest.approx(0.625 / 4.5)
    out = evaluate_ratings(Y_TRUE, Y_PRED)
    assert out == pytest.approx({"rmse": 0.75, "mae": 0.625, "nrmse": 0.75 / 4, "nmae": 0.625 / 4})


# --------------------------------------------------------------------------- slow references
def _reference(recs, rel_dense, k, n_candidates=None):
    """Per-user loops straight from the definitions (documented conventions included)."""
    out = {name: [] for name in ("precision", "recall", "f1", "hit_rate", "mrr", "ndcg", "map",
                                 "auc")}
    for u in range(len(recs)):
        seen, ranked = set(), []
        for item in list(recs[u][:k]) + [-1] * max(0, k - recs.shape[1]):
            if item >= 0 and item not in seen:
                seen.add(item)
                ranked.append(item)
            else:
                ranked.append(None)
        gains = rel_dense[u]
        relevant = {i for i in range(len(gains)) if gains[i] > 0}
        hits = [i is not None and i in relevant for i in ranked]
        n_hits = sum(hits)
        p = n_hits / k
        r = n_hits / len(relevant) if relevant else 0.0
        out["precision"].append(p)
        out["recall"].append(r)
        out["f1"].append(2 * p * r / (p + r) if p + r else 0.0)
        out["hit_rate"].append(float(n_hits > 0))
        out["mrr"].append(next((1 / (j + 1) for j, h in enumerate(hits) if h), 0.0))
        dcg = sum(gains[i] / log2(j + 2) for j, i in enumerate(ranked) if i is not None)
        ideal = sorted(gains[list(relevant)], reverse=True)[:k]
        idcg = sum(g / log2(j + 2) for j, g in enumerate(ideal))
        out["ndcg"].append(dcg / idcg if idcg else 0.0)
        precisions = [sum(hits[: j + 1]) / (j + 1) for j in range(k) if hits[j]]
        out["map"].append(sum(precisions) / min(k, len(relevant)) if relevant else 0.0)
        n_cand = len(gains) if n_candidates is None else n_candidates
        negatives = n_cand - len(relevant)
        listed = [i for i in ranked if i is not None]
        if relevant and negatives > 0:
            total = 0.0
            for pos in relevant:
                if pos in listed:
                    above = sum(1 for i in listed[: listed.index(pos)] if i not in relevant)
                    total += (negatives - above) / negatives
                else:
                    listed_neg = sum(1 for i in listed if i not in relevant)
                    total += 0.5 * (negatives - listed_neg) / negatives
            out["auc"].append(total / len(relevant))
        else:
            out["auc"].append(0.0)
    return {name: float(np.mean(v)) for name, v in out.items()}


def _random_case(rng, n_users=40, n_items=30, depth=8, graded=True):
    recs = rng.integers(-1, n_items, size=(n_users, depth))
    recs[rng.random((n_users, depth)) < 0.1] = -1
    mask = rng.random((n_users, n_items)) < 0.15
    gains = rng.integers(1, 5, size=(n_users, n_items)) if graded else np.ones((n_users, n_items))
    dense = np.where(mask, gains, 0).astype(float)
    return recs, sp.csr_array(dense), dense


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 5, 8, 11])
def test_fast_kernels_equal_the_slow_reference(seed, k):
    recs, rel, dense = _random_case(np.random.default_rng(seed))
    expected = _reference(recs, dense, k)
    got = evaluate_ranking(
        recs, rel, [f"{m}@{k}" for m in ("precision", "recall", "f1", "hit_rate", "mrr", "ndcg",
                                         "map", "auc")]
    )
    assert {name.split("@")[0]: v for name, v in got.items()} == pytest.approx(expected)


def test_auc_with_a_candidate_set_equals_the_reference(rng):
    recs, rel, dense = _random_case(rng, n_items=30)
    assert auc(recs, rel, n_candidates=45) == pytest.approx(
        _reference(recs, dense, recs.shape[1], n_candidates=45)["auc"]
    )


def _distinct_lists(rng, n_users, n_items, k):
    return np.argsort(rng.random((n_users, n_items)), axis=1)[:, :k]


def _scores_from_lists(recs, n_items):
    scores = np.zeros((len(recs), n_items))
    np.put_along_axis(scores, recs, np.arange(recs.shape[1], 0, -1, dtype=float), axis=1)
    return scores


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ndcg_equals_scikit_learn(rng, k, sklearn_metrics):
    n_users, n_items = 50, 25
    graded = rng.integers(1, 4, (n_users, n_items))
    dense = np.where(rng.random((n_users, n_items)) < 0.2, graded, 0)
    dense[np.arange(n_users), rng.integers(0, n_items, n_users)] = 2  # everyone has a relevant item
    recs = _distinct_lists(rng, n_users, n_items, 12)
    # scikit-learn's gains are linear; distinct scores on the listed items, so its tie averaging
    # only ever concerns unlisted items below the cutoff.
    expected = sklearn_metrics.ndcg_score(dense, _scores_from_lists(recs, n_items), k=k)
    assert ndcg_at_k(recs, sp.csr_array(dense.astype(float)), k) == pytest.approx(expected)


def test_auc_equals_scikit_learn_per_user(rng, sklearn_metrics):
    n_users, n_items = 30, 40
    dense = (rng.random((n_users, n_items)) < 0.2).astype(float)
    dense[:, 0] = 1.0  # one positive and
    dense[:, 1] = 0.0  # one negative per user at least
    recs = _distinct_lists(rng, n_users, n_items, 10)  # unlisted items tie at score 0
    scores = _scores_from_lists(recs, n_items)
    expected = np.mean([sklearn_metrics.roc_auc_score(dense[u], scores[u])
                        for u in range(n_users)])
    assert auc(recs, sp.csr_array(dense)) == pytest.approx(expected)


def test_precision_recall_equal_scikit_learn_per_user(rng, sklearn_metrics):
    n_users, n_items, k = 30, 20, 5
    dense = (rng.random((n_users, n_items)) < 0.3).astype(float)
    dense[:, 0] = 1.0
    recs = _distinct_lists(rng, n_users, n_items, k)
    predicted = np.zeros((n_users, n_items), dtype=int)
    np.put_along_axis(predicted, recs, 1, axis=1)
    p = np.mean([sklearn_metrics.precision_score(dense[u], predicted[u]) for u in range(n_users)])
    r = np.mean([sklearn_metrics.recall_score(dense[u], predicted[u]) for u in range(n_users)])
    rel = sp.csr_array(dense)
    assert precision_at_k(recs, rel, k) == pytest.approx(p)
    assert recall_at_k(recs, rel, k) == pytest.approx(r)


def test_rating_errors_equal_scikit_learn(rng, sklearn_metrics):
    mean_squared_error = sklearn_metrics.mean_squared_error
    y_true = rng.integers(1, 6, 500).astype(float)
    y_pred = y_true + rng.normal(0, 1, 500)
    assert rmse(y_true, y_pred) == pytest.approx(sqrt(mean_squared_error(y_true, y_pred)))
    assert mae(y_true, y_pred) == pytest.approx(sklearn_metrics.mean_absolute_error(y_true, y_pred))
    users = rng.integers(0, 20, 500)
    per_user = [sqrt(mean_squared_error(y_true[users == u], y_pred[users == u]))
                for u in np.unique(users)]
    assert rmse(y_true, y_pred, users=users, aggregate="user") == pytest.approx(np.mean(per_user))


# --------------------------------------------------------------------------- properties
RANKING_NAMES = ["precision@5", "recall@5", "f1@5", "hit_rate@5", "mrr@5", "ndcg@5", "map@5",
                 "auc"]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_bounds_and_user_permutation_invariance(seed):
    rng = np.random.default_rng(seed)
    recs, rel, dense = _random_case(rng, n_users=int(rng.integers(1, 15)),
                                    n_items=int(rng.integers(2, 12)), depth=6)
    base = evaluate_ranking(recs, rel, RANKING_NAMES)
    perm = rng.permutation(len(recs))
    permuted = evaluate_ranking(recs[perm], sp.csr_array(dense[perm]), RANKING_NAMES)
    assert permuted == pytest.approx(base)
    # relabelling the items consistently changes nothing either
    relabel = rng.permutation(dense.shape[1])
    recs2 = np.where(recs >= 0, relabel[np.maximum(recs, 0)], -1)
    dense2 = np.zeros_like(dense)
    dense2[:, relabel] = dense
    assert evaluate_ranking(recs2, sp.csr_array(dense2), RANKING_NAMES) == pytest.approx(base)
    for name, value in base.items():
        assert 0.0 <= value <= 1.0 + 1e-12, name
    for aggregate in ("global", "item"):
        for name in ("recall@5", "hit_rate@5", "mrr@5", "auc"):
            assert 0.0 <= get_metric(name)(recs, rel, aggregate=aggregate) <= 1.0


def test_perfect_lists_score_one():
    rel = relevance_matrix([0, 0, 1], [2, 4, 3], shape=(2, 6))
    recs = np.array([[2, 4, 0], [3, 1, 0]])
    for name in ("recall@3", "hit_rate@3", "mrr@3", "ndcg@3", "map@3", "auc"):
        assert get_metric(name)(recs, rel) == pytest.approx(1.0), name


def test_single_target_global_equals_per_user(rng):
    recs = _distinct_lists(rng, 60, 30, 10)
    rel = relevance_matrix(np.arange(60), rng.integers(0, 30, 60), shape=(60, 30))
    for name in ("hit_rate@10", "mrr@10", "recall@10", "auc"):
        metric = get_metric(name)
        assert metric(recs, rel, aggregate="global") == pytest.approx(metric(recs, rel))


# --------------------------------------------------------------------------- registry
def test_registry_is_complete():
    kernels = set()
    for module in (_ranking, _catalog, _rating):
        for name, obj in vars(module).items():
            own = inspect.isfunction(obj) and obj.__module__ == module.__name__
            if own and not name.startswith("_"):
                kernels.add(obj)
    kernels.discard(_catalog.item_popularity)  # a helper that builds an input, not a metric
    registered = {spec.function for spec in METRICS.values()}
    assert kernels == registered
    tested = {name.split("@")[0] for name, _ in HAND} | {"coverage", "popularity_bias", "rmse",
                                                          "mae", "nrmse", "nmae"}
    assert tested == set(METRICS)


@pytest.mark.parametrize("base", sorted(METRICS))
def test_every_registered_name_resolves(base):
    spec = METRICS[base]
    name = f"{base}@10" if spec.needs_k else base
    metric = get_metric(name.upper())
    assert metric.name == name and metric.family == spec.family
    assert metric.spec.aggregations


def test_aliases_and_labels():
    assert get_metric("HR@10").name == "hit_rate@10"
    assert get_metric(" ndcg @ 5 ").k == 5
    assert get_metric("auc@3").k == 3 and get_metric("auc").k is None


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("ndcg", "needs a cutoff"),
        ("rmse@10", "takes no cutoff"),
        ("ndgc@10", "Unknown metric 'ndgc@10'"),
        ("ndcg@0", "must be >= 1"),
        ("precision@-1", "Unknown metric"),
    ],
)
def test_bad_metric_names(name, match):
    with pytest.raises(ConfigError, match=match):
        get_metric(name)


def test_bad_options_and_non_string_names():
    with pytest.raises(ConfigError, match="has no option"):
        get_metric("precision@5", gain="exp")
    with pytest.raises(ConfigError, match=r"'gain' parameter of ndcg@5 must be one of "
                                          r"\['linear', 'exp', 'binary'\]\. Got 'log'"):
        get_metric("ndcg@5", gain="log")
    with pytest.raises(ConfigError, match="must be a string"):
        get_metric(10)


@pytest.mark.parametrize(
    ("name", "aggregate"),
    [("precision@5", "item"), ("f1@5", "item"), ("ndcg@5", "global"), ("ndcg@5", "item"),
     ("map@5", "global"), ("map@5", "item"), ("precision@5", "users")],
)
def test_meaningless_aggregations_raise(name, aggregate):
    with pytest.raises(ConfigError, match="aggregate"):
        get_metric(name)(RECS, REL, aggregate=aggregate)


def test_meaningless_catalog_and_rating_aggregations_raise():
    with pytest.raises(ConfigError, match="cannot be aggregated 'user'"):
        catalog_coverage(RECS, 5, aggregate="user")
    with pytest.raises(ConfigError, match="cannot be aggregated 'item'"):
        popularity_bias(RECS, POPULARITY, aggregate="item")
    with pytest.raises(ConfigError, match="needs 'users'"):
        rmse(Y_TRUE, Y_PRED, aggregate="user")


def test_evaluate_helpers_reject_the_wrong_family():
    with pytest.raises(ConfigError, match="rating errors"):
        evaluate_ranking(RECS, REL, ["rmse"])
    with pytest.raises(ConfigError, match="not a rating error"):
        evaluate_ratings(Y_TRUE, Y_PRED, ["ndcg@3"])
    with pytest.raises(ConfigError, match="popularity"):
        evaluate_ranking(RECS, REL, ["popularity_bias@2"])


def test_evaluate_ranking_equals_the_single_metrics():
    names = ["precision@2", "recall@3", "ndcg@4", "map@3", "auc", "auc@2", "coverage@2",
             "popularity_bias@2"]
    out = evaluate_ranking(RECS, REL, names, popularity=POPULARITY)
    assert out["ndcg@4"] == pytest.approx(HAND[("ndcg@4", "user")])
    assert out["auc@2"] == pytest.approx(HAND[("auc@2", "user")])
    assert out["coverage@2"] == pytest.approx(4 / 5)
    assert out["precision@2"] == pytest.approx(precision_at_k(RECS, REL, 2))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("recs", "rel", "match"),
    [
        (np.array([1, 2]), REL, "2-D integer array"),
        (np.array([[1.5, 2.0]] * 3), REL, "2-D integer array"),
        (np.array([[1, -2]] * 3), REL, "-1 for padding"),
        (RECS[:2], REL, "has 3 rows but 'recs' has 2"),
        (np.array([[9, 0]] * 3), REL, "beyond the 5 columns"),
        (RECS, REL.toarray(), "scipy.sparse"),
        (RECS, sp.csr_array(-REL.toarray()), ">= 0"),
    ],
)
def test_bad_ranking_inputs(recs, rel, match):
    with pytest.raises(ConfigError, match=match):
        precision_at_k(recs, rel, 2)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "5"])
def test_bad_k(k):
    with pytest.raises(ConfigError, match="'k' parameter"):
        ndcg_at_k(RECS, REL, k)


def test_bad_rating_inputs():
    with pytest.raises(ConfigError, match="same length"):
        rmse([1, 2], [1])
    with pytest.raises(ConfigError, match="finite"):
        mae([1, np.nan], [1, 2])
    with pytest.raises(ConfigError, match="at least one"):
        rmse([], [])
    with pytest.raises(ConfigError, match="rating range"):
        nrmse([3, 3], [2, 3])


def test_relevance_matrix_threshold_duplicates_and_errors():
    rel = relevance_matrix([0, 0, 1, 1], [0, 1, 0, 0], [4, 2, 3, 5], shape=(2, 3), threshold=3)
    assert rel.toarray().tolist() == [[4, 0, 0], [5, 0, 0]]  # below threshold dropped; max kept
    assert relevance_matrix([0], [1], [5], binary=True).toarray().tolist() == [[0, 1]]
    with pytest.raises(ConfigError, match="same length"):
        relevance_matrix([0, 1], [0])
    with pytest.raises(ConfigError, match="integer indices"):
        relevance_matrix([0.5], [0])
    with pytest.raises(ConfigError, match="inside shape"):
        relevance_matrix([0], [3], shape=(1, 3))
    with pytest.raises(ConfigError, match="'gains' must be >= 0"):
        relevance_matrix([0], [0], [-1])


def test_ranking_inputs_maps_ids_and_fills_missing_users():
    predictions = pd.DataFrame(
        [[30, 10, -1], [20, 10, 99]], index=pd.Index([7, 5], name="user_id"),
        columns=["0", "1", "2"],
    )
    test = pd.DataFrame({"user_id": [5, 7, 9], "track_id": [10, 20, 30],
                         "rating": [5.0, 4.0, 2.0]})
    inputs = ranking_inputs(predictions, test, gain_col="rating", threshold=3)
    assert inputs.user_ids.tolist() == [5, 7, 9]
    assert inputs.item_ids.tolist() == [10, 20, 30, 99]
    assert inputs.recs.tolist() == [[1, 0, 3], [2, 0, -1], [-1, -1, -1]]
    assert inputs.relevance.toarray().tolist() == [[5, 0, 0, 0], [0, 4, 0, 0], [0, 0, 0, 0]]
    # user 5: item 10 at rank 2; user 7: item 20 not listed; user 9: nothing relevant
    assert recall_at_k(inputs.recs, inputs.relevance, 3) == pytest.approx(1 / 3)
    with pytest.raises(ConfigError, match="no column 'rating'"):
        ranking_inputs(predictions, test.drop(columns="rating"), gain_col="rating")


def test_other_kernels_accept_the_precomputed_judgement():
    from evaluation.metrics import judge

    judged = judge(RECS, REL, 4)
    assert hit_rate_at_k(judged, None, 2) == pytest.approx(HAND[("hit_rate@2", "user")])
    assert mrr_at_k(judged, None, 4) == pytest.approx(HAND[("mrr@4", "user")])
    assert f1_at_k(judged, None, 3) == pytest.approx(HAND[("f1@3", "user")])
    with pytest.raises(ConfigError, match="deeper than"):
        map_at_k(judged, None, 5)


# --------------------------------------------------------------------------- real data
@pytest.mark.realdata
def test_ml100k_popularity_lists_against_the_slow_reference():
    from tests._shared_data import shared_dataset

    path = shared_dataset("ml-100k") / "u.data"
    ratings = pd.read_csv(path, sep="\t", names=["user_id", "track_id", "rating", "timestamp"])
    # last 20% of each user's ratings by time are the test set; relevant = rating >= 4
    ratings = ratings.sort_values(["user_id", "timestamp", "track_id"])
    position = ratings.groupby("user_id").cumcount()
    size = ratings.groupby("user_id")["track_id"].transform("size")
    test_mask = position >= (size * 0.8).astype(int)
    train, test = ratings[~test_mask], ratings[test_mask]
    popular = train["track_id"].value_counts().index.to_numpy()[:50]
    users = np.unique(test["user_id"])
    predictions = pd.DataFrame(np.tile(popular[:20], (len(users), 1)),
                               index=pd.Index(users, name="user_id"),
                               columns=[str(i) for i in range(20)])
    items = np.unique(ratings["track_id"])
    inputs = ranking_inputs(predictions, test, gain_col="rating", threshold=4, items=items)
    names = [f"{m}@10" for m in ("precision", "recall", "f1", "hit_rate", "mrr", "ndcg", "map")]
    full = evaluate_ranking(inputs.recs, inputs.relevance, names + ["auc@10"])
    assert 0 < full["precision@10"] < 1 and 0 < full["auc@10"] < 1
    # the slow reference on every fourth user (it loops over the whole catalog per user)
    rows = np.arange(0, len(users), 4)
    sub = inputs.relevance[rows]
    expected = _reference(inputs.recs[rows], sub.toarray(), 10)
    got = evaluate_ranking(inputs.recs[rows], sub, names + ["auc@10"])
    assert {n.split("@")[0]: v for n, v in got.items()} == pytest.approx(expected)
