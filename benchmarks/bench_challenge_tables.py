"""The cost of the challenge's own columns, and of pickling a dataset.

Part 1 builds users and tracks tables of the real data's size (119,555 users, 820,998 tracks)
with the challenge files' columns (the 2022 users' profile statistics, ``country_id``,
``gender_id``; the 2023 tracks' ``urlSong`` and ``lastfm_id``), validates them as the ``lfm``
source does, and prints the memory of the tables with the schema's columns only (what the
harness kept before) and with every column. Part 2 builds a ``ChallengeDataset`` with its
folds and times ``pickle.dumps`` / ``pickle.loads`` against that build. Usage::

    python benchmarks/bench_challenge_tables.py [--scale small] [--users 119555] [--smoke]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._challenge_files import PROFILE_COLUMNS, PROFILE_COUNTS  # noqa: E402
from evaluation import ChallengeDataset  # noqa: E402
from evaluation.data import Tables, validate_tables  # noqa: E402

SCHEMA_USERS = ["country", "age", "gender", "playcount", "registered_unixtime"]
SCHEMA_TRACKS = ["track", "artist_id", "artist", "albums", "albums_id"]


def challenge_tables(n_users: int, n_tracks: int, seed: int = 0) -> Tables:
    """Tables shaped like the challenge's (values random, one event per user)."""
    rng = np.random.default_rng(seed)
    users = pd.DataFrame({
        "user_id": np.arange(n_users), "country": rng.choice(["US", "UK", "DE", None], n_users),
        "age": rng.integers(-1, 70, n_users), "gender": rng.choice(["m", "f", "n"], n_users),
        "playcount": rng.integers(0, 10**5, n_users),
        "registered_unixtime": rng.integers(1.1e9, 1.4e9, n_users),
    })
    for name in PROFILE_COLUMNS:
        users[name] = (rng.integers(0, 10**5, n_users) if name in PROFILE_COUNTS
                       else rng.random(n_users))
    users["country_id"] = rng.integers(-1, 200, n_users)
    users["gender_id"] = rng.integers(-1, 3, n_users)
    ids = np.arange(n_tracks)
    tracks = pd.DataFrame({
        "track_id": ids, "track": [f"title {i}" for i in ids], "artist_id": ids // 10,
        "artist": [f"artist {i // 10}" for i in ids], "albums": ["['an album']"] * n_tracks,
        "albums_id": ["[17]"] * n_tracks,
        "urlSong": [f"wasabi/song/5714dec{i:017x}" for i in ids], "lastfm_id": ids + 10**6,
    })
    events = pd.DataFrame({"user_id": np.arange(n_users), "artist_id": 0, "album_id": 0,
                           "track_id": np.arange(n_users) % n_tracks, "timestamp": 1.4e9,
                           "user_track_count": 1}).astype(np.int64)
    return validate_tables(Tables(events, users, tracks))


def mib(frame: pd.DataFrame) -> float:
    return frame.memory_usage(deep=True).sum() / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=119_555)
    ap.add_argument("--tracks", type=int, default=820_998)
    ap.add_argument("--scale", default="small", help="synthetic scale for the pickling part")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run (2,000 users, 5,000 tracks, the tiny scale): checks "
                         "that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.users, args.tracks, args.scale = 2_000, 5_000, "tiny"

    t = challenge_tables(args.users, args.tracks)
    for name, frame, schema in (("users", t.users, SCHEMA_USERS),
                                ("tracks", t.tracks, SCHEMA_TRACKS)):
        before, after = mib(frame[schema]), mib(frame)
        print(f"{name}: {len(frame):,} rows, {len(schema)} -> {frame.shape[1]} columns: "
              f"{before:.1f} MiB -> {after:.1f} MiB (+{after - before:.1f} MiB)")

    t0 = time.perf_counter()
    ds = ChallengeDataset(scale=args.scale, fold_cache=False)
    ds.compute_folds()
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = pickle.dumps(ds, protocol=pickle.HIGHEST_PROTOCOL)
    dumped = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = pickle.loads(data)
    loaded = time.perf_counter() - t0
    assert back.fingerprint == ds.fingerprint
    print(f"ChallengeDataset(scale={args.scale!r}) with its folds: built in {built:.2f} s; "
          f"pickled in {dumped:.3f} s ({len(data) / 2**20:.0f} MiB), unpickled in "
          f"{loaded:.3f} s")


if __name__ == "__main__":
    main()
