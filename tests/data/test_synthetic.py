"""The synthetic source (shape, determinism, cache) and the parquet directory layout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluation.data import (
    Tables,
    TrackVectors,
    _parquet,
    _synthetic,
    read_tables,
    synthetic_tables,
    write_tables,
)
from evaluation.data._parquet import tables_format
from evaluation.data._synthetic import SCALES, generate_tables, synthetic_cache_path
from evaluation.errors import ConfigError, DataError
from tests.data._tables import assert_tables_equal, fresh_fingerprint

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny() -> Tables:
    return generate_tables(SCALES["tiny"], 42)


@pytest.fixture(scope="module")
def small() -> Tables:
    return generate_tables(SCALES["small"], 42)


# --- schema and consistency ---------------------------------------------------------------------

def test_dtypes_and_columns(tiny):
    ev = tiny.events
    assert list(ev.columns) == ["user_id", "artist_id", "album_id", "track_id", "timestamp",
                                "user_track_count"]
    for col in ev.columns:
        assert ev[col].dtype == np.int32, col
    assert isinstance(ev.index, pd.RangeIndex)
    assert tiny.users.index.name == "user_id" and tiny.users.index.dtype == np.int32
    # the challenge's users table (its columns are checked in test_synthetic_twin.py)
    assert list(tiny.users.columns[:5]) == ["country", "age", "gender", "playcount",
                                            "registered_unixtime"]
    for col in ("age", "playcount", "registered_unixtime"):
        assert tiny.users[col].dtype == np.int32, col
    assert tiny.tracks.index.name == "track_id" and tiny.tracks.index.is_monotonic_increasing
    assert list(tiny.tracks.columns) == ["track", "artist_id", "artist", "albums", "albums_id"]
    for col in ("track", "artist", "albums", "albums_id", ):
        assert pd.api.types.is_string_dtype(tiny.tracks[col].dtype), col
    assert tiny.track_vectors.vectors.dtype == np.float32
    assert tiny.track_vectors.dim == 32


def test_scale_sizes(tiny, small):
    for t, p in ((tiny, SCALES["tiny"]), (small, SCALES["small"])):
        assert len(t.users) == p.users and len(t.tracks) == p.tracks
        assert len(t.track_vectors) == p.tracks
    assert 1_000_000 <= len(small.events) <= 2_500_000
    assert 8_000 <= len(small.users) <= 12_000


def test_each_pair_once_and_ordered(tiny):
    ev = tiny.events
    assert not ev.duplicated(["user_id", "track_id"]).any()
    # Sorted by user, then time.
    u, ts = ev["user_id"].to_numpy(), ev["timestamp"].to_numpy()
    assert np.all(np.diff(u) >= 0)
    same = u[1:] == u[:-1]
    assert np.all(np.diff(ts)[same] >= 0)


def test_references_and_hierarchy(tiny):
    ev, tracks = tiny.events, tiny.tracks
    assert ev["user_id"].isin(tiny.users.index).all()
    assert ev["track_id"].isin(tracks.index).all()
    joined = tracks.loc[ev["track_id"]]
    np.testing.assert_array_equal(joined["artist_id"].to_numpy(), ev["artist_id"].to_numpy())
    expected = "[" + ev["album_id"].astype(str) + "]"
    assert (joined["albums_id"].to_numpy() == expected.to_numpy()).all()
    assert tracks["albums"].str.match(r"^\['[A-Za-z ]+'\]$").all()
    # Nesting: an album has one artist, an artist's name is one string.
    assert ev.groupby("album_id")["artist_id"].nunique().max() == 1
    assert tracks.groupby("artist_id")["artist"].nunique().max() == 1
    assert tracks["track"].str.len().min() > 0
    np.testing.assert_array_equal(tiny.track_vectors.track_ids, tracks.index.to_numpy())


def test_users_listening_and_time(tiny):
    ev, users = tiny.events, tiny.users
    per_user = ev.groupby("user_id")["user_track_count"].sum()
    # LFM-1b's listening count covers the user's rows here and more (other tracks)
    assert (users.loc[per_user.index, "cnt_listeningevents"] >= per_user.to_numpy()).all()
    assert (ev["user_track_count"] >= 1).all()
    first = ev.groupby("user_id")["timestamp"].min()
    registered = users["registered_unixtime"]
    assert (registered.loc[first.index] < first).all()
    lo = pd.Timestamp("2005-01-01").timestamp()
    hi = pd.Timestamp("2020-12-31").timestamp()
    assert ev["timestamp"].between(lo, hi).all() and registered.between(lo, hi).all()
    assert users["gender"].dropna().isin(["m", "f", "n"]).all()
    ages = users.loc[users["age"] != -1, "age"]
    assert ages.between(13, 80).all() and (users["age"] == -1).any()


# --- realism --------------------------------------------------------------------------------------

def test_heavy_tails(small):
    ev = small.events
    deg = ev["track_id"].value_counts().to_numpy()
    # Power-law popularity: the head dwarfs the median and the top 1 % hold a large share.
    assert deg.max() >= 15 * np.median(deg)
    top = np.sort(deg)[::-1][: len(deg) // 100].sum() / deg.sum()
    assert top > 0.08
    counts = ev["user_track_count"].to_numpy()
    assert counts.max() >= 50 * np.median(counts)
    rows = ev.groupby("user_id").size()
    assert rows.max() <= SCALES["small"].rows_cap
    assert rows.median() > 150


def test_demographic_shares(small):
    users = small.users
    gender = users["gender"].value_counts(normalize=True, dropna=False)
    assert gender["n"] == pytest.approx(0.532, abs=0.02)
    assert gender["m"] == pytest.approx(0.332, abs=0.02)
    assert gender["f"] == pytest.approx(0.134, abs=0.015)
    assert users["gender"].isna().mean() < 0.01
    country = users["country"]
    assert country.isna().mean() == pytest.approx(0.54, abs=0.02)
    assert country.dropna().str.fullmatch(r"[A-Z]{2}").all()
    top = list(country.value_counts().index[:4])
    assert top == ["US", "RU", "DE", "UK"]
    assert set(country.dropna()) <= set(_synthetic.SYNTHETIC_COUNTRIES)
    assert len(_synthetic.SYNTHETIC_COUNTRIES) == len(set(_synthetic.SYNTHETIC_COUNTRIES)) == 158


def test_vectors_reflect_clusters_and_artists():
    params = SCALES["small"]
    cat = _synthetic._catalogue(np.random.default_rng(3), params)
    vec = cat["vectors"].astype(np.float64)
    cluster = cat["artist_cluster"][cat["track_artist"]]
    artist = cat["track_artist"]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(vec), (2, 50_000))
    cos = np.einsum("ij,ij->i", vec[a], vec[b])
    same_cluster = cos[(cluster[a] == cluster[b]) & (artist[a] != artist[b])].mean()
    cross = cos[cluster[a] != cluster[b]].mean()
    # Pairs of tracks of one artist: neighbours in the artist-contiguous track order.
    same_artist = np.einsum("ij,ij->i", vec[:-1], vec[1:])[artist[:-1] == artist[1:]].mean()
    assert same_artist > same_cluster + 0.1
    assert same_cluster > cross + 0.3
    assert abs(cross) < 0.1


def test_co_listened_tracks_are_close(small):
    """Tastes and vectors agree: two tracks of one user are closer than two random tracks."""
    ev = small.events.iloc[:300_000]
    vecs, found = small.track_vectors.lookup(ev["track_id"].to_numpy())
    assert found.all()
    u = ev["user_id"].to_numpy()
    nxt = u[1:] == u[:-1]
    co = np.einsum("ij,ij->i", vecs[:-1][nxt], vecs[1:][nxt]).mean()
    perm = np.random.default_rng(0).permutation(len(vecs))
    rand = np.einsum("ij,ij->i", vecs, vecs[perm]).mean()
    assert co > rand + 0.08


def test_taste_depends_on_country(scipy_stats):
    params = SCALES["small"]
    rng = np.random.default_rng(5)
    cat = _synthetic._catalogue(rng, params)
    users = _synthetic._users(rng, params, cat)
    country = pd.Series(users["country"]).fillna("--")
    top = country.isin(["US", "RU", "DE", "UK", "PL", "--"])
    table = pd.crosstab(country[top], users["primary"][top.to_numpy()])
    assert scipy_stats.chi2_contingency(table.to_numpy())[1] < 1e-6


def _kcore_test_users(ev: pd.DataFrame, seed: int, frac=0.25, k=10) -> int:
    """Users left after a user sample and an iterative k-core (slow, plain pandas)."""
    users = ev[["user_id"]].drop_duplicates().sample(frac=frac, random_state=seed)
    df = ev[ev["user_id"].isin(users["user_id"])]
    for _ in range(10):
        before = len(df)
        df = df[df.groupby("track_id")["user_id"].transform("size") >= k]
        df = df[df.groupby("user_id")["track_id"].transform("size") >= k]
        if len(df) == before:
            break
    return df["user_id"].nunique()


def test_tiny_survives_the_challenge_folds(tiny):
    for fold in range(4):
        assert _kcore_test_users(tiny.events, 42 + fold) >= 100


# --- determinism and arguments --------------------------------------------------------------------

def test_same_seed_same_tables(tiny):
    again = generate_tables(SCALES["tiny"], 42)
    assert_tables_equal(tiny, again)
    assert fresh_fingerprint(again) == tiny.fingerprint()


def test_different_seeds_differ(tiny):
    other = generate_tables(SCALES["tiny"], 43)
    assert other.fingerprint() != tiny.fingerprint()
    assert not tiny.events["track_id"].equals(other.events["track_id"])


def test_seed_zero_is_a_seed():
    zero = synthetic_tables("tiny", seed=0)
    assert len(zero.events) > 0
    assert zero.fingerprint() == generate_tables(SCALES["tiny"], 0).fingerprint()
    assert zero.fingerprint() != generate_tables(SCALES["tiny"], 1).fingerprint()


def test_fresh_process_same_fingerprint(tiny, tmp_path):
    code = ("from evaluation.data import synthetic_tables; "
            "print(synthetic_tables('tiny', 42).fingerprint())")
    env = {**os.environ, "EVALRS_CACHE_DIR": str(tmp_path), "PYTHONHASHSEED": "123"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[-1] == tiny.fingerprint()


@pytest.mark.parametrize("scale", ["huge", "Tiny", "", None, 1])
def test_bad_scale_names_the_allowed_values(scale):
    with pytest.raises(ConfigError, match=r"'tiny', 'small', 'full'"):
        synthetic_tables(scale)


@pytest.mark.parametrize("seed", [-1, 1.5, "42", True, None])
def test_bad_seed(seed):
    with pytest.raises(ConfigError, match="seed"):
        synthetic_tables("tiny", seed)


# --- cache ----------------------------------------------------------------------------------------

def test_cache_round_trip(tiny, monkeypatch):
    path = synthetic_cache_path("tiny", 42)
    first = synthetic_tables("tiny", 42)
    assert (path / _parquet.META_FILE).is_file()
    assert path.parent.name == "synthetic" and path.name.endswith(
        f"-v{_synthetic.GENERATOR_VERSION}")

    def boom(*args, **kwargs):
        raise AssertionError("the cache should have been read")

    monkeypatch.setattr(_synthetic, "generate_tables", boom)
    cached = synthetic_tables("tiny", 42)
    assert_tables_equal(cached, tiny)
    assert_tables_equal(first, tiny)
    assert cached.fingerprint() == tiny.fingerprint() == fresh_fingerprint(cached)
    assert cached.source == "synthetic:tiny:seed42"


def test_damaged_cache_is_regenerated(tiny):
    path = synthetic_cache_path("tiny", 42)
    synthetic_tables("tiny", 42)
    (path / "events.0.npy").write_bytes(b"not an array")
    with pytest.warns(_synthetic.SyntheticCacheWarning, match=r"events\.0\.npy"):
        again = synthetic_tables("tiny", 42)
    assert_tables_equal(again, tiny)
    assert_tables_equal(read_tables(path), tiny)  # and the cache was replaced


def test_leftover_temporary_directory_is_ignored(tiny):
    path = synthetic_cache_path("tiny", 7)
    path.parent.mkdir(parents=True, exist_ok=True)
    stray = path.parent / f".{path.name}.abc.tmp"
    stray.mkdir()
    (stray / "events.parquet").write_bytes(b"half")
    got = synthetic_tables("tiny", 7)
    assert got.fingerprint() == generate_tables(SCALES["tiny"], 7).fingerprint()


# --- parquet directories --------------------------------------------------------------------------

def _hand_made() -> Tables:
    events = pd.DataFrame({
        "user_id": np.array([3, 3, 9], dtype=np.int32),
        "artist_id": np.array([1, 2, 1], dtype=np.int32),
        "album_id": np.array([10, 20, 10], dtype=np.int32),
        "track_id": np.array([100, 200, 100], dtype=np.int32),
        "timestamp": np.array([1_200_000_000, 1_200_000_100, 1_300_000_000], dtype=np.int64),
        "user_track_count": np.array([1, 7, 2], dtype=np.int32),
    })
    users = pd.DataFrame(
        {"country": pd.array(["US", None], dtype="str"), "age": [23.0, np.nan],
         "gender": pd.array([None, "f"], dtype="str"),
         "playcount": np.array([8, 2], dtype=np.int64),
         "timestamp": np.array([1_100_000_000, 1_100_000_500], dtype=np.int64)},
        index=pd.Index(np.array([3, 9], dtype=np.int32), name="user_id"),
    )
    tracks = pd.DataFrame(
        {"track": pd.array(["Blue", "Ça va"], dtype="str"),
         "artist_id": np.array([1, 2], dtype=np.int32),
         "artist": pd.array(["A", "B"], dtype="str"),
         "albums": pd.array(["['X']", "['Y']"], dtype="str"),
         "albums_id": pd.array(["[10]", "[20]"], dtype="str")},
        index=pd.Index(np.array([100, 200], dtype=np.int32), name="track_id"),
    )
    vectors = TrackVectors(np.array([200, 100]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    return Tables(events, users, tracks, vectors, source="hand-made")


def test_parquet_round_trip_hand_made(tmp_path):
    t = _hand_made()
    out = write_tables(t, tmp_path / "ds")
    columns = [f"events.{i}.npy" for i in range(len(t.events.columns))]  # one per column
    assert sorted(p.name for p in out.iterdir()) == sorted([
        "evalrs_tables.json", *columns, "track_vector_ids.npy", "track_vectors.npy",
        "tracks.parquet", "users.parquet"])
    back = read_tables(out)
    assert_tables_equal(back, t)
    assert back.users["country"].isna().tolist() == [False, True]
    assert back.source == "hand-made"
    assert back.fingerprint() == t.fingerprint() == fresh_fingerprint(back)
    meta = json.loads((out / "evalrs_tables.json").read_text())
    assert meta["rows"] == {"events": 3, "users": 2, "tracks": 2}
    assert meta["fingerprint"] == t.fingerprint()


def test_events_columns_are_read_only_and_equal_to_what_was_written(tmp_path):
    t = _hand_made()
    back = read_tables(write_tables(t, tmp_path / "ds"))
    assert list(back.events.columns) == list(t.events.columns)
    assert isinstance(back.events.index, pd.RangeIndex)
    for column in t.events.columns:
        values = back.events[column].to_numpy()
        assert values.dtype == t.events[column].dtype
        assert not values.flags.writeable  # the tables are shared with every model
    pd.testing.assert_frame_equal(back.events, t.events)


def test_events_that_are_not_plain_columns_stay_in_parquet(tmp_path):
    # a nullable column (or a non-default index) has no lossless .npy file: parquet keeps it
    t = _hand_made()
    events = t.events.astype({"timestamp": "Int64"})
    events.loc[1, "timestamp"] = pd.NA
    odd = Tables(events, t.users, t.tracks, t.track_vectors, source="hand-made")
    out = write_tables(odd, tmp_path / "ds")
    assert (out / "events.parquet").is_file() and not list(out.glob("events.*.npy"))
    back = read_tables(out, strict=True)
    pd.testing.assert_frame_equal(back.events, events)
    assert back.fingerprint() == odd.fingerprint()


def write_format_1(tables: Tables, out: Path, monkeypatch) -> Path:
    """``tables`` in the format of version 1 (events in ``events.parquet``), as it wrote it."""
    with monkeypatch.context() as m:
        m.setattr(_parquet, "FORMAT_VERSION", 1)
        m.setattr(_parquet, "_plain_columns", lambda frame: False)
        write_tables(tables, out)
    assert tables_format(out) == 1 and (out / "events.parquet").is_file()
    return out


def test_a_directory_of_format_1_is_read_and_upgraded_when_asked(tmp_path, monkeypatch):
    t = _hand_made()
    out = write_format_1(t, tmp_path / "old", monkeypatch)
    back = read_tables(out, strict=True)  # read as it is
    assert_tables_equal(back, t)
    assert back._fingerprint == t.fingerprint() and tables_format(out) == 1
    upgraded = read_tables(out, strict=True, upgrade=True)
    assert_tables_equal(upgraded, t)
    assert tables_format(out) == _parquet.FORMAT_VERSION
    assert not (out / "events.parquet").exists() and (out / "events.0.npy").is_file()
    again = read_tables(out, strict=True)
    assert_tables_equal(again, t)
    assert again._fingerprint == t.fingerprint()


def test_a_synthetic_cache_of_format_1_is_upgraded_not_regenerated(tmp_path, monkeypatch):
    tiny = synthetic_tables("tiny", 42)
    path = synthetic_cache_path("tiny", 42)
    write_format_1(tiny, path, monkeypatch)

    def refuse(*args, **kwargs):
        raise AssertionError("the cache was regenerated instead of read and upgraded")

    monkeypatch.setattr(_synthetic, "generate_tables", refuse)
    assert synthetic_tables("tiny", 42).fingerprint() == tiny.fingerprint()
    assert tables_format(path) == _parquet.FORMAT_VERSION
    assert synthetic_tables("tiny", 42).fingerprint() == tiny.fingerprint()


def test_round_trip_without_vectors(tmp_path):
    t = _hand_made()
    t = Tables(t.events, t.users, t.tracks, None)
    back = read_tables(write_tables(t, tmp_path / "nv"))
    assert back.track_vectors is None
    assert back.fingerprint() == fresh_fingerprint(t)


def test_stored_fingerprint_is_not_trusted_after_a_change(tmp_path):
    t = _hand_made()
    out = write_tables(t, tmp_path / "ds")
    column = list(t.events.columns).index("user_track_count")
    time.sleep(0.01)
    np.save(out / f"events.{column}.npy", np.array([5, 5, 5], dtype=np.int32))
    back = read_tables(out)
    assert back.fingerprint() == fresh_fingerprint(back) != t.fingerprint()


def test_write_replaces_a_dataset_directory_but_nothing_else(tmp_path):
    t = _hand_made()
    out = write_tables(t, tmp_path / "ds")
    t2 = Tables(t.events.iloc[:2], t.users, t.tracks, t.track_vectors)
    write_tables(t2, out)
    assert len(read_tables(out).events) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no temporary leftovers
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="mine.*not a dataset directory"):
        write_tables(t, other)
    assert (other / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(read_tables(write_tables(t, empty)).events) == 3


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(_parquet.np, "save", fail)
    with pytest.raises(OSError, match="disk full"):
        write_tables(_hand_made(), tmp_path / "ds")
    assert list(tmp_path.iterdir()) == []


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match="evalrs_tables.json"):
        read_tables(tmp_path)
    out = write_tables(_hand_made(), tmp_path / "ds")
    (out / "users.parquet").write_bytes(b"garbage")
    with pytest.raises(DataError, match=r"users\.parquet"):
        read_tables(out)
    meta = json.loads((out / "evalrs_tables.json").read_text())
    meta["format_version"] = 99
    (out / "evalrs_tables.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="format_version 99"):
        read_tables(out)


def test_synthetic_tables_are_already_canonical(tiny):
    """Schema validation accepts the generated tables and converts nothing."""
    schema = pytest.importorskip("evaluation.data._schema")
    checked = schema.validate_tables(tiny)
    assert_tables_equal(checked, tiny)
    assert fresh_fingerprint(checked) == tiny.fingerprint()


@pytest.mark.parametrize("columnwise", [True, False])
def test_round_trip_both_read_paths(tiny, tmp_path, monkeypatch, columnwise):
    monkeypatch.setattr(_parquet, "_COLUMNWISE_ROWS", 0 if columnwise else 10**12)
    back = read_tables(write_tables(tiny, tmp_path / "ds"))
    assert_tables_equal(back, tiny)
    assert fresh_fingerprint(back) == tiny.fingerprint()
    single = read_tables(tmp_path / "ds", use_threads=False)
    assert_tables_equal(single, tiny)
