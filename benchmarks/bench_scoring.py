"""Scoring one fold at full LFM scale: the vectorised tests next to the 2022 way, in one run.

The reference (``benchmarks/_scores_2022.py``) computes HIT_RATE, MRR and every miss rate
with reclist's ``standard_metrics`` (``hit_rate_at_k``, ``mrr_at_k``, ``misses_at_k``), the
slices with pandas group-bys, and BEING_LESS_WRONG / LATENT_DIVERSITY with a loop over users,
as the 2022 harness did. Both must give the same numbers; the script checks that, then prints
times, ratios and the peak memory that scoring adds (tracemalloc). Usage::

    python benchmarks/bench_scoring.py                  # a same-sized random fold (default)
    python benchmarks/bench_scoring.py --source synthetic --scale full   # a ChallengeDataset fold

The random fold has the real per-fold sizes: 29.7k test users, an 820,998-track catalog with
dim-32 vectors, 6.9M training rows, k=100.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled

from benchmarks._scores_2022 import reference_scores
from evaluation.challenge import COUNTRIES, ChallengeFold
from evaluation.challenge_reclist import EvalRSRecList
from evaluation.data import TrackVectors
from evaluation.errors import PredictionWarning
from evaluation.predictions import validate_predictions

# The smoke run's fold: small enough to build and score, the 2022 way included, in a blink.
SMOKE_FOLD = dict(n_users=1_000, n_test=200, n_tracks=5_000, n_train=20_000)


class RandomFold:
    """A dataset-like object with one LFM-sized fold (popularity-skewed, seeded)."""

    num_folds = 1

    def __init__(self, seed: int = 0, n_users: int = 119_555, n_test: int = 29_700,
                 n_tracks: int = 820_998, n_train: int = 6_900_000, dim: int = 32) -> None:
        rng = np.random.default_rng(seed)
        countries = np.array([*COUNTRIES, "IT", "JP", "MX", None], dtype=object)
        p = np.array([10, 8, 6, 5, 4, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 54], dtype=float)
        self.df_users = pd.DataFrame({
            "country": rng.choice(countries, n_users, p=p / p.sum()),
            "gender": rng.choice(np.array(["n", "m", "f", None], dtype=object), n_users,
                                 p=[0.532, 0.33, 0.136, 0.002]),
        }, index=pd.Index(np.arange(n_users), name="user_id"))
        artist = np.sort(rng.integers(0, n_tracks // 12, n_tracks))
        self.df_tracks = pd.DataFrame({"artist_id": artist},
                                      index=pd.Index(np.arange(n_tracks), name="track_id"))
        has_vec = rng.random(n_tracks) > 0.001
        self.track_vectors = TrackVectors(np.flatnonzero(has_vec),
                                          rng.normal(size=(int(has_vec.sum()), dim)))
        # heavy-tailed track popularity: a Zipf-like draw over a shuffled catalog
        popularity = 1.0 / np.arange(1, n_tracks + 1) ** 0.9
        popularity = rng.permutation(popularity / popularity.sum())
        users = np.sort(rng.choice(n_users, n_test, replace=False))
        tracks = rng.choice(n_tracks, n_train, p=popularity)
        self.train = pd.DataFrame({
            "user_id": users[rng.integers(0, n_test, n_train)].astype(np.int32),
            "artist_id": artist[tracks].astype(np.int32),
            "track_id": tracks.astype(np.int32),
            "user_track_count": np.minimum(rng.geometric(0.08, n_train), 5000).astype(np.int32),
        })
        self.test = pd.DataFrame({"user_id": users,
                                  "track_id": rng.choice(n_tracks, n_test, p=popularity)})
        # predictions: 100 distinct tracks per user (an arithmetic walk over the catalog), the
        # target put at a random rank for ~25 % of users
        start = rng.integers(0, n_tracks, n_test)[:, None]
        step = rng.integers(1, n_tracks // 100, n_test)[:, None]
        items = (start + step * np.arange(100)) % n_tracks
        lucky = rng.random(n_test) < 0.25
        rank = rng.integers(0, 100, n_test)
        target = self.test["track_id"].to_numpy()
        absent = ~(items == target[:, None]).any(axis=1)
        put = lucky & absent
        items[np.flatnonzero(put), rank[put]] = target[put]
        items[rng.random(n_test) < 0.02, 60:] = -1  # a few short lists
        self.predictions = pd.DataFrame(items, index=pd.Index(users, name="user_id"),
                                        columns=[str(i) for i in range(100)])

    def get_train_set(self, fold):
        return self.train

    def get_test_set(self, fold, limit=None):
        return self.test


# --------------------------------------------------------------------------- timing


CPU: dict[str, float] = {}


def best_of(fn, repeat: int, name: str = ""):
    """Best wall time of ``repeat`` runs (CPU time of that run kept in ``CPU[name]``)."""
    best, result = (float("inf"), 0.0), None
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
    CPU[name] = best[1]
    return best[0], result


def peak_mib(fn) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default="random", help='"random" (default) or a dataset source')
    ap.add_argument("--scale", default="full")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.repeat = 1

    t0 = time.perf_counter()
    if args.source == "random":
        ds = RandomFold(**(SMOKE_FOLD if args.smoke else {}))
        raw = ds.predictions
    else:
        from evaluation import ChallengeDataset

        ds = ChallengeDataset(source=args.source, scale=args.scale)
        test = ds.get_test_set(args.fold)
        # a popularity model with a random permutation per user: distinct, k=100
        top = ds.get_train_set(args.fold)["track_id"].value_counts().index.to_numpy()[:2000]
        rng = np.random.default_rng(0)
        pick = np.argsort(rng.random((len(test), len(top))), axis=1)[:, :100]
        raw = pd.DataFrame(top[pick], index=pd.Index(test["user_id"].to_numpy(), name="user_id"),
                           columns=[str(i) for i in range(100)])
    train, test = ds.get_train_set(args.fold), ds.get_test_set(args.fold)
    print(f"fold: {len(test):,} test users, {len(train):,} train rows, "
          f"{len(ds.df_tracks):,} tracks, k=100 (built in {time.perf_counter() - t0:.1f} s)")
    users = test["user_id"].to_numpy()

    def validate(with_train=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PredictionWarning)
            return validate_predictions(raw, users, k=100, catalog=ds.df_tracks.index,
                                        train=train if with_train else None)

    t_val, preds = best_of(validate, args.repeat, "val")
    t_val0, _ = best_of(lambda: validate(False), args.repeat, "val0")

    def ours():
        rl = EvalRSRecList(ds, args.fold, preds, k=100, x_train=train, y_test=test,
                           validate=False)
        return rl.results()

    def state_only():
        return ChallengeFold.from_frames(users, test["track_id"].to_numpy(), preds.to_numpy(),
                                         train=train, users=ds.df_users, tracks=ds.df_tracks,
                                         vectors=ds.track_vectors)

    t_state, _ = best_of(state_only, args.repeat, "state")
    t_ours, res = best_of(ours, args.repeat, "ours")
    mem_ours = peak_mib(ours)
    mem_val = peak_mib(validate)
    mem_val0 = peak_mib(lambda: validate(False))

    def row(label, wall, key, mem=None):
        extra = f"   peak +{mem:.0f} MiB" if mem is not None else ""
        print(f"{label:38}{wall:>8.3f}s{CPU[key]:>9.3f}s{extra}")

    print(f"\n{'':38}{'wall':>9}{'cpu':>10}")
    row("validate predictions", t_val, "val", mem_val)
    row("  without the training-items check", t_val0, "val0", mem_val0)
    row("shared per-fold state (part of below)", t_state, "state")
    row("all ten tests (EvalRSRecList)", t_ours, "ours", mem_ours)
    if not args.skip_reference:
        t_ref, ref = best_of(lambda: reference_scores(ds, train, test, preds), 1, "ref")
        mem_ref = peak_mib(lambda: reference_scores(ds, train, test, preds))
        row("reference (2022 way)", t_ref, "ref", mem_ref)
        print(f"\nspeed-up: {t_ref / t_ours:.1f}x wall, {CPU['ref'] / CPU['ours']:.1f}x cpu;"
              f"  peak memory: {mem_ref / max(mem_ours, 1):.1f}x less")
        print(f"\n{'test':24}{'ours':>14}{'reference':>14}")
        worst = 0.0
        for name, value in res.items():
            if name == "stats":
                same = value == ref[name]
                print(f"{name:24}{'equal' if same else 'DIFFERENT':>28}")
                worst = max(worst, 0.0 if same else 1.0)
                continue
            diff = abs(value - ref[name])
            worst = max(worst, diff)
            print(f"{name:24}{value:>14.6f}{ref[name]:>14.6f}")
        print(f"largest difference: {worst:.2e}")
        if worst > 1e-9:
            raise SystemExit("the vectorised tests disagree with the reference")
    print(f"\ntargets: ten tests <= 0.3 s (got {t_ours:.3f} s); "
          f"peak memory <= 200 MiB (got {mem_ours:.0f} MiB)")


if __name__ == "__main__":
    main()
