"""The metric library on 1M test points: one timing per metric, next to a plain reference.

Ranking metrics: 200k users with 5 relevant items each (1M test points) in a 50k-item catalog,
top-10 lists (popularity-skewed, seeded). Rating errors: 1M (true, predicted) pairs. References:
scikit-learn for the rating errors (global); a per-user Python loop, timed on a subsample and
scaled up to the full size (marked ``~``), for the ranking metrics. Values are checked against the
reference on the subsample. Usage::

    python benchmarks/bench_metrics.py [--users 200000] [--per-user 5] [--k 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from math import log2
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import mean_absolute_error, mean_squared_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled
from evaluation.metrics import evaluate_ranking, get_metric, item_popularity, judge

RANKING = ["precision", "recall", "f1", "hit_rate", "mrr", "ndcg", "map", "auc"]


def make_case(n_users: int, per_user: int, n_items: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_items + 1) ** 0.8
    p /= p.sum()
    # relevant items: popularity-skewed, distinct per user (duplicates resampled away by unique)
    items = rng.choice(n_items, size=(n_users, per_user * 2), p=p)
    users = np.repeat(np.arange(n_users), items.shape[1])
    keys = np.unique(users * n_items + items.ravel())
    u, i = keys // n_items, keys % n_items
    rank = np.arange(len(u)) - np.searchsorted(u, u)
    keep = rank < per_user
    relevance = sp.csr_array((np.ones(keep.sum()), (u[keep], i[keep])), shape=(n_users, n_items))
    recs = rng.choice(n_items, size=(n_users, k), p=p)
    return recs, relevance


def reference_user(name: str, recs_row, relevant: set, k: int, n_items: int) -> float:
    seen, hits = set(), []
    for item in recs_row[:k]:
        hits.append(item not in seen and item in relevant)
        seen.add(item)
    n_hits = sum(hits)
    if name == "precision":
        return n_hits / k
    if name == "recall":
        return n_hits / len(relevant) if relevant else 0.0
    if name == "f1":
        p, r = n_hits / k, (n_hits / len(relevant) if relevant else 0.0)
        return 2 * p * r / (p + r) if p + r else 0.0
    if name == "hit_rate":
        return float(n_hits > 0)
    if name == "mrr":
        return next((1 / (j + 1) for j, h in enumerate(hits) if h), 0.0)
    if name == "ndcg":
        dcg = sum(1 / log2(j + 2) for j, h in enumerate(hits) if h)
        idcg = sum(1 / log2(j + 2) for j in range(min(k, len(relevant))))
        return dcg / idcg if idcg else 0.0
    if name == "map":
        prec = [sum(hits[: j + 1]) / (j + 1) for j in range(len(hits)) if hits[j]]
        return sum(prec) / min(k, len(relevant)) if relevant else 0.0
    if name == "auc":
        listed = list(dict.fromkeys(recs_row[:k]))
        negatives = n_items - len(relevant)
        total = 0.0
        for pos in relevant:
            if pos in listed:
                above = sum(1 for i in listed[: listed.index(pos)] if i not in relevant)
                total += (negatives - above) / negatives
            else:
                listed_neg = sum(1 for i in listed if i not in relevant)
                total += 0.5 * (negatives - listed_neg) / negatives
        return total / len(relevant) if relevant else 0.0
    raise ValueError(name)


def timed(fn, repeat: int = 3):
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--per-user", type=int, default=5)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--subsample", type=int, default=2_000)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    # the rating errors' pairs and users; each timing is the best of ``repeat`` runs
    ratings, rating_users, ratings_label, repeat = 1_000_000, 100_000, "1M", 3
    if args.smoke:
        args.users, args.items, args.subsample = 2_000, 500, 200
        ratings, rating_users, ratings_label, repeat = 10_000, 1_000, "10k", 1

    def timed_here(fn):
        return timed(fn, repeat)

    k = args.k
    recs, relevance = make_case(args.users, args.per_user, args.items, k)
    n_points = relevance.nnz
    print(f"{args.users:,} users, {n_points:,} test points, {args.items:,} items, k={k}")
    sub = slice(0, args.subsample)
    sub_recs, sub_rel = recs[sub], relevance[sub]
    rel_sets = [set(sub_rel.indices[sub_rel.indptr[u]: sub_rel.indptr[u + 1]])
                for u in range(sub_rel.shape[0])]
    scale = args.users / args.subsample

    rows = []
    t_judge, _ = timed_here(lambda: judge(recs, relevance, k))
    rows.append(("judge (shared lookup)", t_judge, None, ""))
    for base in RANKING:
        name = f"{base}@{k}"
        metric = get_metric(name)
        t, _value = timed_here(lambda metric=metric: metric(recs, relevance))
        start = time.perf_counter()
        ref = np.mean([reference_user(base, sub_recs[u], rel_sets[u], k, args.items)
                       for u in range(len(rel_sets))])
        t_ref = (time.perf_counter() - start) * scale
        fast_sub = metric(sub_recs, sub_rel)
        if not np.isclose(fast_sub, ref):
            raise SystemExit(f"{name}: fast {fast_sub} != reference {ref} on the subsample")
        rows.append((name, t, t_ref, "~per-user loop"))
    names = [f"{b}@{k}" for b in RANKING]
    t_all, _ = timed_here(lambda: evaluate_ranking(recs, relevance, names))
    rows.append((f"evaluate_ranking (all {len(names)})", t_all, None, ""))
    for base in ("recall", "hit_rate", "mrr", "auc"):
        name = f"{base}@{k}"
        t, _ = timed_here(lambda name=name: get_metric(name)(recs, relevance, aggregate="global"))
        rows.append((f"{name} global", t, None, ""))
    t, _ = timed_here(lambda: get_metric(f"coverage@{k}")(recs, n_items=args.items))
    rows.append((f"coverage@{k}", t, None, ""))
    popularity = item_popularity(relevance.indices, args.items)
    t, _ = timed_here(lambda: get_metric(f"popularity_bias@{k}")(recs, popularity))
    rows.append((f"popularity_bias@{k}", t, None, ""))

    rng = np.random.default_rng(1)
    y_true = rng.integers(1, 6, ratings).astype(float)
    y_pred = y_true + rng.normal(0, 1, len(y_true))
    users = rng.integers(0, rating_users, len(y_true))
    references = {
        "rmse": lambda: np.sqrt(mean_squared_error(y_true, y_pred)),
        "mae": lambda: mean_absolute_error(y_true, y_pred),
        "nrmse": lambda: np.sqrt(mean_squared_error(y_true, y_pred)) / 4,
        "nmae": lambda: mean_absolute_error(y_true, y_pred) / 4,
    }
    for name, reference in references.items():
        metric = get_metric(name)
        t, value = timed_here(lambda metric=metric: metric(y_true, y_pred))
        t_ref, ref = timed_here(reference)
        if not np.isclose(value, ref):
            raise SystemExit(f"{name}: {value} != scikit-learn {ref}")
        rows.append((f"{name} ({ratings_label} ratings)", t, t_ref, "scikit-learn"))
    t, _ = timed_here(lambda: get_metric("rmse")(y_true, y_pred, users=users, aggregate="user"))
    rows.append((f"rmse per user ({rating_users // 1000}k users)", t, None, ""))

    print(f"{'metric':<30}{'time (s)':>10}{'reference (s)':>15}{'ratio':>9}  reference")
    for name, t, t_ref, label in rows:
        ref_text = "" if t_ref is None else f"{t_ref:>15.3f}"
        ratio = "" if t_ref is None else f"{t_ref / t:>8.1f}x"
        print(f"{name:<30}{t:>10.3f}{ref_text:>15}{ratio:>9}  {label}")
    worst = max(t for name, t, _, _ in rows if not name.startswith("evaluate_ranking"))
    print(f"slowest single metric: {worst:.3f} s (target: well under 1 s)")


if __name__ == "__main__":
    main()
