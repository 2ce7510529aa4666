"""Tables the data tests share: a hand-written valid one, the real HetRec Last.fm file mapped
onto the schema, and how two tables are compared (exactly, the fingerprint hashed afresh)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from evaluation.data import Tables, TrackVectors


def good_tables(vectors: bool = True) -> Tables:
    events = pd.DataFrame({
        "user_id": [1, 1, 2, 3, 3],
        "artist_id": [10, 11, 10, 12, 11],
        "album_id": [100, 101, 100, 102, 101],
        "track_id": [1000, 1001, 1000, 1002, 1001],
        "timestamp": [1_300_000_000, 1_300_000_100, 1_300_000_200, 1_300_000_300,
                      1_300_000_400],
        "user_track_count": [3, 1, 2, 5, 7],
    })
    users = pd.DataFrame({
        "country": ["US", None, "NA"],
        "age": [20.0, np.nan, 31.0],
        "gender": ["m", "f", None],
        "playcount": [4, 2, 12],
        "timestamp": [1_200_000_000, 1_200_000_100, 1_200_000_200],
    }, index=pd.Index([1, 2, 3], name="user_id"))
    tracks = pd.DataFrame({
        "track": ["a", "b", "c"],
        "artist_id": [10, 11, 12],
        "artist": ["A", "B", "C"],
        "albums": ["['x']", "['y']", "['z']"],
        "albums_id": ["[100]", "[101]", "[102]"],
    }, index=pd.Index([1000, 1001, 1002], name="track_id"))
    tv = None
    if vectors:
        tv = TrackVectors(np.array([1002, 1000, 1001]), np.arange(12, dtype=float).reshape(3, 4))
    return Tables(events, users, tracks, tv, source="hand")


def hetrec_tables(root: Path) -> Tables:
    """HetRec 2011 Last.fm: artists play the tracks' role, ``weight`` is the play count."""
    plays = pd.read_csv(root / "user_artists.dat", sep="\t", header=None,
                        names=["user_id", "artist_id", "weight"])
    artists = pd.read_csv(root / "artists.dat", sep="\t", usecols=["id", "name"],
                          quoting=3, dtype={"name": "str"})
    events = pd.DataFrame({
        "user_id": plays["user_id"], "artist_id": plays["artist_id"],
        "album_id": plays["artist_id"], "track_id": plays["artist_id"], "timestamp": 0,
        "user_track_count": plays["weight"],
    })
    played = plays.groupby("user_id")["weight"].sum()
    users = pd.DataFrame({"country": pd.Series(np.nan, index=played.index, dtype="str"),
                          "age": np.nan, "gender": pd.Series(np.nan, index=played.index,
                                                             dtype="str"),
                          "playcount": played, "timestamp": 0})
    name, ids = artists["name"].to_numpy(), artists["id"].to_numpy()
    tracks = pd.DataFrame({"track": name, "artist_id": ids, "artist": name, "albums": name,
                           "albums_id": ids}, index=pd.Index(ids, name="track_id"))
    return Tables(events, users, tracks, source="hetrec2011-lastfm-2k")


def assert_tables_equal(a: Tables, b: Tables) -> None:
    for name in ("events", "users", "tracks"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    np.testing.assert_array_equal(a.track_vectors.track_ids, b.track_vectors.track_ids)
    np.testing.assert_array_equal(a.track_vectors.vectors, b.track_vectors.vectors)


def fresh_fingerprint(t: Tables) -> str:
    """The fingerprint hashed from scratch (no cached or stored value)."""
    return Tables(t.events, t.users, t.tracks, t.track_vectors).fingerprint()
