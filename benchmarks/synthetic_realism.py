"""Per-fold statistics of a synthetic dataset next to those of the real LFM data.

Folds as in the challenge: a 25 % user sample, an iterative k-core (tracks, then users, k=10,
at most 10 rounds), one test row per user removed. Usage::

    python benchmarks/synthetic_realism.py [--scale full] [--seed 42] [--folds 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled
from evaluation.data import synthetic_tables

# Measured on the 2022/2023 challenge data (per fold) and on the full users table.
TARGETS = {
    "test users": 29_700, "train rows": 6_900_000,
    "users/track min": 8, "users/track median": 17, "users/track mean": 30,
    "users/track p90": 59, "users/track max": 1_600,
    "rows/user mean": 230, "rows/user median": 237, "rows/user p90": 372, "rows/user max": 500,
}


def fold_stats(user: np.ndarray, track: np.ndarray, seed: int, frac: float = 0.25,
               k: int = 10) -> dict:
    """Statistics of one fold of ``(user, track)`` rows (dense 0-based codes)."""
    rng = np.random.default_rng(seed)
    n_users = int(user.max()) + 1
    chosen = np.zeros(n_users, dtype=bool)
    chosen[rng.choice(n_users, int(round(frac * n_users)), replace=False)] = True
    keep = chosen[user]
    u, t = user[keep], track[keep]
    for _ in range(10):
        tc = np.bincount(t)
        ok = tc[t] >= k
        u, t = u[ok], t[ok]
        uc = np.bincount(u)
        ok2 = uc[u] >= k
        u, t = u[ok2], t[ok2]
        if ok.all() and ok2.all():
            break
    # One test row per user: the row with the smallest random key within its user.
    r = rng.random(len(u))
    order = np.lexsort((r, u))
    first = np.ones(len(u), dtype=bool)
    first[1:] = u[order][1:] != u[order][:-1]
    train = np.ones(len(u), dtype=bool)
    train[order[first]] = False
    ut, tt = u[train], t[train]
    per_track = np.bincount(tt)
    per_track = per_track[per_track > 0]
    per_user = np.bincount(ut)
    per_user = per_user[per_user > 0]
    return {
        "test users": int(first.sum()), "train rows": int(train.sum()),
        "users/track min": int(per_track.min()),
        "users/track median": float(np.median(per_track)),
        "users/track mean": float(per_track.mean()),
        "users/track p90": float(np.percentile(per_track, 90)),
        "users/track max": int(per_track.max()),
        "rows/user mean": float(per_user.mean()), "rows/user median": float(np.median(per_user)),
        "rows/user p90": float(np.percentile(per_user, 90)), "rows/user max": int(per_user.max()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.scale = "tiny"
    t0 = time.perf_counter()
    tables = synthetic_tables(args.scale, args.seed)
    print(f"{args.scale} seed {args.seed}: loaded/generated in {time.perf_counter() - t0:.1f} s")
    ev, users = tables.events, tables.users
    print(f"users {len(users):,}  tracks {len(tables.tracks):,}  rows {len(ev):,}")
    user = np.unique(ev["user_id"].to_numpy(), return_inverse=True)[1]
    track = np.unique(ev["track_id"].to_numpy(), return_inverse=True)[1]
    folds = [fold_stats(user, track, args.seed + f) for f in range(args.folds)]
    scale = len(users) / 119_555
    print(f"{'statistic':<20}{'target':>12}" + "".join(f"{'fold ' + str(i):>12}"
                                                      for i in range(args.folds)))
    for name, target in TARGETS.items():
        tgt = target * scale if name in ("test users", "train rows") else target
        print(f"{name:<20}{tgt:>12,.0f}" + "".join(f"{f[name]:>12,.1f}" for f in folds))
    g = users["gender"].value_counts(normalize=True, dropna=False)
    print("gender shares:", {str(k): round(v, 3) for k, v in g.items()})
    c = users["country"]
    print(f"country missing {c.isna().mean():.3f}, distinct {c.nunique()}, top",
          list(c.value_counts().index[:13]))
    cnt = ev["user_track_count"].to_numpy()
    print("user_track_count min/median/mean/p99/max:", cnt.min(), np.median(cnt),
          round(cnt.mean(), 1), np.percentile(cnt, 99), cnt.max())


if __name__ == "__main__":
    main()
