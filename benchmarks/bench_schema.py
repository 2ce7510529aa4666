"""Schema validation at scale: ``validate_tables`` next to a plain pandas reference.

Runs on the cached synthetic dataset (generated first if absent) in three row orders, since
the duplicate-pair check has a path for each: as generated (each user's rows together, in
time order), sorted by (user_id, track_id), and fully shuffled. The reference does the same
checks the obvious pandas way (``duplicated``, ``isin``, comparisons). Prints the best of
``--repeat`` timings, the ratio, and the peak memory that validation adds (tracemalloc, in a
separate untimed pass). Usage::

    python benchmarks/bench_schema.py [--scale full] [--seed 42] [--repeat 3] [--no-shuffled]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from evaluation.data import Tables, synthetic_tables, validate_tables  # noqa: E402


def reference(t: Tables) -> None:
    """The same rules, written the obvious pandas way (no dtype canonicalisation)."""
    ev = t.events
    for frame in (ev, t.users, t.tracks):
        if len(frame) == 0:
            raise ValueError("empty")
    for col in ("user_id", "artist_id", "album_id", "track_id", "timestamp",
                "user_track_count"):
        if not pd.api.types.is_integer_dtype(ev[col]):
            raise ValueError(col)
    if (ev["user_track_count"] < 0).any() or (ev[["user_id", "track_id"]] < 0).any().any():
        raise ValueError("negative")
    if t.users.index.duplicated().any() or t.tracks.index.duplicated().any():
        raise ValueError("duplicate ids")
    if ev.duplicated(["user_id", "track_id"]).any():
        raise ValueError("duplicate pairs")
    if not ev["user_id"].isin(t.users.index).all() or not ev["track_id"].isin(
            t.tracks.index).all():
        raise ValueError("unknown ids")
    if t.track_vectors is not None and not np.isfinite(t.track_vectors.vectors).all():
        raise ValueError("vectors")


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-shuffled", action="store_true", help="skip the shuffled order")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.scale, args.repeat = "tiny", 1

    raw = synthetic_tables(args.scale, args.seed)
    print(f"{args.scale} synthetic, seed {args.seed}: {len(raw.events):,} event rows, "
          f"{len(raw.users):,} users, {len(raw.tracks):,} tracks")
    base = validate_tables(raw)  # canonical dtypes, as every source returns them
    orders = {"as generated (user blocks)": base.events}
    keys = np.lexsort((base.events["track_id"].to_numpy(), base.events["user_id"].to_numpy()))
    orders["sorted by (user, track)"] = base.events.take(keys).reset_index(drop=True)
    del keys
    if not args.no_shuffled:
        perm = np.random.default_rng(0).permutation(len(base.events))
        orders["shuffled"] = base.events.take(perm).reset_index(drop=True)
        del perm

    print(f"{'row order':<30}{'validate_tables':>17}{'pandas reference':>18}{'ratio':>8}"
          f"{'peak added':>12}")
    for label, events in orders.items():
        tables = Tables(events, base.users, base.tracks, base.track_vectors)
        ours = best(lambda t=tables: validate_tables(t), args.repeat)
        ref = best(lambda t=tables: reference(t), 1)
        peak = peak_mib(lambda t=tables: validate_tables(t))
        print(f"{label:<30}{ours:>16.3f}s{ref:>17.3f}s{ref / ours:>7.1f}x{peak:>9.0f} MiB",
              flush=True)


if __name__ == "__main__":
    main()
