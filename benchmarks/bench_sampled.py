"""Sampled metrics, plain and corrected, against the full-ranking metrics they stand for.

    python benchmarks/bench_sampled.py [--datasets ml-100k synthetic] [--scale tiny]
                                       [--seeds 5] [--n-negatives 100] [--gamma 0.1]

Each dataset is split leave-last-out (each user's latest interaction is the test target). For
each built-in baseline the full ranking ranks the target among every item its user never
interacted with (pessimistic ties, as the sampled protocol); ``evaluate_sampled`` ranks it among
``--n-negatives`` of them, plain and with ``correction="rank"`` and ``"bv"``. Over ``--seeds``
seeds of the sampler it prints, per model and metric, the full value, the mean of each sampled
estimate with its distance to the full value, and Kendall's tau between each estimate's order
of the baselines and the full ranking's (1: the same order).

Full-ranking scores come from each fitted model's own ranking criterion: popularity counts,
BiasModel.score_items, CBOW cosine between user and item vectors, and for RandomModel a
seeded hash of (user, item) (so the full and the sampled protocol see the same random scores).
ml-100k is read from ../shared/data/ml-100k (skipped with a reason when absent).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.baselines import BiasModel, CBOWModel, PopularityModel
from evaluation.data import synthetic_tables
from evaluation.protocols import evaluate_sampled

ML100K = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml-100k" / "u.data"
METRICS = ("hit_rate@10", "ndcg@10")
ESTIMATES = ("sampled", "rank", "bv")


def leave_last_out(events: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and test: each user's latest event (ties by track id) is its test target."""
    last = events.sort_values(["timestamp", "track_id"], kind="stable").groupby("user_id").tail(1)
    return events.drop(last.index), last


def datasets(names, scale: str, seed: int):
    """``(name, train, test)`` of each available dataset."""
    for name in names:
        if name == "ml-100k":
            if not ML100K.exists():
                print(f"ml-100k: skipped, {ML100K} not found")
                continue
            events = pd.read_csv(ML100K, sep="\t",
                                 names=["user_id", "track_id", "rating", "timestamp"])
            events["user_track_count"] = 1  # one rating = one play, for the popularity count
        else:
            events = synthetic_tables(scale, seed).events
            name = f"synthetic-{scale}"
        yield (name, *leave_last_out(events))


def _hash_scores(users: np.ndarray, items: np.ndarray, seed: int) -> np.ndarray:
    """Uniform pseudo-random scores, a fixed function of (user, item) (splitmix64)."""
    with np.errstate(over="ignore"):
        x = (users.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + items.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9) + np.uint64(seed))
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) / 2.0**53


def scorers(train: pd.DataFrame, seed: int, cbow_epochs: int | None = None) -> dict:
    """Model name -> ``score(user_ids, item_ids)`` of each fitted baseline (``cbow_epochs``:
    the CBOW model's training epochs, its default when None)."""
    pop = PopularityModel().train(train)
    bias = BiasModel().train(train)
    epochs = {} if cbow_epochs is None else {"epochs": cbow_epochs}
    cbow = CBOWModel(seed=seed, **epochs).train(train)

    def popularity(users, items):
        pos = np.searchsorted(pop.item_ids, items).clip(0, len(pop.item_ids) - 1)
        return np.where(pop.item_ids[pos] == items, pop.popularity[pos], 0.0)

    def cosine(users, items):
        u = np.searchsorted(cbow.user_ids, users)
        pos = np.searchsorted(cbow.item_ids, items).clip(0, len(cbow.item_ids) - 1)
        vec = np.where((cbow.item_ids[pos] == items)[..., None], cbow.item_vectors[pos], 0.0)
        return np.einsum("bd,bnd->bn", cbow.user_vectors[u].astype(np.float64), vec)

    def random(users, items):
        return _hash_scores(np.broadcast_to(users[:, None], items.shape), items, seed)

    return {"RandomModel": random, "PopularityModel": popularity,
            "BiasModel": bias.score_items, "CBOWModel": cosine}


def full_metrics(score, train: pd.DataFrame, test: pd.DataFrame, batch: int = 256) -> dict:
    """HR@10 and NDCG@10 of the full ranking (target among every never-interacted item)."""
    events = pd.concat([train, test])
    catalog = np.unique(events["track_id"].to_numpy())
    users = test["user_id"].to_numpy()
    targets = test["track_id"].to_numpy()
    seen = events.groupby("user_id")["track_id"].unique()
    ranks = np.empty(len(users), dtype=np.int64)
    for start in range(0, len(users), batch):
        u = users[start:start + batch]
        scores = score(u, np.broadcast_to(catalog, (len(u), len(catalog))))
        target = scores[np.arange(len(u)), np.searchsorted(catalog, targets[start:start + batch])]
        rows = np.repeat(np.arange(len(u)), [len(seen[x]) for x in u])
        cols = np.searchsorted(catalog, np.concatenate([seen[x] for x in u]))
        scores = scores.copy()
        scores[rows, cols] = -np.inf  # neither the target nor any other known item competes
        ranks[start:start + batch] = 1 + (scores >= target[:, None]).sum(axis=1)
    return {"hit_rate@10": float((ranks <= 10).mean()),
            "ndcg@10": float(np.where(ranks <= 10, 1 / np.log2(ranks + 1.0), 0.0).mean())}


