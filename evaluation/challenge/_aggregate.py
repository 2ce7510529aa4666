"""The leaderboard scores of a run: fold means of the tests, phase-1 and phase-2 scores.

A test that is not applicable to the dataset (see :mod:`evaluation.challenge._applicable`) has
no value: it is left out of the phase-1 mean and of its phase-2 group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, overload

import numpy as np

from evaluation.challenge._applicable import applicable_tests
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


def normalise(tests: Mapping[str, Any], references: References,
              not_applicable: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Each test of the references normalised as ``(x - baseline) / (best - baseline)``.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means), or arrays of them.
    references : References
    not_applicable : Mapping, optional
        Tests left out (test -> reason): they are not normalised.

    Returns
    -------
    dict
        Test name -> normalised value (of the values' type), for every applicable test of
        ``references``.

    Raises
    ------
    ConfigError
        When a test of the references is missing.
    """
    names = [t for t in references.tests if t not in (not_applicable or {})]
    _require(tests, names)
    return {
        t: (tests[t] - references.baseline[t]) / (references.best[t] - references.baseline[t])
        for t in names
    }


def scored_groups(references: References, not_applicable: Mapping[str, str] | None = None
                  ) -> tuple[dict[str, list[str]], dict[str, float]]:
    """The phase-2 groups and weights that score a run whose tests ``not_applicable`` are left out.

    Within a group the applicable tests are averaged (each with weight 1 / their number); a
    group left without an applicable test is dropped and the weights of the remaining groups
    are scaled so that they keep the references' total. With every test applicable these are
    the references' own groups and weights, unchanged.

    Parameters
    ----------
    references : References
    not_applicable : Mapping, optional
        Test -> reason, for the tests left out.

    Returns
    -------
    tuple of (dict, dict)
        Group -> its applicable tests, and group -> its weight, in the references' order.

    Raises
    ------
    ConfigError
        When no group has an applicable test, or the remaining weights sum to 0.
    """
    skip = not_applicable or {}
    if not any(t in skip for t in references.tests):
        return references.groups, references.weights
    groups = {g: [t for t in members if t not in skip]
              for g, members in references.groups.items()}
    groups = {g: members for g, members in groups.items() if members}
    kept = {g: w for g, w in references.weights.items() if g in groups}
    total, kept_total = sum(references.weights.values()), sum(kept.values())
    if not groups or kept_total <= 0:
        raise ConfigError(
            f"no phase-2 group of the references keeps an applicable test with a positive "
            f"weight once {sorted(skip)} are left out (not applicable); groups: "
            f"{references.groups}, weights: {references.weights}. Compute references for this "
            f"dataset: `python -m evaluation references SOURCE`."
        )
    if len(kept) == len(references.weights):
        return groups, kept
    return groups, {g: w * total / kept_total for g, w in kept.items()}


def check_coverage(references: References, not_applicable: Mapping[str, str]) -> None:
    """Nothing; a ``ConfigError`` when the references lack an applicable leaderboard test.

    Parameters
    ----------
    references : References
    not_applicable : Mapping
        Test -> reason, for the tests of the run that are not applicable.

    Raises
    ------
    ConfigError
        Naming the tests the references do not cover.
    """
    covered = set(references.tests)
    lacking = [t for t in LEADERBOARD_TESTS if t not in not_applicable and t not in covered]
    if lacking:
        where = references.path or references.name or "(in memory)"
        raise ConfigError(
            f"references {where} cover {references.tests} but not {lacking}, which apply to "
            f"this dataset: a phase-2 score without them would leave applicable tests out. "
            f"Fix: compute references on this dataset (`python -m evaluation references "
            f"SOURCE --out refs.json`) or pass references=None."
        )


@overload
def phase2_score(tests: Mapping[str, float], references: References,
                 not_applicable: Mapping[str, str] | None = None) -> float: ...


@overload
def phase2_score(tests: Mapping[str, np.ndarray], references: References,
                 not_applicable: Mapping[str, str] | None = None) -> np.ndarray: ...


def phase2_score(tests, references, not_applicable=None):
    """The phase-2 (leaderboard) score: the hit-rate gate, then the weighted group means.

    One code path for a run's fold means and for arrays of them (a board's or an interval's
    replicates): every value of the result is the score of the test values at the same index,
    to the bit, whatever the shape.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means), or arrays of one shape (e.g. one value per
        replicate).
    references : References
    not_applicable : Mapping, optional
        Test -> reason, for the tests the dataset cannot measure: they are left out of their
        groups and the weights renormalised (:func:`scored_groups`); the references must then
        cover every other leaderboard test (:func:`check_coverage`).

    Returns
    -------
    float or numpy.ndarray
        A float for scalar test values, else an array of their shape: ``GATED_SCORE`` where
        HIT_RATE is below the threshold, else the weighted mean over groups of the mean
        normalised value of each group's tests (:func:`group_scores`).

    Raises
    ------
    ConfigError
        When a test of the references is missing, or (with ``not_applicable``) the references
        lack an applicable test.
    """
    _require(tests, [HIT_RATE])
    if not_applicable is not None:
        check_coverage(references, not_applicable)
    gated = np.asarray(tests[HIT_RATE]) < references.hit_rate_threshold
    if gated.all():  # a gated run needs no other test
        return _shaped(np.full(gated.shape, GATED_SCORE))
    _, weights = scored_groups(references, not_applicable)
    means = group_scores(tests, references, not_applicable)
    # the groups added one after the other, then divided by the weights' total
    weighted: np.ndarray | float = 0.0
    for g, w in weights.items():
        weighted = weighted + w * means[g]
    return _shaped(np.where(gated, GATED_SCORE, weighted / sum(weights.values())))


