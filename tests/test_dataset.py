"""ChallengeDataset: folds on a source, 2022 names, argument checks, determinism, the data CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluation import ChallengeDataset
from evaluation.cli import main as cli_main
from evaluation.data import Tables, TrackVectors, synthetic_tables
from evaluation.errors import ConfigError, DataError
from evaluation.splits import bootstrap_folds

REPO = Path(__file__).resolve().parents[1]


def hand_tables(n_users: int = 300, seed: int = 0) -> Tables:
    """A small dataset in the schema, built here so these tests do not depend on a generator."""
    rng = np.random.default_rng(seed)
    per_user = rng.integers(5, 120, n_users)
    user = np.repeat(np.arange(1, n_users + 1) * 3, per_user)
    track = (rng.zipf(1.3, size=len(user)) - 1) % 800
    events = pd.DataFrame({"user_id": user, "track_id": track}).drop_duplicates()
    events = events.reset_index(drop=True)
    n = len(events)
    events = pd.DataFrame({
        "user_id": events["user_id"].to_numpy(np.int32),
        "artist_id": (events["track_id"].to_numpy() // 10).astype(np.int32),
        "album_id": (events["track_id"].to_numpy() // 5).astype(np.int32),
        "track_id": events["track_id"].to_numpy(np.int32),
        "timestamp": rng.integers(1_500_000_000, 1_600_000_000, n),
        "user_track_count": rng.integers(1, 50, n).astype(np.int32),
    })
    users = pd.DataFrame({"country": "US", "age": 30.0, "gender": "n", "playcount": 1,
                          "timestamp": 0},
                         index=pd.Index(np.unique(user), name="user_id"))
    track_ids = np.arange(800)
    tracks = pd.DataFrame({"track": [f"t{i}" for i in track_ids], "artist_id": track_ids // 10,
                           "artist": "a", "albums": "b", "albums_id": track_ids // 5},
                          index=pd.Index(track_ids, name="track_id"))
    vectors = TrackVectors(track_ids, rng.normal(size=(800, 4)))
    return Tables(events, users, tracks, vectors, source="hand")


@pytest.fixture(scope="module")
def tables() -> Tables:
    return hand_tables()


def test_folds_and_frames(tables):
    ds = ChallengeDataset(tables)
    assert ds.num_folds == 4 and ds.seed == 42
    # hand-built tables go through the schema check too (which may canonicalise dtypes)
    pd.testing.assert_frame_equal(ds.df_events, tables.events, check_dtype=False)
    np.testing.assert_array_equal(ds.track_vectors.vectors, tables.track_vectors.vectors)
    expected = list(bootstrap_folds(tables.events, 4, seed=42))
    for f, fold in enumerate(expected):
        train, test = ds.get_train_set(f), ds.get_test_set(f)
        assert list(train.columns) == list(tables.events.columns)
        np.testing.assert_array_equal(train.index, fold.train_rows)
        assert list(test.columns) == ["user_id", "track_id"]
        np.testing.assert_array_equal(test.index, fold.test_rows)
        assert test["user_id"].is_unique and test["user_id"].is_monotonic_increasing
        assert ds.fold(f) is ds.fold(f)  # cached
    assert ds.fingerprint == ds.tables.fingerprint()


def test_hand_built_tables_are_validated(tables):
    bad = Tables(tables.events.assign(track_id=tables.events["track_id"] + 10_000),
                 tables.users, tables.tracks, tables.track_vectors)
    with pytest.raises(DataError, match="track_id"):
        ChallengeDataset(bad)
    with pytest.raises(ConfigError, match="source options"):
        ChallengeDataset(tables, url="http://example.invalid")


def test_limit_keeps_the_first_users_by_id(tables):
    ds = ChallengeDataset(tables, num_folds=1)
    full = ds.get_test_set(0)
    pd.testing.assert_frame_equal(ds.get_test_set(0, limit=10), full.iloc[:10])
    pd.testing.assert_frame_equal(ds.get_test_set(0, limit=0), full)
    pd.testing.assert_frame_equal(ds.get_test_set(0, limit=10**9), full)
    with pytest.raises(ConfigError, match="'limit' parameter"):
        ds.get_test_set(0, limit=-1)


def test_2022_names(tables):
    ds = ChallengeDataset(tables, num_folds=2, seed=0)
    pd.testing.assert_frame_equal(ds._get_train_set(1), ds.get_train_set(1))
    pd.testing.assert_frame_equal(ds._get_test_set(1, limit=5), ds.get_test_set(1, limit=5))
    train, test = ds.get_sample_train_test()
    pd.testing.assert_frame_equal(train, ds.get_train_set(0))
    pd.testing.assert_frame_equal(test, ds.get_test_set(0))


def test_seed_none_is_the_default_and_zero_is_a_seed(tables):
    a = ChallengeDataset(tables, seed=None, num_folds=1)
    b = ChallengeDataset(tables, seed=42, num_folds=1)
    c = ChallengeDataset(tables, seed=0, num_folds=1)
    assert a.seed == 42 and c.seed == 0
    pd.testing.assert_frame_equal(a.get_test_set(0), b.get_test_set(0))
    assert not a.get_test_set(0).equals(c.get_test_set(0))
    assert a.fold_params == b.fold_params != c.fold_params
    assert c.fold_params == {"protocol": "leave_one_out", "split": "bootstrap",
                             "sampler": "pandas", "num_folds": 1, "seed": 0, "frac": 0.25,
                             "k_core": 10, "max_rounds": 10}


def test_options_reach_the_folds(tables):
    ds = ChallengeDataset(tables, num_folds=3, frac=0.5, k_core=5, sampler="generator",
                          split="last_one", seed=7)
    for got, want in zip(ds.compute_folds(), bootstrap_folds(
            tables.events, 3, seed=7, frac=0.5, k_core=5, sampler="generator", split="last_one")):
        np.testing.assert_array_equal(got.test_rows, want.test_rows)
        np.testing.assert_array_equal(got.train_rows, want.train_rows)
    stats = ds.fold_statistics()
    assert list(stats.index) == [0, 1, 2]
    assert (stats["sampled_users"] == round(0.5 * tables.events["user_id"].nunique())).all()


def test_threaded_folds_equal_sequential(tables):
    a = ChallengeDataset(tables, num_folds=4).compute_folds(workers=2)
    b = ChallengeDataset(tables, num_folds=4).compute_folds(workers=1)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.train_rows, y.train_rows)


def test_a_fold_cached_on_disk_lives_only_while_used(tables, monkeypatch):
    import gc
    import weakref

    import evaluation.dataset as dataset_module

    ds = ChallengeDataset(tables, num_folds=2, seed=8)
    ds.compute_folds()  # cut and written to the disk cache
    first = ds.fold(1)
    expected = (first.train_rows.copy(), first.test_rows.copy())
    assert ds.fold(1) is first  # while held, the same fold (not read again)
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None  # the dataset itself does not keep it

    def refuse(*args, **kwargs):
        raise AssertionError("the fold was cut again instead of read from the disk cache")

    monkeypatch.setattr(dataset_module, "make_fold", refuse)
    again = ds.fold(1)
    np.testing.assert_array_equal(again.train_rows, expected[0])
    np.testing.assert_array_equal(again.test_rows, expected[1])
    assert [f.index for f in ds.compute_folds()] == [0, 1]  # every fold, each one held
    train = ds.get_train_set(1)
    np.testing.assert_array_equal(train.index.to_numpy(), expected[0])


@pytest.mark.parametrize("fold_cache", [False, True])
def test_a_pickled_dataset_is_the_same_dataset(tables, tmp_path, monkeypatch, fold_cache):
    import pickle

    import evaluation.dataset as dataset_module

    ds = ChallengeDataset(tables, num_folds=3, seed=12, fold_cache=fold_cache)
    expected = [(f.train_rows.copy(), f.test_rows.copy()) for f in ds.compute_folds()]
    path = tmp_path / "dataset.pkl"
    with open(path, "wb") as fh:  # a participant's own pickling
        pickle.dump(ds, fh)
    if not fold_cache:  # the folds travel with it: none is cut again
        monkeypatch.setattr(dataset_module, "make_fold", lambda *a, **k: pytest.fail("cut"))
    with open(path, "rb") as fh:
        back = pickle.load(fh)
    assert back.fingerprint == ds.fingerprint and back.fold_params == ds.fold_params
    for fold, (train, test) in enumerate(expected):
        np.testing.assert_array_equal(back.fold(fold).train_rows, train)
        np.testing.assert_array_equal(back.fold(fold).test_rows, test)
        assert not back.fold(fold).train_rows.flags.writeable  # shared: still read-only
        pd.testing.assert_frame_equal(back.get_train_set(fold), ds.get_train_set(fold))
        pd.testing.assert_frame_equal(back.get_test_set(fold), ds.get_test_set(fold))
    pd.testing.assert_frame_equal(back.df_users, ds.df_users)
    assert not back.track_vectors.vectors.flags.writeable
    assert pickle.loads(pickle.dumps(back)).fingerprint == ds.fingerprint  # and again
    # the unpickled dataset cuts folds of its own in threads (a lock of its own)
    assert len(back.compute_folds(workers=2)) == 3


@pytest.mark.parametrize("limit", [None, 0, 7])
def test_train_and_test_sets_at_once_equal_the_separate_calls(tables, limit):
    ds = ChallengeDataset(tables, num_folds=2, seed=10)
    train, test = ds.get_train_and_test_sets(1, limit=limit)
    pd.testing.assert_frame_equal(train, ds.get_train_set(1))
    pd.testing.assert_frame_equal(test, ds.get_test_set(1, limit=limit))
    with pytest.raises(ConfigError, match="limit"):
        ds.get_train_and_test_sets(1, limit=-1)


@pytest.mark.parametrize("fold_cache,written", [(False, True), (True, False)])
def test_a_fold_not_on_disk_stays_in_memory(tables, monkeypatch, fold_cache, written):
    # without the disk cache, or when its file cannot be written, the fold is computed once
    import gc
    import weakref

    import evaluation.dataset as dataset_module

    monkeypatch.setattr(dataset_module, "write_fold", lambda *args, **kwargs: written)
    ds = ChallengeDataset(tables, num_folds=2, seed=9, fold_cache=fold_cache)
    kept = weakref.ref(ds.fold(0))
    gc.collect()
    assert kept() is not None and ds.fold(0) is kept()


@pytest.mark.parametrize("kwargs,match", [
    ({"num_folds": 0}, "'num_folds' parameter must be an int in the range \\[1, inf\\)"),
    ({"num_folds": "4"}, "'num_folds' parameter"),
    ({"frac": 0}, "'frac' parameter must be a number in the range \\(0.0, 1.0\\]. Got 0 instead"),
    ({"frac": 1.01}, "'frac' parameter"),
    ({"k_core": 0}, "'k_core' parameter"),
    ({"seed": -3}, "'seed' parameter"),
    ({"seed": 1.5}, "'seed' parameter"),
    ({"sampler": "Pandas"}, "'sampler' parameter must be one of \\['pandas', 'generator'\\]"),
    ({"split": "random"}, "'split' parameter must be one of \\['bootstrap', 'last_one'\\]"),
])
def test_bad_arguments(tables, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ChallengeDataset(tables, **kwargs)


@pytest.mark.parametrize("fold", [-1, 4, 1.0, True, "0"])
def test_bad_fold(tables, fold):
    ds = ChallengeDataset(tables)
    with pytest.raises(ConfigError, match=r"'fold' parameter must be an int in the range \[0, 3\]"):
        ds.get_train_set(fold)


# ---------------------------------------------------------------------------------------------
# Determinism across processes, on the embedded synthetic source

_FOLD_DIGEST = """
import hashlib, sys
from evaluation import ChallengeDataset
ds = ChallengeDataset(source="synthetic", scale="tiny", seed=int(sys.argv[1]))
h = hashlib.sha256()
for f in range(ds.num_folds):
    h.update(ds.fold(f).train_rows.tobytes()); h.update(ds.fold(f).test_rows.tobytes())
