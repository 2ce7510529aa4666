"""Confidence intervals of the tests and scores: a seeded bootstrap over test users.

Within each fold the users are resampled with replacement, every test is recomputed from the
per-user contributions (:class:`UserScores`), averaged over folds and turned into scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np

from evaluation._util.validation import check_int, check_number
from evaluation.challenge._aggregate import phase1_score, phase2_score
from evaluation.challenge._applicable import applicable_tests
from evaluation.challenge._references import References
from evaluation.challenge._resamples import (
    RESAMPLE_CHUNK,
    PairedResamples,
    paired_test_replicates,
)
from evaluation.challenge._scores import UserScores
from evaluation.challenge._spec import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRR,
)
from evaluation.errors import ConfigError

_NORMAL = NormalDist()


def bootstrap(
    folds: Sequence[UserScores],
    references: References | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    chunk: int = RESAMPLE_CHUNK,
    not_applicable: Mapping[str, str] | None = None,
    resamples: PairedResamples | None = None,
) -> dict:
    """Bias-corrected percentile confidence intervals of each test (fold mean) and both scores.

    Each replicate resamples every fold's users with replacement (a seeded
    ``numpy.random.Generator`` per fold; the same ``seed`` gives the same intervals, to the
    bit), recomputes each test per fold, averages over folds and computes the scores from
    those averages.

    Parameters
    ----------
    folds : sequence of UserScores
        The per-user contributions of each fold.
    references : References, optional
        Needed for the phase-2 score's interval.
    n_boot : int
        Replicates (at least 2).
    seed : int
        Seed of the resampling (a non-negative int).
    level : float
        Coverage of the intervals, in (0, 1).
    chunk : int
        Replicates drawn at once (bounds memory to ``chunk x users`` counts).
    not_applicable : Mapping, optional
        Test -> reason, for the leaderboard tests the dataset cannot measure: they get no
        interval (None) and the scores are those of :func:`aggregate` without them.
    resamples : PairedResamples, optional
        The resamples of ``seed`` and ``n_boot`` drawn before (``paired_resamples``): a
        scoring worker keeps them for its folds instead of drawing them for every upload;
        the same intervals to the bit.

    Returns
    -------
    dict
        ``level``, ``n_boot``, ``seed``, ``method``, ``tests`` (test -> ``[low, high]`` or
        None), ``phase1_score`` and ``phase2_score`` intervals when every leaderboard test is
        available (the latter with references), and ``bias_dominated`` (the names whose
        interval was widened to reach its point estimate: do not trust them).

    Raises
    ------
    ConfigError
        When there are no folds or a parameter is out of range.
    """
    if not folds:
        raise ConfigError("bootstrap needs the per-user scores of at least one fold, got none.")
    check_int("n_boot", n_boot, minimum=2, owner="bootstrap")
    check_number("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                 owner="bootstrap")
    check_int("seed", seed, minimum=0, owner="bootstrap")
    check_int("chunk", chunk, minimum=1, owner="bootstrap")
    skip = not_applicable or {}
    names = [t for t in _available_tests(folds) if t not in skip]
    reps = {t: r[0] for t, r in paired_test_replicates(
        [folds], names, n_boot=n_boot, seed=seed, chunk=chunk, resamples=resamples).items()}
    point = _fold_mean([f.tests() for f in folds], names)
    alpha = (1 - level) / 2
    out: dict = {"level": level, "n_boot": n_boot, "seed": seed, "method": "bias-corrected "
                 "percentile bootstrap over test users within folds", "tests": {}}
    flagged: list[str] = []
    for t in names:
        out["tests"][t] = _interval(reps[t], point[t], alpha, flagged, t)
    out["tests"].update({t: None for t in LEADERBOARD_TESTS if t in skip})
    if set(applicable_tests(skip)) <= set(names):
        out.update(_score_intervals(reps, point, references, alpha, flagged, not_applicable))
    out["bias_dominated"] = flagged
    return out


def _available_tests(folds: Sequence[UserScores]) -> list[str]:
    """The leaderboard tests that every fold's per-user scores can recompute, in order."""
    available = {HIT_RATE, MRR, BEING_LESS_WRONG, LATENT_DIVERSITY}
    available |= set.intersection(*(set(f.slices) for f in folds))
    return [t for t in LEADERBOARD_TESTS if t in available]


def _score_intervals(reps: Mapping[str, np.ndarray], point: Mapping[str, float],
                     references: References | None, alpha: float, flagged: list[str],
                     not_applicable: Mapping[str, str] | None = None,
                     ) -> dict[str, list[float] | None]:
    """``phase1_score`` (and with references ``phase2_score``) -> its interval."""
    names = applicable_tests(not_applicable)
    matrix = np.column_stack([reps[t] for t in names])
    out = {"phase1_score": _interval(np.nanmean(matrix, axis=1), phase1_score(point, names),
                                     alpha, flagged, "phase1_score")}
    if references is not None:
        p2 = phase2_score({t: reps[t] for t in names}, references, not_applicable)
        out["phase2_score"] = _interval(p2, phase2_score(point, references, not_applicable),
                                        alpha, flagged,
                                        "phase2_score")
    return out


def _fold_mean(per_fold: Sequence[Mapping[str, np.ndarray]], names) -> dict[str, float]:
    """Test -> mean over folds of each fold's point estimate."""
    return {t: float(np.mean([f[t][0] for f in per_fold])) for t in names}


def _interval(values: np.ndarray, point: float, alpha: float,
              flagged: list | None = None, name: str = "") -> list[float] | None:
    """``[low, high]``: the bias-corrected percentile interval (Efron 1981); None when empty.

    Plain percentiles are off for the MRED tests: a resampled ``|MR_g - MR|`` is biased
    upwards, so the replicates sit below the point estimate. The correction shifts the
    quantiles by ``z0 = Phi^-1(share of replicates below the point estimate)``. ``|z0|`` is
    capped at ``Phi^-1(1 - alpha)``, the largest shift that keeps the point estimate inside
    the interval when the replicates straddle it; a capped test is named in ``flagged``: its
    sampling bias exceeds its spread (typically an MRED over tiny groups), its interval is
    widened to reach the point estimate (which may lie beyond every replicate), and it should
    not be trusted.
    """
    values = values[~np.isnan(values)]
    if len(values) == 0 or not np.isfinite(point):
        return None
    b = len(values)
    below = (np.count_nonzero(values < point) + 0.5 * np.count_nonzero(values == point)) / b
    z0 = _NORMAL.inv_cdf(float(np.clip(below, 1 / (b + 1), b / (b + 1))))
    cap = _NORMAL.inv_cdf(1 - alpha)
    if abs(z0) > cap:
        z0 = float(np.sign(z0)) * cap
        if flagged is not None:
            flagged.append(name)
    q = [_NORMAL.cdf(2 * z0 + _NORMAL.inv_cdf(p)) for p in (alpha, 1 - alpha)]
    lo, hi = np.quantile(values, q)
    if abs(z0) == cap:
        lo, hi = min(lo, point), max(hi, point)
    return [float(lo), float(hi)]
