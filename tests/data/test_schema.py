"""The schema validator: one test per rule (message names file, column, values), canonical dtypes,
and the fast duplicate-pair finder against pandas."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.data import Tables, TrackVectors, validate_tables
from evaluation.data._pairs import duplicate_key_rows
from evaluation.data._schema import known_mask
from evaluation.errors import DataError
from tests.data._tables import good_tables

FILES = {"events": "ev.csv", "users": "us.csv", "tracks": "tr.csv", "track_vectors": "vec.wv"}


def with_(tables: Tables, **changes) -> Tables:
    parts = dict(events=tables.events, users=tables.users, tracks=tables.tracks,
                 track_vectors=tables.track_vectors, source=tables.source)
    parts.update(changes)
    return Tables(**parts)


def expect(tables: Tables, *fragments: str, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        validate_tables(tables, files=FILES, **kwargs)
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, f"{fragment!r} not in {msg!r}"
    assert "Fix:" in msg
    return msg


# --- the valid case and canonical dtypes -------------------------------------------------------

def test_valid_tables_pass_and_are_canonical():
    out = validate_tables(good_tables(), files=FILES)
    assert all(out.events[c].dtype == np.int32 for c in out.events.columns)
    assert isinstance(out.events.index, pd.RangeIndex)
    assert out.users.index.name == "user_id" and out.users.index.dtype == np.int32
    assert out.tracks.index.name == "track_id" and out.tracks.index.dtype == np.int32
    assert out.users["age"].dtype == np.float64
    assert out.users["playcount"].dtype == np.int32
    for frame, col in [(out.users, "country"), (out.users, "gender"), (out.tracks, "track"),
                       (out.tracks, "albums_id")]:
        assert frame[col].dtype == "str", col
    # "NA" is Namibia, None is missing
    assert out.users["country"].tolist()[2] == "NA" and out.users["country"].isna().tolist() == [
        False, True, False]
    assert out.track_vectors.track_ids.tolist() == [1000, 1001, 1002]
    np.testing.assert_array_equal(out.track_vectors.lookup([1002])[0][0], [0, 1, 2, 3])


def test_canonical_dtypes_make_fingerprints_independent_of_storage():
    base = validate_tables(good_tables())
    t = good_tables()
    wide = with_(
        t,
        events=t.events.astype("int64").astype({"user_track_count": "float64"}),
        users=t.users.reset_index().astype({"user_id": "int64", "gender": object}),
        tracks=t.tracks.astype({"artist_id": "uint16"}),
    )
    again = validate_tables(wide)
    assert again.fingerprint() == base.fingerprint()
    assert again.events["user_track_count"].dtype == np.int32


def test_int64_kept_where_values_do_not_fit_int32():
    t = good_tables()
    ev = t.events.copy()
    ev["timestamp"] = ev["timestamp"] + 2**32
    out = validate_tables(with_(t, events=ev))
    assert out.events["timestamp"].dtype == np.int64
    assert out.events["user_id"].dtype == np.int32


def test_datetime_timestamps_become_unix_seconds():
    t = good_tables()
    ev = t.events.copy()
    ev["timestamp"] = pd.to_datetime(ev["timestamp"], unit="s")
    out = validate_tables(with_(t, events=ev))
    assert out.events["timestamp"].tolist() == t.events["timestamp"].tolist()


def test_fingerprint_carried_over_when_nothing_changes():
    canon = validate_tables(good_tables())
    canon.fingerprint()
    again = validate_tables(canon)
    assert again._fingerprint == canon._fingerprint


def test_user_id_as_column_is_accepted():
    t = good_tables()
    out = validate_tables(with_(t, users=t.users.reset_index()))
    assert out.users.index.name == "user_id"


def test_optional_rating_column_is_kept_as_float():
    t = good_tables()
    out = validate_tables(with_(t, events=t.events.assign(rating=[4.5, 1, 2, 5, 3])))
    assert out.events["rating"].dtype == np.float64
    assert list(out.events.columns)[-1] == "rating"


# --- one test per rule -------------------------------------------------------------------------

def test_not_a_dataframe():
    expect(with_(good_tables(), users=[1, 2]), "us.csv", "DataFrame, got list")


def test_missing_column():
    t = good_tables()
    expect(with_(t, events=t.events.drop(columns="timestamp")), "ev.csv", "'timestamp'",
           "missing")


def test_missing_key_column_or_index():
    t = good_tables()
    expect(with_(t, tracks=t.tracks.reset_index(drop=True)), "tr.csv", "'track_id'",
           "missing")


def test_extra_columns_are_kept_with_canonical_dtypes():
    t = good_tables()
    users = t.users.assign(novelty=[0.5, np.nan, 0.25], country_id=np.array([3, -1, 4]),
                           label=["a", None, "c"])
    out = validate_tables(with_(t, users=users), files=FILES)
    assert list(out.users.columns) == [*t.users.columns, "novelty", "country_id", "label"]
    assert out.users["country_id"].dtype == np.int32
    assert out.users["country_id"].tolist() == [3, -1, 4]
    assert out.users["novelty"].dtype == np.float64 and out.users["novelty"].isna().sum() == 1
    assert out.users["label"].dtype == "str" and out.users["label"].isna().sum() == 1
    # the tracks keep theirs too (the 2023 lastfm_id)
    tracks = t.tracks.assign(lastfm_id=np.array([7, 8, 9]))
    assert validate_tables(with_(t, tracks=tracks)).tracks["lastfm_id"].dtype == np.int32


def test_registration_column_by_the_challenge_name():
    t = good_tables()
    users = t.users.rename(columns={"timestamp": "registered_unixtime"})
    out = validate_tables(with_(t, users=users), files=FILES)
    assert "timestamp" not in out.users.columns
    assert out.users["registered_unixtime"].dtype == np.int32
    expect(with_(t, users=users.drop(columns="registered_unixtime")), "us.csv", "'timestamp'",
           "missing")
    expect(with_(t, users=users.assign(registered_unixtime="x")), "us.csv",
           "'registered_unixtime'", "strings")


def test_integer_ages_stay_integers():
    t = good_tables()
    out = validate_tables(with_(t, users=t.users.assign(age=np.array([20, -1, 31]))))
    assert out.users["age"].dtype == np.int32 and out.users["age"].tolist() == [20, -1, 31]


def test_empty_table():
    t = good_tables()
    expect(with_(t, events=t.events.iloc[:0]), "ev.csv", "empty")
    expect(with_(t, tracks=t.tracks.iloc[:0]), "tr.csv", "empty")


def test_strings_in_integer_column():
    t = good_tables()
    ev = t.events.astype({"user_track_count": object})
    ev.loc[3, "user_track_count"] = "5x"
    msg = expect(with_(t, events=ev), "ev.csv", "'user_track_count'", "strings", "'5x'")
    assert "rows [3]" in msg
    # numeric-looking strings are strings too: the file's type is wrong
    ev2 = t.events.astype({"track_id": "str"})
    expect(with_(t, events=ev2), "ev.csv", "'track_id'", "strings", "'1000'")


def test_floats_that_are_not_whole():
    t = good_tables()
    ev = t.events.astype({"user_track_count": float})
    ev.loc[1, "user_track_count"] = 1.5
    expect(with_(t, events=ev), "ev.csv", "'user_track_count'", "not whole", "1.5", "rows [1]")


def test_missing_values_in_integer_column():
    t = good_tables()
    us = t.users.astype({"playcount": float})
    us.loc[2, "playcount"] = np.nan
    expect(with_(t, users=us), "us.csv", "'playcount'", "missing values", "rows [1]")


def test_booleans_in_integer_column():
    t = good_tables()
    expect(with_(t, events=t.events.assign(user_track_count=True)), "ev.csv",
           "'user_track_count'", "booleans")


def test_strings_in_float_column():
    t = good_tables()
    expect(with_(t, users=t.users.assign(age=["20", "x", None])), "us.csv", "'age'", "strings",
           "'20'")


def test_duplicate_user_ids():
    t = good_tables()
    us = pd.concat([t.users, t.users.iloc[[1]]])
    expect(with_(t, users=us), "us.csv", "'user_id'", "duplicate", "[2]")


def test_duplicate_track_ids():
    t = good_tables()
    tr = pd.concat([t.tracks.iloc[[2]], t.tracks])
    expect(with_(t, tracks=tr), "tr.csv", "'track_id'", "duplicate", "[1002]")


@pytest.mark.parametrize("order", ["sorted", "grouped", "scattered"])
def test_duplicate_user_track_pairs(order):
    t = good_tables()
    ev = pd.concat([t.events, t.events.iloc[[3]]], ignore_index=True)
    if order == "sorted":
        ev = ev.sort_values(["user_id", "track_id"], kind="stable", ignore_index=True)
    elif order == "scattered":
        ev = ev.iloc[[5, 0, 3, 1, 2, 4]].reset_index(drop=True)
    msg = expect(with_(t, events=ev), "ev.csv", "'user_id, track_id'", "duplicate",
                 "(3, 1002)")
    assert re.search(r"rows \[\d+, \d+\]", msg)


def test_negative_counts():
    t = good_tables()
    ev = t.events.assign(user_track_count=[3, -1, 2, -4, 7])
    expect(with_(t, events=ev), "ev.csv", "'user_track_count'", ">= 0", "-1, -4", "rows [1, 3]")
    expect(with_(t, users=t.users.assign(playcount=[1, -2, 3])), "us.csv", "'playcount'",
           "-2")


def test_negative_ids():
    t = good_tables()
    ev = t.events.assign(user_id=[1, 1, 2, 3, -3])
    expect(with_(t, events=ev), "ev.csv", "'user_id'", ">= 0", "[-3]", "rows [4]")
    tr = t.tracks.set_axis(pd.Index([1000, -1, 1002], name="track_id"))
    expect(with_(t, tracks=tr), "tr.csv", "'track_id'", "-1 is reserved", "[-1]")
    # artist/album ids are only grouped on: a source's own "unknown" code is allowed
    validate_tables(with_(t, events=t.events.assign(album_id=[100, -1, 100, 102, 101])))


def test_events_with_unknown_users():
    t = good_tables()
    expect(with_(t, users=t.users.drop(index=2)), "ev.csv", "'user_id'", "us.csv", "[2]")


@pytest.mark.parametrize("scale", [1, 10**9])  # dense table and searchsorted paths
def test_events_with_unknown_tracks(scale):
    t = good_tables(vectors=False)
    ev = t.events.assign(track_id=t.events["track_id"] * scale)
    tr = t.tracks.set_axis(pd.Index(t.tracks.index * scale, name="track_id"))
    ev.loc[4, "track_id"] = 999 * scale
    msg = expect(with_(t, events=ev, tracks=tr), "ev.csv", "'track_id'", "tr.csv",
                 f"[{999 * scale}]", "rows [4]")
    assert "1 rows point at ids" in msg


def test_gender_values():
    t = good_tables()
    expect(with_(t, users=t.users.assign(gender=["M", "f", "x"])), "us.csv", "'gender'",
           "'M', 'x'")


def test_non_finite_ratings():
    t = good_tables()
    expect(with_(t, events=t.events.assign(rating=[1, np.nan, 2, 3, 4])), "ev.csv", "'rating'",
           "finite", "rows [1]")


def test_vectors_of_the_wrong_dimension():
    msg = expect(good_tables(), "vec.wv", "'vector'", "dimension 8", "[4]", vector_dim=8)
    assert "Fix: provide 8-dimensional" in msg
    t = good_tables()
    empty = TrackVectors(np.array([1000]), np.zeros((1, 0)))
    expect(with_(t, track_vectors=empty), "vec.wv", "at least one dimension")


def test_vectors_with_non_finite_values():
    vecs = np.ones((3, 4))
    vecs[1, 2] = np.inf
    t = with_(good_tables(), track_vectors=TrackVectors(np.array([1000, 1001, 1002]), vecs))
    expect(t, "vec.wv", "non-finite", "[1001]")


def test_vectors_with_duplicate_ids():
    t = with_(good_tables(), track_vectors=TrackVectors(np.array([1000, 1001, 1001]),
                                                        np.ones((3, 4))))
    expect(t, "vec.wv", "'track_id'", "duplicate", "[1001]")


def test_vectors_for_unknown_tracks():
    t = with_(good_tables(), track_vectors=TrackVectors(np.array([1000, 5, 1002]),
                                                        np.ones((3, 4))))
    expect(t, "vec.wv", "'track_id'", "tr.csv", "[5]")


def test_messages_default_to_table_names():
    t = good_tables()
    with pytest.raises(DataError, match="events table, column 'track_id'"):
        validate_tables(with_(t, events=t.events.drop(columns="track_id")))


# --- the fast kernels against obviously-correct references ------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12)), min_size=1, max_size=80),
       st.sampled_from(["as is", "grouped", "sorted"]))
def test_duplicate_finder_matches_pandas(pairs, order):
    frame = pd.DataFrame(pairs, columns=["u", "t"])
    if order == "grouped":
        frame = frame.sort_values("u", kind="stable")
    elif order == "sorted":
        frame = frame.sort_values(["u", "t"], kind="stable")
    u, t = frame["u"].to_numpy(np.int32), frame["t"].to_numpy(np.int32)
    rows = duplicate_key_rows(u, t)
    if frame.duplicated().any():
        assert rows is not None and rows[0] != rows[1]
        assert u[rows[0]] == u[rows[1]] and t[rows[0]] == t[rows[1]]
    else:
        assert rows is None


def test_duplicate_finder_on_many_rows(rng):
    n = 200_000
    u = np.sort(rng.integers(0, 2_000, n)).astype(np.int32)
    t = rng.integers(0, 50_000, n).astype(np.int32)
    keep = ~pd.DataFrame({"u": u, "t": t}).duplicated().to_numpy()
    u, t = u[keep], t[keep]
    assert duplicate_key_rows(u, t) is None  # grouped by user
    perm = rng.permutation(len(u))
    assert duplicate_key_rows(u[perm], t[perm]) is None  # scattered
    t2 = t.copy()
    t2[-1] = t2[-2]
    u2 = u.copy()
    u2[-1] = u2[-2]
    rows = duplicate_key_rows(u2[perm], t2[perm])
    assert sorted(perm[rows].tolist()) == [len(u) - 2, len(u) - 1]


def test_known_mask_matches_isin(rng):
    known = rng.choice(10_000, 3_000, replace=False)
    ids = rng.integers(-5, 10_010, 5_000)
    np.testing.assert_array_equal(known_mask(ids, known), np.isin(ids, known))
    np.testing.assert_array_equal(known_mask(ids * 10**9, known * 10**9),
                                  np.isin(ids * 10**9, known * 10**9))


def test_validation_recorded_by_fingerprint():
    canon = validate_tables(good_tables())
    fp = canon.fingerprint()
    wide = with_(canon, events=canon.events.astype("int64"))
    wide._fingerprint = "f" * 64  # as read_tables sets it for a cached directory
    first = validate_tables(wide)  # full checks, then recorded
    assert first._fingerprint == fp
    # Same recorded content: the event-sized scans are skipped, the result is the same.
    again = with_(canon, events=canon.events.astype("int64"))
    again._fingerprint = "f" * 64
    out = validate_tables(again)
    assert out._fingerprint == fp and out.fingerprint() == fp
    # Unknown content is scanned: duplicates are found.
    dup = with_(canon, events=pd.concat([canon.events, canon.events.iloc[[0]]],
                                        ignore_index=True))
    dup._fingerprint = "e" * 64
    with pytest.raises(DataError, match="duplicate"):
        validate_tables(dup)