def group_scores(tests: Mapping[str, float] | Mapping[str, np.ndarray], references: References,
                 not_applicable: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """Each phase-2 group's mean normalised test (not gated), for values of any shape.

    Parameters
    ----------
    tests : Mapping
        Test name -> value (fold means), or arrays of one shape.
    references : References
    not_applicable : Mapping, optional
        Test -> reason, for the tests left out (see :func:`scored_groups`).

    Returns
    -------
    dict of str to numpy.ndarray
        Group -> its mean normalised test, of the tests' shape, in the references' order.

    Raises
    ------
    ConfigError
        When a test of the references is missing.
    """
    values = {t: np.asarray(tests[t], dtype=np.float64) for t in references.tests if t in tests}
    norm = normalise(values, references, not_applicable)
    groups, _ = scored_groups(references, not_applicable)
    # a group's tests side by side on the last axis: each value's mean is the mean of its
    # own tests, summed in the order (and with the bits) of a mean of scalars
    return {g: np.asarray(np.mean(np.stack([norm[t] for t in members], axis=-1), axis=-1))
            for g, members in groups.items()}


def _shaped(values: np.ndarray) -> Any:
    """A float for a 0-d array, else the array."""
    return float(values) if values.ndim == 0 else values


def _require(tests: Mapping[str, Any], names: Sequence[str]) -> None:
    """Nothing; a ``ConfigError`` naming the tests of ``names`` missing from ``tests``."""
    missing = [t for t in names if t not in tests]
    if missing:
        raise ConfigError(
            f"test results lack {missing}; the leaderboard needs every one of "
            f"{list(names)}. A custom RecList must keep the EvalRSRecList tests."
        )


def aggregate(
    fold_tests: Sequence[Mapping[str, float]], references: References | None = None,
    not_applicable: Mapping[str, str] | None = None,
) -> dict:
    """Mean and standard deviation over folds of every scalar test, and the scores.

    Parameters
    ----------
    fold_tests : sequence of Mapping
        One ``{test name: value}`` mapping per fold. Non-scalar values are skipped; a test
        that is None or NaN in some fold has a NaN mean.
    references : References, optional
        Without them the phase-2 entries are None.
    not_applicable : Mapping, optional
        Test -> reason, for the leaderboard tests the dataset cannot measure (see
        :func:`~evaluation.challenge.not_applicable_tests`): their mean and std are None,
        the phase-1 score is the mean of the other tests and the phase-2 score leaves them
        out of their groups (:func:`scored_groups`).

    Returns
    -------
    dict
        ``mean`` and ``std`` (sample standard deviation, ``ddof=1``; 0 for a single fold) per
        test, ``num_folds``, ``phase1_score``, ``phase2_score``, ``gated`` (HIT_RATE below
        the threshold) and ``normalised`` (applicable test -> normalised fold mean).

    Raises
    ------
    ConfigError
        When there are no folds, an applicable leaderboard test is missing or (with
        ``not_applicable``) the references lack an applicable test.
    """
    if not fold_tests:
        raise ConfigError("aggregate needs the results of at least one fold, got none.")
    skip = not_applicable or {}
    names = [n for n, v in fold_tests[0].items()
             if v is None or is_finite_number(v) or _is_nan(v)]
    # mean and std hold None for a test left out; the scores read the measured means only
    mean: dict[str, float | None] = {}
    std: dict[str, float | None] = {}
    measured: dict[str, float] = {}
    for name in names:
        if name in skip:
            mean[name] = std[name] = None
            continue
        # a test undefined in some fold (None/NaN) is undefined on average too
        values = np.array([np.nan if f.get(name) is None else float(f[name])
                           for f in fold_tests], dtype=np.float64)
        mean[name] = measured[name] = float(values.mean())
        std[name] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    out: dict = {"mean": mean, "std": std, "num_folds": len(fold_tests)}
    out["phase1_score"] = phase1_score(measured, applicable_tests(skip))
    if references is not None:
        out["phase2_score"] = phase2_score(measured, references, not_applicable)
        out["gated"] = measured[HIT_RATE] < references.hit_rate_threshold
        out["normalised"] = normalise(measured, references, skip)
    else:
        out["phase2_score"] = None
        out["gated"] = None
        out["normalised"] = None
    return out


def _is_nan(v) -> bool:
    """Whether ``v`` is a float NaN."""
    return isinstance(v, float) and math.isnan(v)