def sampled_estimates(score, train, test, seeds, n_negatives, gamma) -> tuple[dict, float, float]:
    """Estimate -> metric -> values over seeds; seconds of the plain and corrected runs."""
    out = {e: {m: [] for m in METRICS} for e in ESTIMATES}
    plain = corrected = 0.0
    for seed in seeds:
        t = time.perf_counter()
        base = evaluate_sampled(score, test, train, n_negatives=n_negatives, seed=seed)
        plain += time.perf_counter() - t
        t = time.perf_counter()
        rank = evaluate_sampled(score, test, train, n_negatives=n_negatives, seed=seed,
                                correction="rank")
        bv = evaluate_sampled(score, test, train, n_negatives=n_negatives, seed=seed,
                              correction="bv", gamma=gamma)
        corrected += (time.perf_counter() - t) / 2
        for m in METRICS:
            out["sampled"][m].append(base.metrics[m])
            out["rank"][m].append(rank.corrected[m])
            out["bv"][m].append(bv.corrected[m])
    return out, plain, corrected


def report(name: str, full: dict, est: dict) -> None:
    """Print the table of one dataset and the Kendall tau of each estimate."""
    models = list(full)
    print(f"\n{name}: mean over seeds (min-max); |d| = distance of the mean to the full value")
    print(f"{'model':16} {'metric':12} {'full':>7} " + " ".join(
        f"{e:>22} {'|d|':>6}" for e in ESTIMATES))
    for model in models:
        for m in METRICS:
            cells = []
            for e in ESTIMATES:
                v = np.array(est[model][e][m])
                cells.append(f"{v.mean():7.4f} ({v.min():.4f}-{v.max():.4f}) "
                             f"{abs(v.mean() - full[model][m]):6.4f}")
            print(f"{model:16} {m:12} {full[model][m]:7.4f} " + " ".join(cells))
    for m in METRICS:
        truth = [full[x][m] for x in models]
        taus = []
        for e in ESTIMATES:
            mean_tau = kendalltau(truth, [np.mean(est[x][e][m]) for x in models]).statistic
            per_seed = [kendalltau(truth, [est[x][e][m][s] for x in models]).statistic
                        for s in range(len(est[models[0]][e][m]))]
            taus.append(f"{e} {mean_tau:+.2f} (seeds {min(per_seed):+.2f}..{max(per_seed):+.2f})")
        print(f"Kendall tau vs full, {m}: " + "; ".join(taus))
    order = sorted(models, key=lambda x: -full[x]["ndcg@10"])
    print("full-ranking order by ndcg@10: " + " > ".join(order))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ml-100k", "synthetic"])
    parser.add_argument("--scale", default="tiny")
    parser.add_argument("--seed", type=int, default=42, help="data and model seed")
    parser.add_argument("--seeds", type=int, default=5, help="sampler seeds 0..seeds-1")
    parser.add_argument("--n-negatives", type=int, default=100)
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.datasets, args.scale, args.seeds, args.n_negatives = ["synthetic"], "tiny", 1, 20
    # the smoke run trains the CBOW model for one epoch: the same code path, a fifth of the time
    cbow_epochs = 1 if args.smoke else None
    seeds = range(args.seeds)
    print(f"n_negatives={args.n_negatives}, gamma={args.gamma}, sampler seeds 0..{args.seeds - 1}")
    for name, train, test in datasets(args.datasets, args.scale, args.seed):
        print(f"\n{name}: {len(train):,} train events, {len(test):,} test users, "
              f"{pd.concat([train, test])['track_id'].nunique():,} items")
        full, est = {}, {}
        for model, score in scorers(train, args.seed, cbow_epochs).items():
            full[model] = full_metrics(score, train, test)
            est[model], plain, corrected = sampled_estimates(
                score, train, test, seeds, args.n_negatives, args.gamma)
            print(f"  {model:16} evaluate_sampled {plain / len(seeds):6.2f} s plain, "
                  f"{corrected / len(seeds):6.2f} s with a correction (mean per seed)")
        report(name, full, est)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory (ru_maxrss): {peak:.0f} MiB")


if __name__ == "__main__":
    main()
