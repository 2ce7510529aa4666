"""Temporal split, leakage audit and bias model, side by side with plain pandas references.

    python benchmarks/bench_protocols.py [--scale small|full] [--seed 42] [--ratio 0.2]

On the synthetic LFM-shaped events (cached after the first run):

* ``temporal_user_split`` against a pandas reference (``sort_values`` by user, time, track,
  then ``groupby().cumcount()``), checked to give the same test rows;
* ``audit_leakage`` on that split (no reference: the counts are checked by the tests);
* ``BiasModel`` fit (10 ALS sweeps over play counts) against a pandas ``groupby`` reference
  sweep for sweep, and its top-100 predictions for every test user.

Prints seconds and the reference/fast ratios. No targets: these are reported, not gated.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.baselines import BiasModel
from evaluation.data import synthetic_tables
from evaluation.splits import audit_leakage, temporal_user_split


def reference_split(events: pd.DataFrame, ratio: float, min_events: int) -> np.ndarray:
    """Row positions of the test events, the pandas way."""
    frame = events[["user_id", "timestamp", "track_id"]].reset_index(drop=True)
    frame = frame.sort_values(["user_id", "timestamp", "track_id"], kind="stable")
    n = frame.groupby("user_id")["user_id"].transform("size").to_numpy()
    pos = frame.groupby("user_id").cumcount().to_numpy()
    n_test = np.where(n >= min_events,
                      np.minimum(n - 1, np.maximum(1, np.floor(ratio * n + 1e-9))), 0)
    return np.sort(frame.index.to_numpy()[pos >= n - n_test])


def reference_biases(frame: pd.DataFrame, reg_u: float, reg_i: float, sweeps: int):
    r = frame["user_track_count"].astype(float)
    mu = r.mean()
    b_u = pd.Series(0.0, index=pd.unique(frame["user_id"]))
    b_i = None
    for _ in range(sweeps):
        resid = r - mu - frame["user_id"].map(b_u).to_numpy()
        g = resid.groupby(frame["track_id"].to_numpy())
        b_i = g.sum() / (g.size() + reg_i)
        resid = r - mu - frame["track_id"].map(b_i).to_numpy()
        g = resid.groupby(frame["user_id"].to_numpy())
        b_u = g.sum() / (g.size() + reg_u)
    return mu, b_u, b_i


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--ratio", type=float, default=0.2)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.scale = "tiny"

    events = synthetic_tables(args.scale, args.seed).events
    print(f"events: {len(events):,} rows, {events['user_id'].nunique():,} users "
          f"(synthetic {args.scale}, seed {args.seed})")

    split, fast = timed(temporal_user_split, events, args.ratio, min_events=5)
    ref_rows, slow = timed(reference_split, events, args.ratio, 5)
    same = np.array_equal(np.sort(events.index.get_indexer(split.test.index)), ref_rows)
    print(f"temporal_user_split  fast {fast:7.2f} s   pandas {slow:7.2f} s   "
          f"ratio {slow / fast:5.1f}x   same test rows: {same}")

    audit, t_audit = timed(audit_leakage, split)
    print(f"audit_leakage        {t_audit:7.2f} s   "
          f"({audit.train_events_after_cut:,} train events after the first test event)")

    model = BiasModel()
    _, fit = timed(model.train, split.train)
    (mu, b_u, b_i), slow_fit = timed(reference_biases, split.train, 15.0, 10.0, 10)
    close = np.allclose(model.item_bias, b_i.reindex(model.item_ids).to_numpy())
    print(f"BiasModel.train      fast {fit:7.2f} s   pandas {slow_fit:7.2f} s   "
          f"ratio {slow_fit / fit:5.1f}x   same biases: {close}")
    users = pd.DataFrame({"user_id": np.unique(split.test["user_id"])})
    _, pred = timed(model.predict, users)
    print(f"BiasModel.predict    {pred:7.2f} s   top-100 for {len(users):,} users "
          f"({len(users) / pred:,.0f} users/s)")


if __name__ == "__main__":
    main()
