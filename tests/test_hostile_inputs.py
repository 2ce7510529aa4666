"""Hostile inputs: ids and counts that do not fit in int64, scores that overflow, damaged files.

Ids at or above 2**63 (uint64, floats, Python ints), fractions, NaN and infinities are refused
with an error that shows the value as given, never wrapped; play-count sums never wrap into the
wrong activity group; top-k refuses scores that are not finite; truncated or garbage files of
every kind the harness reads give a DataError naming the file; the synthetic dataset's cache is
checked against the sha256 of each file and regenerated, with a warning, when damaged.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluation._util import int64 as _int64
from evaluation._util import verified
from evaluation._util.int64 import as_int64
from evaluation.challenge._fold import bin_by_edges, sum_by_key
from evaluation.data import _parquet, _synthetic
from evaluation.data._local import load_local, read_table_file
from evaluation.data._parquet import read_tables, write_tables
from evaluation.data._schema import COUNT_TOTAL_LIMIT, validate_tables
from evaluation.data._synthetic import (
    SCALES,
    SyntheticCacheWarning,
    generate_tables,
    synthetic_cache_path,
    synthetic_tables,
)
from evaluation.data._tables import Tables
from evaluation.data._vectors import load_vector_file
from evaluation.errors import ConfigError, DataError, PredictionError
from evaluation.predictions import predictions_frame, validate_predictions
from evaluation.topk import topk_from_embeddings
from tests._verified_files import (
    flip_byte_in_place,
    own_cache,
    records,
    replace_by_a_copy,
    settle,
)
from tests.data._tables import assert_tables_equal, fresh_fingerprint

BIG = 2**64 - 1  # what 2**64 - 1 wraps to in int64: -1, the padding of a prediction list
EDGE = 2**63  # the first value that does not fit


# --- the shared conversion ------------------------------------------------------------------------

class Refused(Exception):
    pass


def _fail(rule, bad, values):
    return Refused(rule, bad.tolist(), values[bad].tolist())


@pytest.mark.parametrize("values, rule, shown", [
    (np.array([1, EDGE], dtype=np.uint64), _int64.RANGE, [EDGE]),
    (np.array([1, BIG], dtype=np.uint64), _int64.RANGE, [BIG]),
    (np.array([1.0, 2.0**63]), _int64.RANGE, [2.0**63]),
    (np.array([1.0, 1e19]), _int64.RANGE, [1e19]),
    (np.array([1.0, -1e19]), _int64.RANGE, [-1e19]),
    (np.array([1, BIG], dtype=object), _int64.RANGE, [BIG]),
    (np.array([1, -(2**63) - 1], dtype=object), _int64.RANGE, [-(2**63) - 1]),
    (np.array([1.0, 3.5]), _int64.FRACTION, [3.5]),
    (np.array([1.0, np.nan]), _int64.MISSING, [None]),
    (np.array([1.0, np.inf]), _int64.INFINITE, [np.inf]),
    (np.array([1, None], dtype=object), _int64.MISSING, [None]),
    (np.array([1, 2.5], dtype=object), _int64.FRACTION, [2.5]),
    (np.array([1, True], dtype=object), _int64.BOOLEAN, [True]),
    (np.array([1, "7"], dtype=object), _int64.NOT_NUMBER, ["7"]),
    (np.array([True, False]), _int64.BOOLEAN, [True, False]),
])
def test_as_int64_refuses_what_would_wrap(values, rule, shown):
    with pytest.raises(Refused) as info:
        as_int64(values, _fail)
    got_rule, mask, got = info.value.args
    assert got_rule == rule
    assert mask == [not v for v in [True] * (len(values) - len(shown))] + [True] * len(shown)
    if rule == _int64.MISSING:
        assert all(v is None or v != v for v in got)  # NaN or None
    else:
        assert got == shown


@pytest.mark.parametrize("values", [
    np.array([0, 2**63 - 1], dtype=np.uint64),
    np.array([-(2**63), 2**63 - 1], dtype=object),  # exact: float64 would round 2**63 - 1 up
    np.array([-(2.0**63), 9.0e18]),
    np.array([0, 2**63 - 1], dtype=np.int64),
    np.array([3, 9], dtype=np.int32),
])
def test_as_int64_keeps_every_value_that_fits(values):
    out = as_int64(values, _fail)
    assert out.dtype == np.int64
    assert [int(v) for v in out] == [int(v) for v in values.tolist()]


# --- predictions ------------------------------------------------------------------------------

USERS = np.array([10, 20])


def frame(values, index=USERS) -> pd.DataFrame:
    return pd.DataFrame(values, index=pd.Index(index, name="user_id"), columns=["0", "1"])


@pytest.mark.parametrize("values, shown", [
    (np.array([[5, BIG], [6, 7]], dtype=np.uint64), str(BIG)),
    (np.array([[5, EDGE], [6, 7]], dtype=np.uint64), str(EDGE)),
    (np.array([[5.0, 1e19], [6.0, 7.0]]), "1e+19"),
    (np.array([[5.0, 2.0**63], [6.0, 7.0]]), "9.223372036854776e+18"),
    (np.array([[5, BIG], [6, 7]], dtype=object), str(BIG)),
])
def test_prediction_ids_beyond_int64_are_refused_not_wrapped(values, shown):
    with pytest.raises(PredictionError, match="outside the int64 range") as info:
        validate_predictions(frame(values), USERS, k=2)
    assert shown in str(info.value) and "user 10" in str(info.value)


def test_uint64_column_next_to_int64_columns():
    mixed = frame(np.array([[5, 6], [7, 8]])).astype({"0": np.int64, "1": np.uint64})
    mixed.loc[20, "1"] = np.uint64(BIG)
    with pytest.raises(PredictionError, match=str(BIG)):
        validate_predictions(mixed, USERS, k=2)
    mixed.loc[20, "1"] = np.uint64(2**63 - 1)  # fits: kept exactly
    assert validate_predictions(mixed, USERS, k=2).loc[20].tolist() == [7, 2**63 - 1]


def test_uint64_predictions_that_fit_are_kept():
    out = validate_predictions(frame(np.array([[5, 9], [6, 7]], dtype=np.uint64)), USERS, k=2)
    assert out.to_numpy().tolist() == [[5, 9], [6, 7]] and out.dtypes.eq(np.int64).all()


@pytest.mark.parametrize("index, shown", [
    (np.array([10, BIG], dtype=np.uint64), str(BIG)),
    (np.array([10.0, 1e19]), "1e+19"),
    (np.array([10.0, 20.5]), "20.5"),
    (pd.Index([10, BIG], dtype=object), str(BIG)),
])
def test_prediction_user_ids_beyond_int64(index, shown):
    pattern = f"user_id values must be integers.*{re.escape(shown)}"
    with pytest.raises(PredictionError, match=pattern):
        validate_predictions(frame([[5, 6], [7, 8]], index=index), USERS, k=2)


@pytest.mark.parametrize("argument", ["user_ids", "catalog"])
def test_validate_predictions_arguments_beyond_int64(argument):
    kwargs = {"user_ids": USERS, "catalog": np.array([5, 6, 7, 8, BIG], dtype=np.uint64)}
    if argument == "user_ids":
        kwargs = {"user_ids": np.array([10, BIG], dtype=np.uint64)}
    with pytest.raises(PredictionError, match=f"'{argument}' argument.*{BIG}"):
        validate_predictions(frame([[5, 6], [7, 8]]), k=2, **kwargs)


def test_user_ids_written_as_text_are_still_read():
    out = validate_predictions(frame([[5, 6], [7, 8]], index=["10", "20"]), USERS, k=2)
    assert out.index.tolist() == [10, 20]


@pytest.mark.parametrize("items, shown", [
    ([[5, BIG]], str(BIG)),
    ([[-1, BIG]], str(BIG)),  # NumPy reads this list as floats: the error shows the int
    ([[5, 3.5]], "3.5"),
    ([[5, float("nan")]], "nan"),
    (np.array([[5, BIG]], dtype=np.uint64), str(BIG)),
    (np.array([[5.0, np.inf]]), "inf"),
])
def test_predictions_frame_refuses_what_would_wrap(items, shown):
    with pytest.raises(PredictionError, match="predictions_frame") as info:
        predictions_frame([10], items)
    assert shown in str(info.value)


def test_predictions_frame_keeps_the_largest_int64_exactly():
    out = predictions_frame([10], [[-1, 2**63 - 1]])  # float64 would make it 2**63
    assert out.loc[10].tolist() == [-1, 2**63 - 1]


# --- dataset tables ---------------------------------------------------------------------------

def small_tables() -> Tables:
    events = pd.DataFrame({"user_id": [1, 1, 2], "artist_id": [1, 1, 1], "album_id": [1, 1, 1],
                           "track_id": [10, 11, 10], "timestamp": [1, 2, 3],
                           "user_track_count": [1, 2, 3]})
    users = pd.DataFrame({"country": ["US", "US"], "age": [20.0, 30.0], "gender": ["m", "f"],
                          "playcount": [3, 3], "timestamp": [0, 0]},
                         index=pd.Index([1, 2], name="user_id"))
    tracks = pd.DataFrame({"track": ["a", "b"], "artist_id": [1, 1], "artist": ["x", "x"],
                           "albums": ["['a']", "['a']"], "albums_id": ["[1]", "[1]"]},
                          index=pd.Index([10, 11], name="track_id"))
    return Tables(events, users, tracks)


HUGE = [
    ("uint64", np.array([1, 1, BIG], dtype=np.uint64), str(BIG)),
    ("float 1e19", np.array([1.0, 1.0, 1e19]), "1e+19"),
    ("float 2**63", np.array([1.0, 1.0, 2.0**63]), "9.223372036854776e+18"),
    ("Python int", pd.array([1, 1, BIG], dtype=object), str(BIG)),
    ("Python ints, mixed signs", pd.array([-5, 1, BIG], dtype=object), str(BIG)),
]


@pytest.mark.parametrize("column", ["user_id", "track_id", "artist_id", "album_id"])
@pytest.mark.parametrize("label, values, shown", HUGE, ids=[h[0] for h in HUGE])
def test_event_ids_beyond_int64_are_refused(column, label, values, shown):
    t = small_tables()
    t.events = t.events.assign(**{column: values})
    with pytest.raises(DataError, match=f"column '{column}'.*outside the int64 range") as info:
        validate_tables(t)
    assert shown in str(info.value) and "rows [2]" in str(info.value)


@pytest.mark.parametrize("values, rule", [
    ([1.0, 1.0, 3.5], "not whole numbers; offending values: [3.5]"),
    ([1.0, 1.0, np.nan], "missing values in an integer column"),
    ([1.0, 1.0, np.inf], "infinite; offending values: [inf]"),
])
def test_event_ids_that_are_not_integers(values, rule):
    t = small_tables()
    t.events = t.events.assign(track_id=values)
    with pytest.raises(DataError, match="column 'track_id'") as info:
        validate_tables(t)
    assert rule in str(info.value)


def test_track_table_ids_beyond_int64():
    t = small_tables()
    t.tracks = t.tracks.set_axis(pd.Index(np.array([10, BIG], dtype=np.uint64),
                                          name="track_id"))
    with pytest.raises(DataError, match=f"column 'track_id'.*{BIG}"):
        validate_tables(t)
    t = small_tables()
    t.tracks = t.tracks.assign(artist_id=np.array([1, 2**63 - 1], dtype=np.uint64))
    out = validate_tables(t)  # the largest int64 fits and is kept exactly
    assert out.tracks["artist_id"].tolist() == [1, 2**63 - 1]


# --- play-count sums --------------------------------------------------------------------------

@pytest.mark.parametrize("keys", [np.array([7, 7, 3]), np.array([7 * 10**12, 7 * 10**12, 3])],
                         ids=["table", "hash"])
def test_play_count_sums_that_would_wrap_are_refused(keys):
    # 2**62 + 2**62 = 2**63: one more than int64 holds; int64 or rint-cast sums give -2**63,
    # the "no plays" group
    counts = np.array([2**62, 2**62, 1], dtype=np.int64)
    with pytest.raises(DataError, match="user_track_count.*2\\*\\*53"):
        sum_by_key(keys, counts, keys[[0, 2]], name="training set, column 'user_track_count'")


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
@pytest.mark.parametrize("keys", [np.array([7, 7, 7, 3]), np.array([7 * 10**12] * 3 + [3])],
                         ids=["table", "hash"])
def test_large_counts_that_fit_are_summed_exactly_and_binned_last(dtype, keys):
    # the largest int32/uint32; for int64 an odd value whose triple is just below 2**53
    top = int(np.iinfo(dtype).max) if dtype != np.int64 else 2**51 + 1
    counts = np.array([top, top, top, 4], dtype=dtype)
    sums = sum_by_key(keys, counts, keys[[0, 3]])
    assert sums.tolist() == [3 * top, 4]  # Python ints: an independent exact sum
    edges = np.array([1, 100, 1000])
    codes, _ = bin_by_edges(sums, edges)
    assert codes.tolist() == [3, 1]  # the most active group, not "0"


def test_schema_refuses_counts_whose_sum_reaches_2_53():
    t = small_tables()
    t.events = t.events.assign(user_track_count=np.array([2**52, 2**52, 1], dtype=np.int64))
    with pytest.raises(DataError, match="'user_track_count'.*less than 2\\*\\*53") as info:
        validate_tables(t)
    assert str(2**52) in str(info.value)
    t.events = t.events.assign(user_track_count=np.array([2**52, 2**51, 1], dtype=np.int64))
    out = validate_tables(t)  # 1.5 * 2**52 + 1 < 2**53: accepted, values kept
    assert out.events["user_track_count"].tolist() == [2**52, 2**51, 1]
    assert COUNT_TOTAL_LIMIT == 2**53


# --- top-k scores -------------------------------------------------------------------------------

def test_topk_refuses_nan_and_inf_embeddings():
    user = np.ones((3, 4), dtype=np.float32)
    item = np.ones((5, 4), dtype=np.float32)
    user[1, 2] = np.nan
    with pytest.raises(ConfigError, match=r"'user_emb' must be finite; rows \[1\]"):
        topk_from_embeddings(user, item, 2)
    user[1, 2] = 1.0
    item[4, 0] = -np.inf
    with pytest.raises(ConfigError, match=r"'item_emb' must be finite; rows \[4\]"):
        topk_from_embeddings(user, item, 2)


@pytest.mark.parametrize("batch_size", [1, None])
def test_topk_refuses_float32_scores_that_overflow(batch_size):
    rng = np.random.default_rng(3)
    user = rng.standard_normal((6, 8)).astype(np.float32)
    item = rng.standard_normal((9, 8)).astype(np.float32)
    item[4] = 1e20  # finite, but 1e20 * 1e20 = 1e40 > float32's 3.4e38
    user[2] = 1e20
    with pytest.raises(ConfigError, match=r"users \[102\] and items \[504\]"):
        topk_from_embeddings(user, item, 3, user_ids=np.arange(100, 106),
                             item_ids=np.arange(500, 509), batch_size=batch_size)


def test_topk_inf_minus_inf_is_refused():
    user = np.array([[1e20, 1e20], [1.0, 0.0]], dtype=np.float32)
    item = np.array([[1e20, -1e20], [0.0, 1.0]], dtype=np.float32)  # +inf + -inf = NaN
    with pytest.raises(ConfigError, match=r"not finite.*users \[0\] and items \[0\]"):
        topk_from_embeddings(user, item, 1)


def test_topk_large_but_finite_scores_rank_like_float64():
    # entries of 2e18: too large for the cheap bound (64 * 4e36 > 8.5e37), so every chunk's
    # scores are checked; they are finite and rank as an exact float64 reference does
    rng = np.random.default_rng(5)
    user = (rng.standard_normal((7, 64)) * 2e18).astype(np.float32)
    item = (rng.standard_normal((50, 64)) * 2e18).astype(np.float32)
    got = topk_from_embeddings(user, item, 5, batch_size=3).to_numpy()
    scores = user.astype(np.float64) @ item.astype(np.float64).T
    expect = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    assert (got == expect).all()


def test_topk_item_ids_beyond_int64():
    with pytest.raises(ConfigError, match=f"'item_ids' must fit in int64.*{BIG}"):
        topk_from_embeddings(np.ones((1, 2)), np.ones((2, 2)), 1,
                             item_ids=np.array([3, BIG], dtype=np.uint64))


# --- damaged vector files -----------------------------------------------------------------------

IDS = np.array([10, 11, 12, 13], dtype=np.int64)
VECS = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)


def write_vectors(kind: str, directory):
    if kind == "npz":
        path = directory / "track_vectors.npz"
        np.savez(path, track_ids=IDS, vectors=VECS)
    elif kind == "npy":
        path = directory / "track_vectors.npy"
        np.save(path, VECS)
        np.save(directory / "track_vector_ids.npy", IDS)
    elif kind == "npy ids":
        write_vectors("npy", directory)
        return directory / "track_vector_ids.npy"
    elif kind == "parquet":
        path = directory / "track_vectors.parquet"
        pd.DataFrame({"track_id": IDS, "vector": list(VECS)}).to_parquet(path)
    else:
        gensim = pytest.importorskip("gensim")
        path = directory / "song2vec.wv"
        kv = gensim.models.KeyedVectors(8)
        kv.add_vectors([str(i) for i in IDS], VECS)
        kv.save(str(path))
    return path


def damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "half":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(np.random.default_rng(len(data)).bytes(max(len(data), 64)))


KINDS = ["npz", "npy", "npy ids", "parquet", "wv"]


@pytest.mark.parametrize("how", ["half", "garbage"])
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_vector_files_name_the_file(tmp_path, kind, how):
    path = write_vectors(kind, tmp_path)
    main = next(tmp_path.glob("track_vectors.*"), None) or tmp_path / "song2vec.wv"
    good = load_vector_file(main, IDS)  # the intact file reads
    assert good.track_ids.tolist() == IDS.tolist() and np.array_equal(good.vectors, VECS)
    damage(path, how)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gensim may warn before failing
        with pytest.raises(DataError, match=path.name):
            load_vector_file(main, IDS)


def test_vector_ids_beyond_int64_are_refused(tmp_path):
    path = tmp_path / "track_vectors.npz"
    np.savez(path, track_ids=np.array([10, BIG], dtype=np.uint64), vectors=VECS[:2])
    with pytest.raises(DataError, match=f"track_vectors.npz.*'track_id'.*{BIG}"):
        load_vector_file(path, IDS)


# --- damaged parquet tables -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny() -> Tables:
    return generate_tables(SCALES["tiny"], 42, source="synthetic:tiny:seed42")


#: Every file ``write_tables`` writes for a dataset with vectors: the events a column per file.
ALL_FILES = [f"events.{i}.npy" for i in range(6)] + [
    "users.parquet", "tracks.parquet", "track_vectors.npy", "track_vector_ids.npy"]
#: The events' track_id column: a byte changed in its middle is one track id changed.
EVENTS_FILE = "events.3.npy"
#: One file of each kind, for the tests that damage one file at a time.
FILES = ["events.0.npy", EVENTS_FILE, "users.parquet", "tracks.parquet", "track_vectors.npy",
         "track_vector_ids.npy"]


@pytest.mark.parametrize("how", ["half", "garbage"])
@pytest.mark.parametrize("fname", FILES)
def test_damaged_tables_directory_names_the_file(tiny, tmp_path, fname, how):
    out = write_tables(tiny, tmp_path / "ds")
    damage(out / fname, how)
    for strict in (False, True):
        with pytest.raises(DataError) as info:
            read_tables(out, strict=strict)
        assert fname in str(info.value) or (fname == "track_vector_ids.npy"
                                            and "track_vector" in str(info.value))


def test_garbage_metadata_is_a_data_error(tiny, tmp_path):
    out = write_tables(tiny, tmp_path / "ds")
    meta = out / _parquet.META_FILE
    for text in ("{not json", json.dumps({"format": "evalrs-tables", "format_version": 1,
                                          "rows": [], "files": {}, "fingerprint": "x"})):
        meta.write_text(text)
        with pytest.raises(DataError, match="evalrs_tables.json"):
            read_tables(out)


def test_a_changed_byte_is_caught_by_the_content_check(tiny, tmp_path):
    out = write_tables(tiny, tmp_path / "ds")
    meta = json.loads((out / _parquet.META_FILE).read_text())
    assert set(meta["files"]) == set(ALL_FILES)
    assert all(len(f["sha256"]) == 64 for f in meta["files"].values())
    # an events column is stored raw: one byte in the middle is one value, and the file still
    # reads; same size, and the modification time put back
    path = out / EVENTS_FILE
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    back = read_tables(out)  # readable: the fingerprint is recomputed, not taken on trust
    assert back.fingerprint() != tiny.fingerprint()
    assert back._fingerprint == Tables(back.events, back.users, back.tracks,
                                       back.track_vectors).fingerprint()
    with pytest.raises(DataError, match=re.escape(EVENTS_FILE) + ".*sha256 mismatch"):
        read_tables(out, strict=True)


def test_intact_directory_reuses_the_stored_fingerprint(tiny, tmp_path):
    out = write_tables(tiny, tmp_path / "ds")
    back = read_tables(out, strict=True)
    assert back._fingerprint == tiny.fingerprint()  # set by the reader, identical


# --- files verified before are not hashed again (evaluation._util.verified) --------------------

def count_hashes(monkeypatch) -> list[str]:
    """The names of the files ``read_tables`` hashes from now on, in a list."""
    hashed = []
    real = _parquet.file_sha256

    def counting(path):
        hashed.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(_parquet, "file_sha256", counting)
    return hashed


@pytest.fixture
def verified_dir(tiny, tmp_path, monkeypatch):
    """A dataset directory read once, its files old enough to be remembered; and the list of
    the files hashed from then on."""
    own_cache(monkeypatch, tmp_path)
    settle(monkeypatch)
    out = write_tables(tiny, tmp_path / "ds")
    hashed = count_hashes(monkeypatch)
    assert read_tables(out, strict=True)._fingerprint == tiny.fingerprint()
    assert sorted(hashed) == sorted(ALL_FILES)  # the first read hashes every file
    hashed.clear()
    return out, hashed


def test_an_unchanged_directory_is_not_hashed_again(tiny, verified_dir):
    out, hashed = verified_dir
    for strict in (True, False):
        back = read_tables(out, strict=strict)
        assert hashed == []
        assert back._fingerprint == tiny.fingerprint()
        assert_tables_equal(back, tiny)
        assert back.fingerprint() == fresh_fingerprint(back)


@pytest.mark.parametrize("keep_mtime", [True, False])
def test_a_same_size_change_after_the_record_is_hashed_and_refused(tiny, verified_dir,
                                                                   keep_mtime):
    out, hashed = verified_dir
    path = out / EVENTS_FILE
    flip_byte_in_place(path, path.stat().st_size // 2, keep_mtime=keep_mtime)
    back = read_tables(out)  # readable: the fingerprint is recomputed, not taken on trust
    assert hashed == [EVENTS_FILE]
    assert back.fingerprint() != tiny.fingerprint()
    assert back._fingerprint == fresh_fingerprint(back)
    with pytest.raises(DataError, match=re.escape(EVENTS_FILE) + ".*sha256 mismatch"):
        read_tables(out, strict=True)
    assert hashed == [EVENTS_FILE] * 2  # a mismatch is never remembered


def test_a_file_replaced_by_a_copy_is_hashed_again(tiny, verified_dir):
    out, hashed = verified_dir
    replace_by_a_copy(out / "users.parquet")
    assert read_tables(out, strict=True)._fingerprint == tiny.fingerprint()
    assert hashed == ["users.parquet"]
    hashed.clear()
    read_tables(out, strict=True)  # the copy was remembered in turn
    assert hashed == []


def test_a_metadata_file_recording_other_content_is_not_taken_on_trust(tiny, verified_dir):
    out, hashed = verified_dir
    meta_path = out / _parquet.META_FILE
    meta = json.loads(meta_path.read_text())
    meta["files"]["tracks.parquet"]["sha256"] = "0" * 64
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(DataError, match="tracks.parquet.*sha256 mismatch"):
        read_tables(out, strict=True)
    assert hashed == ["tracks.parquet"]


@pytest.mark.parametrize("fname", FILES)
def test_a_missing_file_is_still_an_error_after_its_record(verified_dir, fname):
    out, _ = verified_dir
    (out / fname).unlink()
    for strict in (False, True):
        with pytest.raises(DataError) as info:
            read_tables(out, strict=strict)
        assert fname in str(info.value) or (fname == "track_vector_ids.npy"
                                            and "track_vector" in str(info.value))


def test_a_just_written_directory_is_not_remembered(tiny, tmp_path, monkeypatch):
    cache = own_cache(monkeypatch, tmp_path)
    # every file counts as changed within the racy window (here an hour, so that a slow test
    # machine cannot make it pass by accident; the real window is 2 s)
    monkeypatch.setattr(verified, "RACY_NS", 3600 * 10**9)
    out = write_tables(tiny, tmp_path / "ds")
    hashed = count_hashes(monkeypatch)
    for _ in range(2):
        assert read_tables(out, strict=True)._fingerprint == tiny.fingerprint()
    assert sorted(hashed) == sorted(ALL_FILES * 2)
    assert records(cache) == []


def test_full_verification_hashes_every_time(tiny, verified_dir, monkeypatch):
    out, hashed = verified_dir
    monkeypatch.setenv("EVALRS_VERIFY", "full")
    for _ in range(2):
        assert read_tables(out, strict=True)._fingerprint == tiny.fingerprint()
    assert sorted(hashed) == sorted(ALL_FILES * 2)


def test_garbled_records_are_ignored(tiny, verified_dir, tmp_path):
    out, hashed = verified_dir
    found = records(tmp_path / "cache")
    assert len(found) == len(ALL_FILES)
    for i, record in enumerate(found):
        record.write_text(["{not json", "[]", "", "null", '{"path": 1}'][i % 5])
    back = read_tables(out, strict=True)
    assert sorted(hashed) == sorted(ALL_FILES)
    assert back._fingerprint == tiny.fingerprint()
    assert_tables_equal(back, tiny)
    hashed.clear()
    read_tables(out, strict=True)  # the records were written again
    assert hashed == []


@pytest.mark.parametrize("how", ["half", "garbage"])
def test_local_loader_damaged_parquet_names_the_file(tiny, tmp_path, how):
    root = tmp_path / "local"
    root.mkdir()
    tiny.events.to_parquet(root / "events.parquet")
    tiny.users.to_parquet(root / "users.parquet")
    tiny.tracks.to_parquet(root / "tracks.parquet")
    assert len(read_table_file(root / "users.parquet")) == len(tiny.users)
    damage(root / "users.parquet", how)
    with pytest.raises(DataError, match="users.parquet"):
        read_table_file(root / "users.parquet")
    with pytest.raises(DataError, match="users.parquet"):
        load_local(root)


# --- the synthetic dataset's cache ------------------------------------------------------------

def regenerated(tiny, fname: str) -> None:
    with pytest.warns(SyntheticCacheWarning, match=fname.replace(".", r"\.")):
        got = synthetic_tables("tiny", 42)
    assert got.fingerprint() == tiny.fingerprint()
    again = read_tables(synthetic_cache_path("tiny", 42), strict=True)  # the cache was rewritten
    assert again._fingerprint == tiny.fingerprint()


@pytest.fixture
def cached(tiny):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntheticCacheWarning)
        synthetic_tables("tiny", 42)
    path = synthetic_cache_path("tiny", 42)
    read_tables(path, strict=True)  # intact
    return path


@pytest.mark.parametrize("how", ["half", "garbage"])
@pytest.mark.parametrize("fname", FILES)
def test_damaged_cache_is_regenerated_with_a_warning(tiny, cached, fname, how):
    damage(cached / fname, how)
    regenerated(tiny, fname)


@pytest.mark.parametrize("fname", FILES)
def test_cache_with_a_missing_file_is_regenerated(tiny, cached, fname):
    (cached / fname).unlink()
    regenerated(tiny, fname)


def test_cache_file_from_another_dataset_is_regenerated(tiny, cached):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntheticCacheWarning)
        synthetic_tables("tiny", 7)
    other = synthetic_cache_path("tiny", 7)
    # same kind of file, same row count (the users of every tiny dataset): only the content
    # tells them apart
    (cached / "users.parquet").write_bytes((other / "users.parquet").read_bytes())
    regenerated(tiny, "users.parquet")


def test_cache_with_a_changed_byte_is_regenerated(tiny, cached):
    path = cached / EVENTS_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    regenerated(tiny, EVENTS_FILE)


def test_cache_written_without_hashes_is_regenerated(tiny, cached):
    meta_path = cached / _parquet.META_FILE
    meta = json.loads(meta_path.read_text())
    for entry in meta["files"].values():
        del entry["sha256"]
    meta_path.write_text(json.dumps(meta))
    regenerated(tiny, "no sha256")


def test_intact_cache_is_read_without_a_warning(tiny, cached, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("an intact cache must not be regenerated")

    monkeypatch.setattr(_synthetic, "generate_tables", boom)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = synthetic_tables("tiny", 42)
    assert got.fingerprint() == tiny.fingerprint()
