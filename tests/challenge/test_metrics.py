"""Challenge test kernels: hand-computed values, reclist's standard_metrics, slow references."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.challenge import (
    COUNTRIES,
    ChallengeFold,
    SliceMissRates,
    being_less_wrong,
    being_less_wrong_scores,
    bin_by_edges,
    hit_ranks,
    latent_diversity,
    latent_diversity_scores,
    miss_rate_equality_difference,
    mred_from_codes,
    sum_by_key,
)
from evaluation.data import TrackVectors
from evaluation.errors import DataError, ScoringWarning
from evaluation.metrics import hit_rate_from_ranks, mrr_from_ranks

# --------------------------------------------------------------------------- hit ranks


def test_hit_ranks_by_hand():
    preds = np.array([
        [5, 6, 7],     # target 6 at rank 2
        [5, 6, 7],     # target 9 absent
        [9, 9, 3],     # duplicated target counts at its first (best) rank
        [-1, -1, -1],  # padding never hits ...
        [4, -1, -1],
    ])
    targets = np.array([6, 9, 9, -1, 4])  # ... not even a target of -1
    assert hit_ranks(preds, targets).tolist() == [2, 0, 1, 0, 1]
    assert hit_ranks(preds, targets, k=1).tolist() == [0, 0, 1, 0, 1]


def test_hit_rate_and_mrr_by_hand():
    ranks = np.array([2, 0, 1, 0, 4])
    assert hit_rate_from_ranks(ranks) == pytest.approx(3 / 5)
    assert mrr_from_ranks(ranks) == pytest.approx((1 / 2 + 1 + 1 / 4) / 5)
    assert hit_rate_from_ranks(np.array([], dtype=int)) == 0.0


def test_hit_ranks_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="shape"):
        hit_ranks(np.zeros((3, 2)), np.zeros(2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hr_mrr_misses_equal_reclist_standard_metrics(seed, reclist_metrics):
    sm = reclist_metrics
    rng = np.random.default_rng(seed)
    n_users, k, n_items = 400, 20, 60
    # rows without duplicates: a random permutation prefix per user
    preds = np.argsort(rng.random((n_users, n_items)), axis=1)[:, :k]
    targets = rng.integers(0, n_items, n_users)
    y_pred, y_test = pd.DataFrame(preds), pd.DataFrame(targets[:, None])
    ranks = hit_ranks(preds, targets)
    for cut in (1, 5, k):
        r = hit_ranks(preds, targets, k=cut)
        assert hit_rate_from_ranks(r) == pytest.approx(sm.hit_rate_at_k(y_pred, y_test, cut),
                                                       rel=1e-12)
        assert mrr_from_ranks(r) == pytest.approx(sm.mrr_at_k(y_pred, y_test, cut), rel=1e-12)
    missed = sm.misses_at_k(y_pred, y_test, k).min(axis=2)[:, 0]
    np.testing.assert_array_equal(ranks == 0, missed)


# --------------------------------------------------------------------------- MRED


def test_mred_by_hand():
    # group a: 1 miss of 2, group b: 2 misses of 2, last user in no group
    missed = np.array([True, False, True, True, False])
    res = miss_rate_equality_difference(missed, ["a", "a", "b", "b", None])
    mr = 3 / 5
    assert res.miss_rate == pytest.approx(mr)
    assert dict(res) == pytest.approx({"a": 0.5, "b": 1.0})
    assert res.value == pytest.approx(-(abs(0.5 - mr) + abs(1.0 - mr)) / 2)
    assert res.counts == {"a": 2, "b": 2}
    assert res.n_users == 5 and res.n_ungrouped == 1
    assert float(res) == res.value


def test_mred_considered_mask_leaves_users_out_of_mr_and_groups():
    missed = np.array([True, False, True, False])
    res = miss_rate_equality_difference(missed, ["a", "a", "b", "b"],
                                        considered=np.array([True, True, True, False]))
    assert res.miss_rate == pytest.approx(2 / 3)
    assert dict(res) == pytest.approx({"a": 0.5, "b": 1.0})
    assert res.value == pytest.approx(-(abs(0.5 - 2 / 3) + abs(1 - 2 / 3)) / 2)


def test_mred_single_group_and_categorical_order():
    res = miss_rate_equality_difference(np.array([True, False]), ["x", "x"])
    assert res.value == 0.0 and not math.copysign(1, res.value) < 0  # no "-0.0"
    cat = pd.Categorical(["b", "a", "b"], categories=["b", "a", "c"])
    res = miss_rate_equality_difference(np.array([True, False, False]), cat)
    assert list(res) == ["b", "a"]  # category order; empty group "c" not part of the mean


def test_mred_empty_slice_is_zero_and_warns():
    with pytest.warns(ScoringWarning, match="no test user"):
        res = mred_from_codes(np.array([True]), np.array([0]), ["a"], np.array([False]))
    assert res.value == 0.0 and res.n_users == 0 and dict(res) == {}


def slow_mred(missed, labels, considered):
    """Per-user reference: the definition of design §4 written out with dicts."""
    users = [i for i in range(len(missed)) if considered[i]]
    if not users:
        return 0.0, {}
    mr = sum(missed[i] for i in users) / len(users)
    groups: dict = {}
    for i in users:
        if labels[i] is not None:
            groups.setdefault(labels[i], []).append(missed[i])
    rates = {g: sum(v) / len(v) for g, v in groups.items()}
    if not rates:
        return 0.0, rates
    return -sum(abs(r - mr) for r in rates.values()) / len(rates), rates


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["a", "b", "c", None]), st.booleans()),
                min_size=1, max_size=40))
def test_mred_equals_slow_reference(rows):
    missed = np.array([r[0] for r in rows])
    labels = [r[1] for r in rows]
    considered = np.array([r[2] for r in rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScoringWarning)
        res = miss_rate_equality_difference(missed, labels, considered=considered)
    value, rates = slow_mred(missed.tolist(), labels, considered.tolist())
    assert res.value == pytest.approx(value, abs=1e-12)
    assert dict(res) == pytest.approx(rates)


def test_bin_by_edges_lower_edge():
    codes, labels = bin_by_edges([0, 1, 99, 100, 999, 1000, 10**6], [1, 100, 1000])
    assert labels == ("0", "1", "100", "1000")
    assert [labels[c] for c in codes] == ["0", "1", "1", "100", "100", "1000", "1000"]


def test_sum_by_key_dense_and_sparse_paths():
    keys = np.array([3, 1, 3, 7])
    w = np.array([2, 5, 4, 1])
    assert sum_by_key(keys, w, [3, 1, 7, 0, -1, 99]).tolist() == [6, 5, 1, 0, 0, 0]
    big = keys * 10**12  # too sparse for a dense table
    assert sum_by_key(big, w, [3 * 10**12, 5]).tolist() == [6, 0]
    assert sum_by_key(np.array([], int), np.array([], int), [1]).tolist() == [0]


def slow_sums(keys, weights, query) -> list[int]:
    """Each queried key's sum, one key at a time in Python integers."""
    return [sum(int(w) for k, w in zip(keys.tolist(), weights.tolist()) if k == q)
            for q in np.asarray(query).tolist()]


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16])
def test_sum_by_key_over_ascending_keys_equals_a_slow_sum(monkeypatch, chunk, dtype):
    # ascending keys (a training set in the events' order) are summed run by run, in
    # pieces of whole runs: pieces of one row, of a few rows, and the whole array
    import evaluation.challenge._counts as counts_module

    monkeypatch.setattr(counts_module, "_SUM_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    keys = np.sort(rng.integers(-3, 40, 500))
    weights = rng.integers(0, 1000, 500).astype(dtype)
    query = np.array([39, -3, 7, -4, 41, 5, 5, 0])
    assert sum_by_key(keys, weights, query).tolist() == slow_sums(keys, weights, query)
    # the same rows shuffled go through the general path: the same sums
    order = rng.permutation(500)
    assert sum_by_key(keys[order], weights[order], query).tolist() == \
        slow_sums(keys, weights, query)
    one_run = np.full(7, 4)
    assert sum_by_key(one_run, weights[:7], [4, 3]).tolist() == \
        [int(weights[:7].astype(np.int64).sum()), 0]


def test_sum_by_key_over_ascending_keys_refuses_sums_beyond_exact_floats():
    # 2**21 + 1 rows of the largest uint32: one key's plays sum past 2**53
    weights = np.full(2**21 + 1, np.iinfo(np.uint32).max, dtype=np.uint32)
    keys = np.zeros(len(weights), dtype=np.int32)
    with pytest.raises(DataError, match=r"2\*\*53"):
        sum_by_key(keys, weights, [0], name="plays")
    # 64-bit counts take the general path: the same refusal
    with pytest.raises(DataError, match=r"2\*\*53"):
        sum_by_key(keys, weights.astype(np.int64), [0], name="plays")


# --------------------------------------------------------------------------- vector tests


def vectors_2d():
    # track 1: (1, 0); 2: (0, 1); 3: (1, 1); 4: (-1, 0); 5: zero vector; track 9 has none
    return TrackVectors(np.array([5, 4, 3, 2, 1]),
                        np.array([[0, 0], [-1, 0], [1, 1], [0, 1], [1, 0]], dtype=np.float32))


def test_being_less_wrong_by_hand():
    vecs = vectors_2d()
    preds = np.array([
        [2, 4],   # miss, target 1: cos((1,0), (0,1)) = 0
        [3, 2],   # miss, target 1: cos((1,0), (1,1)) = 1/sqrt(2)
        [1, 2],   # hit: left out
        [-1, 2],  # miss, first prediction is padding: 0
        [9, 2],   # miss, first prediction has no vector: 0
        [2, 3],   # miss, target 9 has no vector: left out
        [4, 2],   # miss, target 1: cos = -1
    ])
    targets = np.array([1, 1, 1, 1, 1, 9, 1])
    expected = (0 + 1 / math.sqrt(2) + 0 + 0 - 1) / 5
    assert being_less_wrong(preds, targets, vecs) == pytest.approx(expected)
    per_user = being_less_wrong_scores(preds, targets, vecs)
    np.testing.assert_allclose(per_user, [0, 1 / math.sqrt(2), np.nan, 0, 0, np.nan, -1])


def test_being_less_wrong_edge_cases():
    vecs = vectors_2d()
    # nobody missed: never wrong
    assert being_less_wrong(np.array([[1, 2]]), np.array([1]), vecs) == 1.0
    # misses, but no missed target has a vector
    with pytest.warns(ScoringWarning, match="BEING_LESS_WRONG"):
        assert being_less_wrong(np.array([[1, 2]]), np.array([9]), vecs) == 0.0
    # zero vector: cosine counts as 0
    assert being_less_wrong(np.array([[5, 2]]), np.array([1]), vecs) == 0.0


def test_latent_diversity_by_hand():
    vecs = vectors_2d()
    c = 1 / math.sqrt(2)
    preds = np.array([
        [1, 2, -1],   # m = (.5, .5): cos(m, v_i) = c for both; target 1: bias = 1 - c
        [9, -1, -1],  # no usable prediction: -0.7
        [1, 9, 4],    # m = 0 (1 and 4 cancel): cosines 0; diversity 1, bias 1
        [1, 2, 3],    # target 9 has no vector: left out
    ])
    targets = np.array([1, 1, 2, 9])
    scores = latent_diversity_scores(preds, targets, vecs)
    assert scores[0] == pytest.approx(0.3 * (1 - c) - 0.7 * (1 - c))
    assert scores[1] == pytest.approx(-0.7)
    assert scores[2] == pytest.approx(0.3 - 0.7)
    assert np.isnan(scores[3])
    assert latent_diversity(preds, targets, vecs) == pytest.approx(np.mean(scores[:3]))


def test_latent_diversity_uses_first_20_only_and_warns_when_empty():
    vecs = vectors_2d()
    preds = np.full((1, 30), -1)
    preds[0, 0], preds[0, 25] = 1, 2  # rank 26 is beyond the first 20
    assert latent_diversity(preds, np.array([1]), vecs) == pytest.approx(0.3 * 0 - 0.7 * 0)
    with pytest.warns(ScoringWarning, match="LATENT_DIVERSITY"):
        assert latent_diversity(preds, np.array([9]), vecs) == 0.0


def cos(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def slow_blw(preds, targets, ids, mat):
    vec = {int(i): mat[r].astype(np.float64) for r, i in enumerate(ids)}
    sims = []
    for p, t in zip(preds.tolist(), targets.tolist()):
        if t in p or t not in vec:
            continue
        sims.append(cos(vec[t], vec[p[0]]) if p[0] in vec else 0.0)
    return float(np.mean(sims)) if sims else None


def slow_ld(preds, targets, ids, mat):
    vec = {int(i): mat[r].astype(np.float64) for r, i in enumerate(ids)}
    scores = []
    for p, t in zip(preds.tolist(), targets.tolist()):
        if t not in vec:
            continue
        usable = [vec[x] for x in p[:20] if x in vec]
        if not usable:
            scores.append(-0.7)
            continue
        m = np.mean(usable, axis=0)
        diversity = np.mean([1 - cos(m, v) for v in usable])
        scores.append(0.3 * diversity - 0.7 * (1 - cos(m, vec[t])))
    return float(np.mean(scores)) if scores else None


@pytest.mark.parametrize("seed", [3, 4])
def test_vector_tests_equal_slow_reference(seed):
    rng = np.random.default_rng(seed)
    n_users, k, n_items, dim = 300, 30, 80, 6
    ids = rng.choice(np.arange(1000, 1000 + n_items), size=n_items - 10, replace=False)
    mat = rng.normal(size=(len(ids), dim)).astype(np.float32)
    vecs = TrackVectors(ids, mat)
    catalog = np.arange(1000, 1000 + n_items)
    preds = np.array([rng.permutation(catalog)[:k] for _ in range(n_users)])
    preds[rng.random(preds.shape) < 0.05] = -1
    preds = np.where(np.maximum.accumulate(preds == -1, axis=1), -1, preds)
    targets = rng.choice(catalog, n_users)
    assert being_less_wrong(preds, targets, vecs) == pytest.approx(
        slow_blw(preds, targets, ids, mat), rel=1e-9)
    assert latent_diversity(preds, targets, vecs) == pytest.approx(
        slow_ld(preds, targets, ids, mat), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_vector_tests_property(seed):
    rng = np.random.default_rng(seed)
    n_users, k = int(rng.integers(1, 12)), int(rng.integers(1, 25))
    ids = np.arange(10)
    mat = rng.integers(-2, 3, size=(10, 3)).astype(np.float32)  # zero vectors happen
    vecs = TrackVectors(ids[:8], mat[:8])
    preds = rng.integers(-1, 10, size=(n_users, k))
    targets = rng.integers(0, 10, n_users)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScoringWarning)
        blw = being_less_wrong(preds, targets, vecs)
        ld = latent_diversity(preds, targets, vecs)
    ref_blw = slow_blw(preds, targets, ids[:8], mat[:8])
    ref_ld = slow_ld(preds, targets, ids[:8], mat[:8])
    if ref_blw is not None:
        assert blw == pytest.approx(ref_blw, abs=1e-9)
    if ref_ld is not None:
        assert ld == pytest.approx(ref_ld, abs=1e-9)
    assert np.isfinite(blw) and np.isfinite(ld)


# --------------------------------------------------------------------------- one fold


def fold_tables():
    users = pd.DataFrame(
        {"country": ["US", "RU", None, "IT", "US"], "gender": ["m", "f", None, "n", "m"]},
        index=pd.Index([1, 2, 3, 4, 5], name="user_id"),
    )
    tracks = pd.DataFrame({"artist_id": [10, 10, 11, 12, 12, 13]},
                          index=pd.Index([100, 101, 102, 103, 104, 105], name="track_id"))
    train = pd.DataFrame({
        "user_id": [1, 1, 2, 3, 4, 4],
        "track_id": [100, 101, 102, 103, 104, 100],
        "artist_id": [10, 10, 11, 12, 12, 10],
        "user_track_count": [5, 200, 3, 1, 1, 1],
    })
    vecs = TrackVectors(np.array([100, 101, 102]), np.eye(3, dtype=np.float32))
    return users, tracks, train, vecs


def test_challenge_fold_slices_by_hand():
    users, tracks, train, vecs = fold_tables()
    # user 6 is missing from the users table; user 5 has no training rows (zero activity);
    # user 6's target 777 is missing from the tracks table (no artist)
    user_ids = np.array([1, 2, 3, 4, 5, 6])
    targets = np.array([102, 100, 105, 101, 100, 777])
    preds = np.array([[102, 103], [101, 100], [104, -1], [100, -1], [100, 101], [-1, -1]])
    fold = ChallengeFold.from_frames(user_ids, targets, preds, train=train, users=users,
                                     tracks=tracks, vectors=vecs)
    assert fold.ranks.tolist() == [1, 2, 0, 0, 1, 0]
    assert fold.hit_rate() == pytest.approx(3 / 6)
    assert fold.mrr() == pytest.approx((1 + 1 / 2 + 1) / 6)

    country = fold.mred("country")  # IT left out; 3 and 6 are "missing"
    assert dict(country) == pytest.approx({"US": 0.0, "RU": 0.0, "missing": 1.0})
    assert country.n_users == 5 and country.miss_rate == pytest.approx(2 / 5)
    assert country.value == pytest.approx(-(0.4 + 0.4 + 0.6) / 3)

    activity = fold.mred("user_activity")  # 205, 3, 1, 2, 0, 0
    assert activity.counts == {"0": 2, "1": 3, "100": 1}
    assert dict(activity) == pytest.approx({"0": 0.5, "1": 2 / 3, "100": 0.0})

    track = fold.mred("track_popularity")  # 3, 6, 0, 200, 6, 0
    assert track.counts == {"0": 2, "1": 3, "100": 1}
    assert dict(track) == pytest.approx({"0": 1.0, "1": 0.0, "100": 1.0})

    artist = fold.mred("artist_popularity")  # 3, 206, 0, 206, 206, unknown artist
    assert artist.counts == {"0": 1, "1": 1, "100": 3}
    assert artist.n_ungrouped == 1 and artist.n_users == 6
    assert dict(artist) == pytest.approx({"0": 1.0, "1": 0.0, "100": 1 / 3})

    gender = fold.mred("gender")  # users 3 and 6: in MR, in no group
    assert gender.n_ungrouped == 2 and gender.miss_rate == pytest.approx(0.5)
    assert dict(gender) == pytest.approx({"f": 0.0, "m": 0.0, "n": 1.0})

    assert fold.stats() == {"num_users": 6, "k": 2, "min_predictions": 0, "max_predictions": 2}
    for value in [fold.being_less_wrong()["value"], fold.latent_diversity()["value"]]:
        assert np.isfinite(value)
    # the fold's cached per-user scores are the plain-array kernels' scores
    np.testing.assert_array_equal(fold.being_less_wrong_scores(),
                                  being_less_wrong_scores(preds, targets, vecs))
    np.testing.assert_array_equal(fold.latent_diversity_scores(),
                                  latent_diversity_scores(preds, targets, vecs))
    assert fold.being_less_wrong()["value"] == being_less_wrong(preds, targets, vecs)
    assert fold.latent_diversity()["value"] == latent_diversity(preds, targets, vecs)


def test_challenge_fold_artist_from_tracks_when_train_has_no_artist_column():
    users, tracks, train, vecs = fold_tables()
    args = dict(users=users, tracks=tracks, vectors=vecs)
    ids, targets, preds = np.array([1, 2]), np.array([102, 100]), np.array([[1], [2]])
    a = ChallengeFold.from_frames(ids, targets, preds, train=train, **args)
    b = ChallengeFold.from_frames(ids, targets, preds, train=train.drop(columns="artist_id"),
                                  **args)
    np.testing.assert_array_equal(a.slices["artist_popularity"].codes,
                                  b.slices["artist_popularity"].codes)


def test_challenge_fold_errors():
    users, tracks, train, vecs = fold_tables()
    with pytest.raises(DataError, match="no test users"):
        ChallengeFold.from_frames([], [], np.zeros((0, 2)), train=train, users=users,
                                  tracks=tracks, vectors=vecs)
    with pytest.raises(DataError, match="user_track_count"):
        ChallengeFold.from_frames([1], [100], [[100]], train=train.drop(columns="user_track_count"),
                                  users=users, tracks=tracks, vectors=vecs)


def test_country_list_is_the_2022_list():
    assert COUNTRIES == ("US", "RU", "DE", "UK", "PL", "BR", "FI", "NL", "ES", "SE", "UA", "CA",
                         "FR")


def test_slice_result_pickles_and_serialises():
    import json
    import pickle

    res = miss_rate_equality_difference(np.array([True, False]), ["a", "b"])
    back = pickle.loads(pickle.dumps(res))
    assert isinstance(back, SliceMissRates) and back.value == res.value and dict(back) == dict(res)
    assert json.loads(json.dumps(res)) == {"a": 1.0, "b": 0.0}
    assert json.loads(json.dumps(res.to_dict()))["MRED"] == res.value
