"""Paired tests between runs on the same test users: a paired bootstrap and a swap test.

Both work on the per-user contributions of each fold (:class:`UserScores`) and treat a
statistic as the run's does: each test is computed per fold, then averaged over folds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np

from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRR,
    RESAMPLE_CHUNK,
    References,
    UserScores,
    applicable_tests,
    over_folds,
    paired_test_replicates,
    phase2_score,
)
from evaluation.errors import ConfigError

#: Tests that are a ratio of sums over users (a mean over the users they count): a user's
#: contribution moves with the user, so swapping users between two runs is a valid
#: randomization. The MRED tests (gaps between group miss rates) are not.
ADDITIVE_TESTS: tuple[str, ...] = (HIT_RATE, MRR, BEING_LESS_WRONG, LATENT_DIVERSITY)

#: The largest number of users (over all folds) for which the swap test enumerates every
#: one of the ``2 ** n`` assignments instead of drawing them.
EXACT_MAX_USERS = 16

_NORMAL = NormalDist()


# --------------------------------------------------------------------------- paired bootstrap


def paired_bootstrap(runs: Sequence[Sequence[UserScores]], references: References | None = None,
                     *, n_boot: int = 1000, seed: int = 0, chunk: int = RESAMPLE_CHUNK,
                     not_applicable: Mapping[str, str] | None = None,
                     ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Replicates of every test and score of several runs on the same resampled users.

    Each replicate resamples every fold's users with replacement, once for all runs, then
    recomputes each run's tests from its per-user contributions (``UserScores.tests``, so
    that the MRED tests are recomputed from the resampled groups), averages them over folds
    and computes the phase-1 (and with references the phase-2) score. The resampling is the
    one of the run's own intervals (``evaluation.challenge.bootstrap``): the same seed gives
    the same replicates of a run, to the bit.

    Parameters
    ----------
    runs : sequence of sequences of UserScores
        Per run, the per-user contributions of each fold; every run has the same users.
    references : References, optional
        For the phase-2 score.
    n_boot : int
        Replicates.
    seed : int
        Seed of the resampling.
    chunk : int
        Replicates drawn at once.
    not_applicable : Mapping, optional
        Test -> reason, for the leaderboard tests the dataset cannot measure (the runs'
        ``not_applicable``): they are left out, and the scores are computed without them.

    Returns
    -------
    tuple of dict
        ``(replicates, point)``: name -> array of shape ``(n_runs, n_boot)``, and name -> the
        point estimates, shape ``(n_runs,)``, for each available test, ``phase1_score`` and,
        with references, ``phase2_score``.
    """
    n_folds = _check_runs(runs)
    names = [t for t in _available(runs) if t not in (not_applicable or {})]
    replicates = paired_test_replicates(runs, names, n_boot=n_boot, seed=seed, chunk=chunk)
    point = {t: np.array([np.mean([run[f].tests()[t][0] for f in range(n_folds)])
                          for run in runs]) for t in names}
    for values in (replicates, point):
        values.update(_scores(values, names, references, not_applicable))
    return replicates, point


def _scores(values: dict[str, np.ndarray], names: Sequence[str], references: References | None,
            not_applicable: Mapping[str, str] | None) -> dict[str, np.ndarray]:
    """``phase1_score`` (and ``phase2_score``) from the test values (any shape, same for all)."""
    scored = applicable_tests(not_applicable)
    if not set(scored) <= set(names):
        return {}
    out = {"phase1_score": np.nanmean(np.stack([values[t] for t in scored], axis=-1), axis=-1)}
    if references is not None:
        out["phase2_score"] = phase2_score({t: values[t] for t in scored}, references,
                                           not_applicable)
    return out


