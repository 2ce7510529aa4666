"""Coverage of the bootstrap intervals on a synthetic population whose true values are known.

A finite population of users (200,000 by default) has a fixed hit, reciprocal rank and slice
group per user, so its HIT_RATE, MRR and MRED are exact numbers. Each repetition draws a sample
of test users without replacement (as a fold's test users are drawn from all users), runs the
harness's own :func:`evaluation.challenge.bootstrap` on the sample's :class:`UserScores` and
records whether each 95 % interval holds the population value.

Used by ``benchmarks/bench_coverage.py`` (the table) and ``tests/challenge/test_coverage.py``
(the band).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.challenge import (
    HIT_RATE,
    IN_MR_ONLY,
    MRED_USER_ACTIVITY,
    MRR,
    UserScores,
    bootstrap,
    mred_from_codes,
)

MRED_TEST = MRED_USER_ACTIVITY  # the slice the synthetic groups stand for
TESTS = (HIT_RATE, MRR, MRED_TEST)
GROUP_SHARES = (0.4, 0.3, 0.2, 0.1)
# Miss rate per group: "gap" has a clear disparity (every |MR_g - MR| is a few standard errors
# at 2,000 test users); "equal" has none, so the population MRED is 0 and every sampled
# |MR_g - MR| is pure noise (the case where MRED's upward bias dominates).
MISS_RATES = {"gap": (0.70, 0.78, 0.85, 0.62), "equal": (0.75, 0.75, 0.75, 0.75)}
UNGROUPED_SHARE = 0.05  # users in the overall miss rate but in no group (IN_MR_ONLY)


@dataclass(frozen=True)
class Population:
    """Per-user hit, reciprocal rank and group code of every user, and the exact test values."""

    hit: np.ndarray
    rr: np.ndarray
    codes: np.ndarray
    truth: dict[str, float]

    def sample(self, users: np.ndarray) -> UserScores:
        """The per-user scores of the test users ``users`` (BLW and LD left out)."""
        nan = np.full(len(users), np.nan)
        return UserScores(hit=self.hit[users], rr=self.rr[users],
                          slices={MRED_TEST: self.codes[users]}, blw=nan, ld=nan)


def population(n_users: int = 200_000, scenario: str = "gap", seed: int = 0) -> Population:
    """A synthetic population and its exact HIT_RATE, MRR and MRED.

    A user's group is drawn with ``GROUP_SHARES`` (``UNGROUPED_SHARE`` of users in none), the
    hit with the group's ``1 - MISS_RATES[scenario]``, and the rank of a hit from a geometric
    law truncated at 100 (so MRR is a skewed average, like a real one).
    """
    rng = np.random.default_rng(seed)
    shares = np.array(GROUP_SHARES) * (1 - UNGROUPED_SHARE)
    codes = rng.choice(len(GROUP_SHARES) + 1, size=n_users, p=[*shares, UNGROUPED_SHARE])
    codes = np.where(codes == len(GROUP_SHARES), IN_MR_ONLY, codes).astype(np.int32)
    miss_rate = np.append(MISS_RATES[scenario], np.mean(MISS_RATES[scenario]))[codes]
    hit = rng.random(n_users) >= miss_rate
    rank = np.minimum(rng.geometric(0.15, size=n_users), 100)
    rr = np.where(hit, 1.0 / rank, 0.0)
    # the population values, by definition (not through UserScores, which is under test)
    mred = mred_from_codes(~hit, codes, [str(g) for g in range(len(GROUP_SHARES))]).value
    truth = {HIT_RATE: float(hit.mean()), MRR: float(rr.mean()), MRED_TEST: float(mred)}
    return Population(hit=hit, rr=rr, codes=codes, truth=truth)


def coverage(pop: Population, n_test: int, reps: int, *, n_boot: int = 200, seed: int = 0,
             level: float = 0.95) -> dict[str, dict[str, float]]:
    """Test -> ``coverage``, its binomial ``se``, mean interval ``width`` and ``flagged`` share.

    Repetition ``r`` samples ``n_test`` users without replacement and bootstraps them with
    seed ``seed + r``; an interval covers when ``low <= truth <= high``.
    """
    rng = np.random.default_rng(seed)
    hits = {t: 0 for t in TESTS}
    widths = {t: 0.0 for t in TESTS}
    flagged = {t: 0 for t in TESTS}
    n_pop = len(pop.hit)
    for r in range(reps):
        users = rng.choice(n_pop, size=n_test, replace=False)
        ci = bootstrap([pop.sample(users)], n_boot=n_boot, seed=seed + r, level=level,
                       chunk=n_boot)
        for t in TESTS:
            low, high = ci["tests"][t]
            hits[t] += low <= pop.truth[t] <= high
            widths[t] += high - low
            flagged[t] += t in ci["bias_dominated"]
    out = {}
    for t in TESTS:
        p = hits[t] / reps
        out[t] = {"coverage": p, "se": float(np.sqrt(p * (1 - p) / reps)),
                  "width": widths[t] / reps, "flagged": flagged[t] / reps}
    return out


def sampling_sd(pop: Population, n_test: int, reps: int, *, seed: int = 0) -> dict[str, float]:
    """Test -> standard deviation of its point estimate over ``reps`` samples of ``n_test`` users.

    The spread a calibrated interval must reflect, measured directly (no bootstrap): a 95 %
    interval of a near-normal estimate is about ``2 * 1.96`` of these wide.
    """
    rng = np.random.default_rng(seed)
    labels = [str(g) for g in range(len(GROUP_SHARES))]
    values: dict[str, list[float]] = {t: [] for t in TESTS}
    for _ in range(reps):
        users = rng.choice(len(pop.hit), size=n_test, replace=False)
        hit = pop.hit[users]
        values[HIT_RATE].append(float(hit.mean()))
        values[MRR].append(float(pop.rr[users].mean()))
        values[MRED_TEST].append(float(mred_from_codes(~hit, pop.codes[users], labels).value))
    return {t: float(np.std(v, ddof=1)) for t, v in values.items()}