print(ds.fingerprint, h.hexdigest())
"""


def _digest(ds: ChallengeDataset) -> str:
    h = hashlib.sha256()
    for f in range(ds.num_folds):
        h.update(ds.fold(f).train_rows.tobytes())
        h.update(ds.fold(f).test_rows.tobytes())
    return h.hexdigest()


def test_same_seed_same_folds_in_a_fresh_process(tmp_path):
    ds = ChallengeDataset(source="synthetic", scale="tiny", seed=0)
    env = {**os.environ, "EVALRS_CACHE_DIR": str(tmp_path / "fresh-cache")}
    out = subprocess.run([sys.executable, "-c", _FOLD_DIGEST, "0"], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [ds.fingerprint, _digest(ds)]
    other = ChallengeDataset(source="synthetic", scale="tiny", seed=1)
    assert other.fingerprint == ds.fingerprint  # the fold seed does not change the data
    assert _digest(other) != _digest(ds)


# ---------------------------------------------------------------------------------------------
# CLI


def test_cli_generate_info_folds(tmp_path, capsys):
    data_dir = tmp_path / "tiny"
    assert cli_main(["data", "generate", "--scale", "tiny", "--data-seed", "3",
                     "--out", str(data_dir)]) == 0
    expected = synthetic_tables("tiny", 3)
    assert cli_main(["data", "info", str(data_dir), "--num-folds", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{len(expected.events):,}" in out and "sampled" in out

    fold_dir = tmp_path / "folds"
    assert cli_main(["data", "folds", str(data_dir), "--out", str(fold_dir), "--seed", "0",
                     "--num-folds", "2", "--sampler", "generator"]) == 0
    manifest = json.loads((fold_dir / "manifest.json").read_text())
    ds = ChallengeDataset(str(data_dir), seed=0, num_folds=2, sampler="generator")
    pd.testing.assert_frame_equal(ds.df_events, expected.events, check_dtype=False)
    assert manifest["fingerprint"] == ds.fingerprint
    assert manifest["fold_params"] == ds.fold_params
    for f in range(2):
        train = pd.read_parquet(fold_dir / f"fold_{f}_train.parquet")
        test = pd.read_parquet(fold_dir / f"fold_{f}_test.parquet")
        pd.testing.assert_frame_equal(train, ds.get_train_set(f).reset_index(drop=True))
        pd.testing.assert_frame_equal(test, ds.get_test_set(f).reset_index(drop=True))
    assert sorted(p.name for p in fold_dir.iterdir()) == sorted(
        ["manifest.json"] + [f"fold_{f}_{p}.parquet" for f in range(2) for p in ("train", "test")])


def test_cli_reports_bad_arguments(tmp_path, capsys):
    assert cli_main(["data", "folds", "synthetic", "--scale", "tiny", "--out", str(tmp_path),
                     "--frac", "2"]) == 2
    assert "'frac' parameter" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