def bc_interval(replicates: np.ndarray, point: float, level: float) -> dict:
    """The bias-corrected percentile interval of a statistic and the p-value of "it is 0".

    The interval is the run's (Efron's bias-corrected percentile interval, no acceleration):
    quantiles ``Phi(2 z0 + z_a)`` with ``z0 = Phi^-1(share of replicates below the point
    estimate)``; ``|z0|`` is capped at ``Phi^-1(1 - alpha / 2)``, and a capped statistic is
    ``bias_dominated`` (its interval is widened to reach the point estimate). The two-sided
    p-value inverts the same interval: the smallest ``1 - level`` whose interval excludes 0.
    The lower bound is above 0 exactly when its quantile level is above ``q+``, the largest
    level whose (interpolated) replicate quantile is at most 0, and the upper bound below 0
    when its level is under ``q-``, the smallest level whose quantile is at least 0; so
    ``p = 2 Phi(-max(2 z0 - Phi^-1(q+), Phi^-1(q-) - 2 z0))``, and the interval excludes 0
    exactly when ``p < 1 - level`` (for levels up to ``1 - 2 / (B + 1)``: ``p`` is at least
    ``2 / (B + 1)``, the smallest p-value ``B`` replicates resolve). A bias-dominated
    statistic has no p-value (NaN): the cap and the widening make its interval a warning,
    not a test, and the p-value of the uncapped correction would contradict the interval
    shown.

    Parameters
    ----------
    replicates : numpy.ndarray
        The statistic's bootstrap replicates (NaN ones are dropped).
    point : float
        Its point estimate.
    level : float
        The interval's coverage.

    Returns
    -------
    dict
        ``ci_low``, ``ci_high``, ``p`` (NaN when undefined) and ``bias_dominated``.
    """
    values = replicates[~np.isnan(replicates)]
    if len(values) == 0 or not np.isfinite(point):
        return {"ci_low": np.nan, "ci_high": np.nan, "p": np.nan, "bias_dominated": False}
    b = len(values)
    z0 = _z(_share_below(values, point), b)
    alpha = (1 - level) / 2
    lo, hi = _bc_bounds(values, point, z0, _NORMAL.inv_cdf(alpha), _NORMAL.inv_cdf(1 - alpha))
    capped = abs(z0) > _NORMAL.inv_cdf(1 - alpha)
    if capped:
        p = np.nan  # the bias exceeds the spread: no test is trustworthy (see above)
    elif np.all(values == 0) and point == 0:
        p = 1.0  # no difference on any resample
    else:
        q_above, q_below = _zero_levels(np.sort(values))
        distance = max(2 * z0 - _probit(q_above), _probit(q_below) - 2 * z0)
        # b replicates cannot resolve a p-value below that of a percentile test with no
        # replicate beyond 0 (the correction would otherwise extrapolate past the last one)
        p = float(np.clip(2 * _NORMAL.cdf(-distance), 2 / (b + 1), 1.0))
    return {"ci_low": lo, "ci_high": hi, "p": p, "bias_dominated": capped}


def _bc_bounds(values: np.ndarray, point: float, z0: float, z_low: float,
               z_high: float) -> tuple[float, float]:
    """The bias-corrected interval whose quantiles are ``Phi(2 z0 + z_low)`` and
    ``Phi(2 z0 + z_high)`` (``|z0|`` capped at ``z_high`` and the interval then widened to
    reach ``point``), computed as the run's intervals are."""
    capped = abs(z0) > z_high
    shift = float(np.sign(z0)) * z_high if capped else z0
    lo, hi = (float(v) for v in np.quantile(
        values, [_NORMAL.cdf(2 * shift + z_low), _NORMAL.cdf(2 * shift + z_high)]))
    if capped:
        lo, hi = min(lo, point), max(hi, point)
    return lo, hi


def _zero_levels(ordered: np.ndarray) -> tuple[float, float]:
    """``(q+, q-)`` of sorted replicates under ``numpy.quantile``'s linear interpolation:
    the largest level whose quantile is at most 0 (0 when none) and the smallest level
    whose quantile is at least 0 (1 when none)."""
    return (_crossing(ordered, int(np.count_nonzero(ordered <= 0)), empty=0.0),
            _crossing(ordered, int(np.count_nonzero(ordered < 0)), empty=0.0))


