"""The leaderboard scores of a run: fold means of the tests, phase-1 and phase-2 scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from evaluation.challenge._references import References, is_finite_number
from evaluation.challenge._spec import GATED_SCORE, HIT_RATE, LEADERBOARD_TESTS
from evaluation.errors import ConfigError


def phase1_score(tests: Mapping[str, float], names: Sequence[str] = LEADERBOARD_TESTS) -> float:
    """The phase-1 score: the mean of the leaderboard tests.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means).
    names : sequence of str
        The tests to average (default: the nine leaderboard tests).

    Returns
    -------
    float

    Raises
    ------
    ConfigError
        When a test of ``names`` is missing.
    """
    _require(tests, names)
    return float(np.mean([tests[t] for t in names]))


def normalise(tests: Mapping[str, float], references: References) -> dict[str, float]:
    """Each test of the references normalised as ``(x - baseline) / (best - baseline)``.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means).
    references : References

    Returns
    -------
    dict of str to float
        Test name -> normalised value, for every test of ``references``.

    Raises
    ------
    ConfigError
        When a test of the references is missing.
    """
    _require(tests, references.tests)
    return {
        t: (tests[t] - references.baseline[t]) / (references.best[t] - references.baseline[t])
        for t in references.tests
    }


def phase2_score(tests: Mapping[str, float], references: References) -> float:
    """The phase-2 (leaderboard) score: the hit-rate gate, then the weighted group means.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means).
    references : References

    Returns
    -------
    float
        ``GATED_SCORE`` when HIT_RATE is below the threshold, else the weighted mean over
        groups of the mean normalised value of each group's tests.

    Raises
    ------
    ConfigError
        When a test of the references is missing.
    """
    _require(tests, [HIT_RATE])
    if tests[HIT_RATE] < references.hit_rate_threshold:
        return GATED_SCORE
    norm = normalise(tests, references)
    total = sum(references.weights.values())
    return float(
        sum(
            references.weights[g] * np.mean([norm[t] for t in members])
            for g, members in references.groups.items()
        )
        / total
    )


def _require(tests: Mapping[str, float], names: Sequence[str]) -> None:
    """Nothing; a ``ConfigError`` naming the tests of ``names`` missing from ``tests``."""
    missing = [t for t in names if t not in tests]
    if missing:
        raise ConfigError(
            f"test results lack {missing}; the leaderboard needs every one of "
            f"{list(names)}. A custom RecList must keep the EvalRSRecList tests."
        )


def aggregate(
    fold_tests: Sequence[Mapping[str, float]], references: References | None = None
) -> dict:
    """Mean and standard deviation over folds of every scalar test, and the scores.

    Parameters
    ----------
    fold_tests : sequence of Mapping
        One ``{test name: value}`` mapping per fold. Non-scalar values are skipped; a test
        that is None or NaN in some fold has a NaN mean.
    references : References, optional
        Without them the phase-2 entries are None.

    Returns
    -------
    dict
        ``mean`` and ``std`` (sample standard deviation, ``ddof=1``; 0 for a single fold) per
        test, ``num_folds``, ``phase1_score``, ``phase2_score``, ``gated`` (HIT_RATE below
        the threshold) and ``normalised`` (test -> normalised fold mean).

    Raises
    ------
    ConfigError
        When there are no folds or a leaderboard test is missing.
    """
    if not fold_tests:
        raise ConfigError("aggregate needs the results of at least one fold, got none.")
    names = [n for n, v in fold_tests[0].items()
             if v is None or is_finite_number(v) or _is_nan(v)]
    mean, std = {}, {}
    for name in names:
        # a test undefined in some fold (None/NaN) is undefined on average too
        values = np.array([np.nan if f.get(name) is None else float(f[name])
                           for f in fold_tests], dtype=np.float64)
        mean[name] = float(values.mean())
        std[name] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    out: dict = {"mean": mean, "std": std, "num_folds": len(fold_tests)}
    out["phase1_score"] = phase1_score(mean)
    if references is not None:
        out["phase2_score"] = phase2_score(mean, references)
        out["gated"] = mean[HIT_RATE] < references.hit_rate_threshold
        out["normalised"] = normalise(mean, references)
    else:
        out["phase2_score"] = None
        out["gated"] = None
        out["normalised"] = None
    return out


def _is_nan(v) -> bool:
    """Whether ``v`` is a float NaN."""
    return isinstance(v, float) and math.isnan(v)
