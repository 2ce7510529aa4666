"""k-core filter and leave-one-out folds: equality with the 2022 pandas procedure, invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._folds_2022 import folds_reference, kcore_reference
from evaluation.errors import ConfigError, DataError
from evaluation.splits import bootstrap_folds, kcore_filter, leave_last_one_out
from evaluation.splits._kcore import kcore_codes
from evaluation.splits._loo import _first_of_permutations

# ---------------------------------------------------------------------------------------------
# The slow, obviously-correct references (the 2022 challenge's pandas procedure) are in
# benchmarks/_folds_2022.py, which the fold benchmarks time; the data and the comparison:


def random_events(n_users: int, n_tracks: int, seed: int, *, grouped: bool = True,
                  max_rows: int = 150) -> pd.DataFrame:
    """Unique user-track rows with heavy-tailed track popularity and sparse user ids."""
    rng = np.random.default_rng(seed)
    per_user = rng.integers(1, max_rows, n_users)
    ids = rng.permutation(n_users * 3)[:n_users]  # not sorted, not contiguous
    user = np.repeat(ids, per_user)
    track = (rng.zipf(1.3, size=len(user)) - 1) % n_tracks
    df = pd.DataFrame({"user_id": user.astype(np.int32), "track_id": track.astype(np.int32)})
    df = df.drop_duplicates(["user_id", "track_id"])
    if not grouped:
        df = df.sample(frac=1.0, random_state=seed)
    df = df.reset_index(drop=True)
    df["timestamp"] = rng.integers(1_600_000_000, 1_600_000_050, len(df))  # many ties
    df["user_track_count"] = rng.integers(1, 30, len(df)).astype(np.int32)
    return df


def assert_same_folds(fast, reference):
    assert len(fast) == len(reference)
    for fold, (train, test) in zip(fast, reference):
        np.testing.assert_array_equal(fold.train_rows, train.index.to_numpy())
        np.testing.assert_array_equal(fold.test_rows, test.index.to_numpy())


# ---------------------------------------------------------------------------------------------
# Equality with the reference


@pytest.mark.parametrize(
    "n_users,n_tracks,seed,grouped",
    [(120, 300, 0, True), (300, 2_000, 0, False), (600, 4_000, 42, True),
     (900, 6_000, 1, False), (1_500, 9_000, 2022, True)],
)
def test_pandas_sampler_equals_2022_procedure(n_users, n_tracks, seed, grouped):
    df = random_events(n_users, n_tracks, seed, grouped=grouped)
    fast = list(bootstrap_folds(df, 3, seed=seed))
    reference = folds_reference(df, 3, seed)
    assert sum(len(test) for _, test in reference) > 0
    assert_same_folds(fast, reference)


@pytest.mark.parametrize("frac,k,max_rounds", [(0.5, 5, 10), (1.0, 10, 1), (0.1, 3, 2),
                                               (0.33, 1, 10), (0.25, 20, 10)])
def test_pandas_sampler_equals_reference_for_other_parameters(frac, k, max_rounds):
    df = random_events(700, 3_000, 7, grouped=False)
    fast = list(bootstrap_folds(df, 2, seed=7, frac=frac, k_core=k, max_rounds=max_rounds))
    assert_same_folds(fast, folds_reference(df, 2, 7, frac=frac, k=k, max_rounds=max_rounds))


def test_users_interleaved_in_runs_equal_reference():
    # Each user's rows split into several non-adjacent runs: the general (sorting) path.
    df = random_events(300, 2_000, 3)
    df = pd.concat([df.iloc[::2], df.iloc[1::2]], ignore_index=True)
    assert_same_folds(list(bootstrap_folds(df, 2, seed=3)), folds_reference(df, 2, 3))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 3), st.integers(2, 60), st.integers(1, 4),
       st.floats(0.05, 1.0))
def test_pandas_sampler_property(seed, n_users, k, frac):
    df = random_events(n_users, 40, seed % 1000, max_rows=30)
    fast = list(bootstrap_folds(df, 2, seed=seed, frac=frac, k_core=k))
    assert_same_folds(fast, folds_reference(df, 2, seed, frac=frac, k=k))


def test_first_of_permutations_replays_legacy_permutation():
    rng = np.random.default_rng(5)
    sizes = np.concatenate([[1, 2, 3, 1, 70_000, 5], rng.integers(1, 600, 500),
                            [2**16 + 1, 1]])
    for seed in (0, 42, 123456):
        rs = np.random.RandomState(seed)
        expected = [rs.permutation(m)[0] for m in sizes]
        got = _first_of_permutations(np.random.RandomState(seed), sizes)
        np.testing.assert_array_equal(got, expected)


def test_replay_in_small_chunks_continues_the_stream(monkeypatch):
    from evaluation.splits import _loo

    monkeypatch.setattr(_loo, "_CHUNK_DRAWS", 50)
    sizes = np.random.default_rng(8).integers(1, 40, 300)
    sizes[7] = 500  # a user with more draws than a chunk
    rs = np.random.RandomState(3)
    expected = [rs.permutation(m)[0] for m in sizes]
    np.testing.assert_array_equal(_first_of_permutations(np.random.RandomState(3), sizes),
                                  expected)


def test_dataframe_sample_is_a_permutation_prefix():
    # The identity the fold draw relies on, checked against pandas itself.
    for n, frac, seed in [(10, 0.25, 0), (1_001, 0.25, 42), (12_345, 0.3, 7)]:
        taken = pd.DataFrame({"u": np.arange(n)}).sample(frac=frac, random_state=seed)
        size = round(frac * n)
        np.testing.assert_array_equal(taken.index.to_numpy(),
                                      np.random.RandomState(seed).permutation(n)[:size])


# ---------------------------------------------------------------------------------------------
# k-core


def test_kcore_hand_example():
    # Tracks 1 and 2 are heard by users a, b; track 3 only by a. k=2: track 3 goes, then user c
    # (a single row on track 1) goes, which leaves track 1 with a, b only: still 2 rows.
    df = pd.DataFrame({"user_id": [10, 10, 10, 11, 11, 12],
                       "track_id": [1, 2, 3, 1, 2, 1]})
    mask = kcore_filter(df, k=2)
    np.testing.assert_array_equal(mask, [True, True, False, True, True, False])


def test_kcore_cascades_over_rounds():
    # Removing user 3 takes track 30 below k, which takes user 2 below k: three rounds.
    df = pd.DataFrame({"user_id": [1, 1, 2, 2, 3, 4, 4],
                       "track_id": [10, 20, 10, 30, 30, 10, 20]})
    res = kcore_codes(df["user_id"].to_numpy(), df["track_id"].to_numpy(), k=2, max_rounds=10)
    kept = kcore_reference(df, k=2).index.to_numpy()
    np.testing.assert_array_equal(res.keep, kept)
    assert res.converged
    capped = kcore_codes(df["user_id"].to_numpy(), df["track_id"].to_numpy(), k=2,
                         max_rounds=1)
    np.testing.assert_array_equal(capped.keep, kcore_reference(df, k=2, max_rounds=1).index)
    assert capped.rounds == 1 and not capped.converged
    assert res.rounds == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k,max_rounds", [(5, 10), (10, 10), (10, 1), (3, 2)])
def test_kcore_filter_equals_reference(seed, k, max_rounds):
    df = random_events(400, 1_500, seed, grouped=bool(seed % 2))
    expected = np.zeros(len(df), dtype=bool)
    expected[kcore_reference(df, k, max_rounds).index] = True
    np.testing.assert_array_equal(kcore_filter(df, k=k, max_rounds=max_rounds), expected)


def test_kcore_filter_arbitrary_ids_and_errors():
    df = pd.DataFrame({"user_id": [-5, -5, 2**40, 2**40], "track_id": [7, 8, 7, 8]})
    assert kcore_filter(df, k=2).all()
    with pytest.raises(ConfigError, match="'k' parameter"):
        kcore_filter(df, k=0)
    with pytest.raises(DataError, match="no column 'item'"):
        kcore_filter(df, item_col="item")


# ---------------------------------------------------------------------------------------------
# Invariants (both samplers, both splits)


@pytest.mark.parametrize("sampler", ["pandas", "generator"])
@pytest.mark.parametrize("split", ["bootstrap", "last_one"])
def test_fold_invariants(sampler, split):
    df = random_events(1_200, 5_000, 11, grouped=False)
    n_users = df["user_id"].nunique()
    k = 10
    for fold in bootstrap_folds(df, 3, seed=0, sampler=sampler, split=split, k_core=k):
        train, test = df.take(fold.train_rows), df.take(fold.test_rows)
        assert fold.sampled_users == round(0.25 * n_users)
        assert 0 < len(test) <= fold.sampled_users
        # disjoint, one target per test user, sorted by user id, every test user trains
        assert not set(fold.train_rows) & set(fold.test_rows)
        assert test["user_id"].is_unique and test["user_id"].is_monotonic_increasing
        assert set(train["user_id"]) == set(test["user_id"])
        pairs = set(zip(train["user_id"], train["track_id"]))
        assert not any(p in pairs for p in zip(test["user_id"], test["track_id"]))
        assert np.all(np.diff(fold.train_rows) > 0)
        # the fold's rows form a k-core
        rows = pd.concat([train, test])
        assert rows.groupby("user_id").size().min() >= k
        assert rows.groupby("track_id").size().min() >= k
        assert fold.kcore_converged


def test_a_fold_that_the_kcore_empties():
    # Every track has a single listener: nothing survives k=2, and that is not an error.
    df = pd.DataFrame({"user_id": [1, 1, 2, 2], "track_id": [1, 2, 3, 4],
                       "timestamp": [1, 2, 3, 4]})
    for split in ("bootstrap", "last_one"):
        fold = next(bootstrap_folds(df, 1, frac=1.0, k_core=2, split=split))
        assert len(fold.train_rows) == 0 and len(fold.test_rows) == 0
        assert fold.sampled_users == 2 and fold.kcore_converged


def test_last_split_picks_latest_event_with_stated_ties():
    df = random_events(500, 2_000, 4, grouped=False)
    for fold in bootstrap_folds(df, 2, seed=1, split="last_one"):
        rows = np.sort(np.concatenate([fold.train_rows, fold.test_rows]))
        fold_df = df.take(rows)
        expected = {}
        for user, group in fold_df.groupby("user_id"):  # slow per-user reference
            best = max(zip(group["timestamp"], group["track_id"], group.index))
            expected[user] = best[2]
        np.testing.assert_array_equal(fold.test_rows, [expected[u] for u in sorted(expected)])


def test_generator_sampler_is_deterministic_and_differs_from_pandas():
    df = random_events(800, 4_000, 9)
    a = list(bootstrap_folds(df, 2, seed=0, sampler="generator"))
    b = list(bootstrap_folds(df, 2, seed=0, sampler="generator"))
    c = list(bootstrap_folds(df, 2, seed=0, sampler="pandas"))
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x.test_rows, y.test_rows)
        np.testing.assert_array_equal(x.train_rows, y.train_rows)
        assert not np.array_equal(x.test_rows, z.test_rows)


def test_generator_targets_are_uniform():
    # One user with 20 rows, many folds: each row is the target about equally often.
    df = pd.DataFrame({"user_id": np.zeros(20, dtype=np.int32),
                       "track_id": np.arange(20, dtype=np.int32)})
    picks = [f.test_rows[0] for f in bootstrap_folds(df, 2_000, seed=0, frac=1.0, k_core=1,
                                                     sampler="generator")]
    counts = np.bincount(picks, minlength=20)
    assert counts.min() > 60 and counts.max() < 150  # expected 100 each


def test_seeds_differ_and_zero_is_a_seed():
    df = random_events(500, 2_000, 0)
    f0 = next(bootstrap_folds(df, 1, seed=0))
    f1 = next(bootstrap_folds(df, 1, seed=1))
    fdefault = next(bootstrap_folds(df, 1, seed=None))
    f42 = next(bootstrap_folds(df, 1, seed=42))
    assert not np.array_equal(f0.test_rows, f1.test_rows)
    np.testing.assert_array_equal(fdefault.test_rows, f42.test_rows)
    assert not np.array_equal(f0.test_rows, f42.test_rows)


@pytest.mark.parametrize("kwargs,match", [
    ({"num_folds": 0}, "'num_folds' parameter"),
    ({"num_folds": 2.0}, "'num_folds' parameter"),
    ({"frac": 0.0}, "'frac' parameter"),
    ({"frac": 1.5}, "'frac' parameter"),
    ({"k_core": 0}, "'k_core' parameter"),
    ({"max_rounds": -1}, "'max_rounds' parameter"),
    ({"seed": -1}, "'seed' parameter"),
    ({"seed": 2**32 - 1}, "'seed' parameter"),  # seed + fold must stay a valid seed
    ({"sampler": "torch"}, "'sampler' parameter must be one of"),
    ({"split": "temporal"}, "'split' parameter must be one of"),
])
def test_bad_fold_arguments(kwargs, match):
    df = random_events(50, 200, 0)
    args = {"num_folds": 2, **kwargs}
    with pytest.raises(ConfigError, match=match):
        list(bootstrap_folds(df, **args))


def test_bad_events():
    with pytest.raises(DataError, match="missing column 'track_id'"):
        list(bootstrap_folds(pd.DataFrame({"user_id": [1]}), 1))
    with pytest.raises(DataError, match="empty"):
        list(bootstrap_folds(pd.DataFrame({"user_id": [], "track_id": []}), 1))
    with pytest.raises(DataError, match="missing values"):
        list(bootstrap_folds(pd.DataFrame({"user_id": [1.0, None], "track_id": [1, 2]}), 1))


# ---------------------------------------------------------------------------------------------
# leave_last_one_out


def test_leave_last_one_out_hand_example():
    df = pd.DataFrame({
        "user_id":   [1, 1, 1, 2, 2, 3],
        "track_id":  [5, 6, 7, 8, 9, 4],
        "timestamp": [10, 30, 30, 5, 4, 1],
    }, index=[100, 101, 102, 103, 104, 105])
    split = leave_last_one_out(df)
    # user 1: tie at t=30 goes to the larger track id (7); user 3 has one event: train only
    assert split.test.index.tolist() == [102, 103]
    assert split.train.index.tolist() == [100, 101, 104, 105]
    assert leave_last_one_out(df, min_events=1).test.index.tolist() == [102, 103, 105]


def test_leave_last_one_out_matches_slow_reference_and_ignores_row_order():
    df = random_events(200, 800, 6)
    split = leave_last_one_out(df)
    expected = sorted(max(zip(g["timestamp"], g["track_id"], g.index))[2]
                      for _, g in df.groupby("user_id") if len(g) >= 2)
    assert sorted(split.test.index) == expected
    assert split.test["user_id"].is_monotonic_increasing
    shuffled = leave_last_one_out(df.sample(frac=1.0, random_state=0))
    assert sorted(shuffled.test.index) == expected
    assert len(split.train) + len(split.test) == len(df)


@pytest.mark.parametrize("grouped", [True, False])
def test_blockwise_paths_with_tiny_chunks_equal_reference(monkeypatch, grouped):
    # Full-scale data is processed in blocks of ~1M rows; tiny blocks run those paths here.
    from evaluation.splits import _kcore

    monkeypatch.setattr(_kcore.run_blocks, "__defaults__", (50,))
    monkeypatch.setattr(_kcore.take, "__defaults__", (None, 37))
    monkeypatch.setattr(_kcore._count, "__defaults__", (29,))
    df = random_events(400, 2_500, 11, grouped=grouped)
    assert_same_folds(list(bootstrap_folds(df, 3, seed=11)), folds_reference(df, 3, 11))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6), max_rounds=st.integers(1, 4),
       split_runs=st.booleans())
def test_kcore_runs_equals_kcore_codes(seed, k, max_rounds, split_runs):
    from evaluation.splits._kcore import kcore_runs

    rng = np.random.default_rng(seed)
    n_users, n_items = 25, 40
    run_users = rng.integers(0, n_users, 60) if split_runs else rng.permutation(n_users)
    run_lens = rng.integers(1, 12, len(run_users))
    run_offsets = np.cumsum(run_lens) - run_lens
    users = np.repeat(run_users, run_lens).astype(np.int32)
    items = (rng.zipf(1.5, len(users)) % n_items).astype(np.int32)
    expected = kcore_codes(users, items, k, max_rounds, n_users=n_users, n_items=n_items)
    got, per_run = kcore_runs(items, run_offsets, run_lens, run_users, k, max_rounds,
                              n_users=n_users, n_items=n_items)
    np.testing.assert_array_equal(got.alive, expected.alive)
    assert (got.rounds, got.converged) == (expected.rounds, expected.converged)
    np.testing.assert_array_equal(per_run, np.add.reduceat(expected.alive, run_offsets))