def _crossing(ordered: np.ndarray, k: int, empty: float) -> float:
    """The level at which the interpolated quantile of ``ordered`` reaches 0 between its
    ``k``-th and ``k + 1``-th values (``empty`` when ``k`` is 0, 1 when it is all)."""
    n = len(ordered)
    if k == 0:
        return empty
    if k == n or n == 1:
        return 1.0
    a, c = float(ordered[k - 1]), float(ordered[k])
    return (k - 1 + (-a / (c - a) if c > a else 0.0)) / (n - 1)


def _probit(level: float) -> float:
    """``Phi^-1(level)``, infinite at 0 and 1."""
    if level <= 0:
        return -np.inf
    if level >= 1:
        return np.inf
    return _NORMAL.inv_cdf(level)


def _share_below(values: np.ndarray, x: float) -> float:
    """Share of ``values`` below ``x``, ties counting half."""
    return (np.count_nonzero(values < x) + 0.5 * np.count_nonzero(values == x)) / len(values)


def _z(share: float, b: int) -> float:
    """``Phi^-1(share)``, the share kept within ``[1 / (b + 1), b / (b + 1)]``."""
    return _NORMAL.inv_cdf(float(np.clip(share, 1 / (b + 1), b / (b + 1))))


# --------------------------------------------------------------------------- swap test


def swap_test(baseline: Sequence[UserScores], other: Sequence[UserScores], *,
              permutations: int = 1000, seed: int = 0,
              exact_max_users: int = EXACT_MAX_USERS) -> dict[str, dict]:
    """A paired randomization test of each additive test: swap users' results between runs.

    Under the null hypothesis that the two runs are exchangeable for each user, swapping a
    user's contributions (hit, reciprocal rank, BLW and LD terms) between the two runs leaves
    the distribution of the difference unchanged. The statistic is the run's: the difference
    (other - baseline) of each fold's test, averaged over folds. With at most
    ``exact_max_users`` users over all folds every assignment is enumerated (an exact p-value);
    otherwise ``permutations`` random assignments are drawn (seeded) and ``p = (1 + hits) /
    (1 + permutations)``, where a hit is an assignment whose ``|difference|`` reaches the
    observed one.

    Parameters
    ----------
    baseline, other : sequence of UserScores
        The per-user contributions of each fold of the two runs (the same users).
    permutations : int
        Random assignments when the test is not exact.
    seed : int
        Seed of the assignments.
    exact_max_users : int
        Enumerate every assignment up to this many users.

    Returns
    -------
    dict
        Test -> ``{"difference", "p", "exact", "permutations"}`` for each test of
        :data:`ADDITIVE_TESTS`.
    """
    n_folds = _check_runs([baseline, other])
    sizes = [len(s) for s in baseline]
    total = sum(sizes)
    exact = total <= exact_max_users
    streams = np.random.SeedSequence(seed).spawn(2 * n_folds)[n_folds:]
    n_draws = 2 ** total if exact else permutations
    diffs = {t: np.zeros(n_draws) for t in ADDITIVE_TESTS}
    observed = dict.fromkeys(ADDITIVE_TESTS, 0.0)
    offsets = np.cumsum([0, *sizes])

    def fold(f: int) -> dict[str, np.ndarray]:
        a, b = _additive_columns(baseline[f]), _additive_columns(other[f])
        if exact:
            codes = np.arange(n_draws, dtype=np.int64)[:, None]
            swaps = (codes >> np.arange(offsets[f], offsets[f + 1])) & 1
            return {t: _ratio_difference(a[t], b[t], swaps) for t in ADDITIVE_TESTS}
        rng = np.random.default_rng(streams[f])
        out = {t: np.empty(n_draws) for t in ADDITIVE_TESTS}
        for start in range(0, n_draws, 50):
            swaps = rng.integers(0, 2, size=(min(50, n_draws - start), sizes[f]),
                                 dtype=np.int8).astype(np.float64)
            for t in ADDITIVE_TESTS:
                out[t][start:start + len(swaps)] = _ratio_difference(a[t], b[t], swaps)
        return out

    for f, per_fold in enumerate(over_folds(fold, n_folds)):
        a, b = _additive_columns(baseline[f]), _additive_columns(other[f])
        for t in ADDITIVE_TESTS:
            observed[t] += _observed_difference(a[t], b[t]) / n_folds
            diffs[t] += per_fold[t] / n_folds
    out = {}
    for t in ADDITIVE_TESTS:
        obs = observed[t]
        # a draw that reaches the observed |difference| up to rounding counts as a hit
        tol = 1e-12 * max(1.0, abs(obs))
        hits = int(np.count_nonzero(np.abs(diffs[t]) >= abs(obs) - tol)) \
            if np.isfinite(obs) else 0
        p = hits / n_draws if exact else (1 + hits) / (1 + n_draws)
        out[t] = {"difference": obs, "p": p if np.isfinite(obs) else np.nan, "exact": exact,
                  "permutations": n_draws}
    return out


