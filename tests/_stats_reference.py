"""Plain references of the harness's statistics, shared by the tests that pin them.

Each is the obviously correct form of a fast path: the run's resamples drawn one random call
per chunk and counted in one ``bincount``, tests averaged over folds one replicate at a time,
the phase-2 score of one set of test values (the form the leaderboard has always used), and
the paired statistics of a board by loops over teams and replicates.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from evaluation.challenge import (
    GATED_SCORE,
    HIT_RATE,
    LEADERBOARD_TESTS,
    MRED_TESTS,
    References,
    UserScores,
    check_coverage,
    normalise,
    scored_groups,
)

#: Groups per MRED test of the synthetic folds.
N_GROUPS = {"MRED_COUNTRY": 4, "MRED_USER_ACTIVITY": 3, "MRED_TRACK_POPULARITY": 3,
            "MRED_ARTIST_POPULARITY": 2, "MRED_GENDER": 2}


def references(threshold: float = 0.0, groups: Mapping[str, list[str]] | None = None,
               weights: Mapping[str, float] | None = None) -> References:
    """References with round baselines and bests (and, optionally, other groups)."""
    baseline = {t: 0.0 for t in LEADERBOARD_TESTS} | {t: -0.5 for t in MRED_TESTS}
    best = {t: 1.0 for t in LEADERBOARD_TESTS} | {t: 0.0 for t in MRED_TESTS}
    extra = {} if groups is None else {"groups": dict(groups), "weights": dict(weights or {})}
    return References(baseline=baseline, best=best, hit_rate_threshold=threshold, **extra)


def fold_users(rng: np.random.Generator, n: int, skill: float,
               codes: Mapping[str, np.ndarray] | None = None) -> UserScores:
    """A fold of synthetic per-user values: a team of hit probability ``skill``."""
    hit = rng.random(n) < skill
    rr = np.where(hit, 1.0 / rng.integers(1, 50, n), 0.0)
    if codes is None:
        codes = {t: rng.integers(-2, g, n).astype(np.int32) for t, g in N_GROUPS.items()}
    blw = np.where(hit | (rng.random(n) < 0.1), np.nan, rng.random(n))
    ld = np.where(rng.random(n) < 0.05, np.nan, rng.normal(0.2, 0.1, n))
    return UserScores(hit=hit, rr=rr, slices=dict(codes), blw=blw, ld=ld)


def board(rng: np.random.Generator, skills: Sequence[float],
          sizes: Sequence[int] = (40, 55)) -> list[list[UserScores]]:
    """Teams on the same folds and users (the slice groups are the users', shared)."""
    codes = [{t: rng.integers(-2, g, n).astype(np.int32) for t, g in N_GROUPS.items()}
             for n in sizes]
    return [[fold_users(rng, n, s, c) for n, c in zip(sizes, codes)] for s in skills]


def reference_counts(seed: int, fold_sizes: Sequence[int], n_boot: int,
                     chunk: int) -> list[np.ndarray]:
    """Per fold, ``n_boot x users`` counts of the run's resamples, drawn plainly: the fold's
    stream is the ``f``-th child of ``SeedSequence(seed)``; each chunk of ``b`` replicates is
    one ``integers(0, n, (b, n))`` call, counted by one bincount of ``replicate * n + user``."""
    out = []
    for size, stream in zip(fold_sizes, np.random.SeedSequence(seed).spawn(len(fold_sizes))):
        rng = np.random.default_rng(stream)
        blocks = []
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            drawn = rng.integers(0, size, size=(b, size), dtype=np.int64)
            drawn += (np.arange(b, dtype=np.int64) * size)[:, None]
            blocks.append(np.bincount(drawn.ravel(), minlength=b * size).reshape(b, size))
        out.append(np.concatenate(blocks))
    return out


def fold_mean_replicates(folds: Sequence[UserScores], counts: Sequence[np.ndarray],
                         names: Sequence[str]) -> dict[str, np.ndarray]:
    """Test -> its replicates of the fold mean: each fold's tests on each resample (one
    replicate at a time), then the mean over folds."""
    per_fold = []
    for scores, c in zip(folds, counts):
        rows = [scores.resampled_tests(c[b:b + 1]) for b in range(len(c))]
        per_fold.append({t: np.array([r[t][0] for r in rows]) for t in names})
    return {t: np.mean([p[t] for p in per_fold], axis=0) for t in names}


def scalar_phase2(tests: Mapping[str, float], refs: References,
                  not_applicable: Mapping[str, str] | None = None) -> float:
    """The phase-2 score of one set of fold means, as the leaderboard has always computed it:
    the gate, then the weighted sum (left to right) of the group means of normalised tests."""
    if not_applicable is not None:
        check_coverage(refs, not_applicable)
    if tests[HIT_RATE] < refs.hit_rate_threshold:
        return GATED_SCORE
    norm = normalise(tests, refs, not_applicable)
    groups, weights = scored_groups(refs, not_applicable)
    total = sum(weights.values())
    return float(sum(weights[g] * np.mean([norm[t] for t in members])
                     for g, members in groups.items()) / total)


def scalar_phase2_rows(values: Mapping[str, np.ndarray], names: Sequence[str],
                       refs: References,
                       not_applicable: Mapping[str, str] | None = None) -> np.ndarray:
    """:func:`scalar_phase2` of every element of same-shaped arrays, one element at a time."""
    shape = np.shape(values[names[0]])
    out = np.empty(shape)
    for index in np.ndindex(*shape):
        out[index] = scalar_phase2({t: values[t][index] for t in names}, refs, not_applicable)
    return out


def slow_win_probabilities(reps: np.ndarray) -> np.ndarray:
    """``[i, j]``: the share of replicates where i scores above j (a tie, half), by loops."""
    n, b = reps.shape
    return np.array([[sum(1.0 if reps[i, r] > reps[j, r] else 0.5 if reps[i, r] == reps[j, r]
                          else 0.0 for r in range(b)) / b for j in range(n)] for i in range(n)])


def slow_rank_intervals(reps: np.ndarray, point: np.ndarray, level: float) -> np.ndarray:
    """Rank intervals from the max-|t| simultaneous intervals, by loops over pairs and
    replicates."""
    n, b = reps.shape
    se = np.zeros((n, n))
    for i, j in itertools.product(range(n), range(n)):
        se[i, j] = np.std(reps[i] - reps[j], ddof=1)
        se[i, j] = 0.0 if se[i, j] < 1e-12 else se[i, j]
    largest = [max([abs((reps[i, r] - reps[j, r]) - (point[i] - point[j])) / se[i, j]
                    for i, j in itertools.product(range(n), range(n)) if se[i, j] > 0],
                   default=0.0) for r in range(b)]
    critical = np.sort(largest)[int(np.ceil(level * (b - 1)))]
    beats = (point[:, None] - point[None, :]) - critical * se > 0
    return np.array([[1 + sum(beats[j, i] for j in range(n)),
                      n - sum(beats[i, j] for j in range(n))] for i in range(n)])


def slow_first_place_weights(groups: np.ndarray, eps: float = 1e-12) -> list:
    """Each team's region of the weight simplex where it ranks first: its corners clipped by
    every other team in turn, each clip walking the polygon's edges, in the same arithmetic
    as the fast path (the corners must be equal to the bit)."""
    n, k = groups.shape
    out = []
    for i in range(n):
        region = np.eye(k)
        for j in range(n):
            if j == i or not len(region):
                continue
            normal = groups[i] - groups[j]
            values = region @ normal
            if len(region) == 1:
                region = region if values[0] >= -eps else region[:0]
                continue
            kept, m = [], len(region)
            closed = m > 2
            for c in range(m if closed else m - 1):
                a, b = region[c], region[(c + 1) % m]
                va, vb = values[c], values[(c + 1) % m]
                if va >= -eps:
                    kept.append(a)
                if (va > eps and vb < -eps) or (va < -eps and vb > eps):
                    kept.append(a + (b - a) * (va / (va - vb)))
            if not closed and values[-1] >= -eps:
                kept.append(region[-1])
            region = np.array(kept).reshape(-1, k)
        distinct: list = []
        for p in region:
            if not any(np.abs(p - q).max() <= 1e-9 for q in distinct):
                distinct.append(p)
        out.append(np.array(distinct) if len(region) else None)
    return out