def _additive_columns(scores: UserScores) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Additive test -> (per-user numerator, per-user denominator) of one fold."""
    ones = np.ones(len(scores))
    out = {HIT_RATE: (np.asarray(scores.hit, dtype=np.float64), ones),
           MRR: (np.asarray(scores.rr, dtype=np.float64), ones)}
    for t, v in ((BEING_LESS_WRONG, scores.blw), (LATENT_DIVERSITY, scores.ld)):
        v = np.asarray(v, dtype=np.float64)
        ok = ~np.isnan(v)
        out[t] = (np.where(ok, v, 0.0), ok.astype(np.float64))
    return out


def _observed_difference(a: tuple[np.ndarray, np.ndarray],
                         b: tuple[np.ndarray, np.ndarray]) -> float:
    """``other - baseline`` of a ratio of user sums, as observed (no user swapped)."""
    (num_a, den_a), (num_b, den_b) = a, b
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(num_b.sum() / den_b.sum() - num_a.sum() / den_a.sum())


def _ratio_difference(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                      swaps: np.ndarray) -> np.ndarray:
    """``other - baseline`` of a ratio of user sums, after swapping the users in ``swaps``.

    ``swaps`` (draws x users, 0/1) moves each marked user's numerator and denominator to the
    other run.
    """
    (num_a, den_a), (num_b, den_b) = a, b
    # NumPy's pairwise sums in a fixed order: the same bits on any machine
    d_num = (swaps * (num_b - num_a)).sum(axis=1)
    d_den = (swaps * (den_b - den_a)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (num_b.sum() - d_num) / (den_b.sum() - d_den) \
            - (num_a.sum() + d_num) / (den_a.sum() + d_den)


# --------------------------------------------------------------------------- checks


def _check_runs(runs: Sequence[Sequence[UserScores]]) -> int:
    """The number of folds, after checking that every run has the same users per fold."""
    if len(runs) == 0 or len(runs[0]) == 0:
        raise ConfigError("paired tests need at least one run with at least one fold.")
    n_folds = len(runs[0])
    for r, run in enumerate(runs):
        if len(run) != n_folds or any(len(run[f]) != len(runs[0][f]) for f in range(n_folds)):
            raise ConfigError(
                f"paired tests need the same folds and test users in every run; run {r} has "
                f"{[len(s) for s in run]} users per fold, run 0 has "
                f"{[len(s) for s in runs[0]]}.")
    return n_folds


def _available(runs: Sequence[Sequence[UserScores]]) -> list[str]:
    """The leaderboard tests every fold of every run can recompute, in order."""
    slices = set.intersection(*(set(s.slices) for run in runs for s in run))
    return [t for t in LEADERBOARD_TESTS if t in ADDITIVE_TESTS or t in slices]
