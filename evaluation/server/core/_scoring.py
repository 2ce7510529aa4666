"""The server's own scores of a submission: phase-1, phase-2 and the interval on the board.

The scores come from the per-fold test values alone, with the phase's references, exactly as
the harness aggregates a run (:func:`evaluation.challenge.aggregate`); the scores a client
claims are only compared with them. The interval is a bootstrap over folds: the fold means of
resampled folds, scored. With few folds (the official protocol has 4) every resample is
enumerated, so the interval is exact and needs no seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np

from evaluation._util.jsonable import json_sha256
from evaluation.challenge import (
    GATED_SCORE,
    HIT_RATE,
    LEADERBOARD_TESTS,
    References,
    aggregate,
    phase2_score,
)
from evaluation.errors import ConfigError, EvalRSError, SubmissionRejected
from evaluation.server.core._schema import Submission

#: Up to this many folds the bootstrap enumerates all ``n**n`` resamples (6**6 = 46,656).
EXACT_MAX_FOLDS = 6
#: Resamples drawn, with ``RESAMPLE_SEED``, when there are more folds.
N_RESAMPLES = 2000
RESAMPLE_SEED = 0
#: The interval's percentiles: a 95 % interval.
PERCENTILES = (2.5, 97.5)
#: A claimed score differs when it is not within this relative tolerance of the server's.
REL_TOL = 1e-9
#: ... nor within this absolute one (a relative tolerance alone is void at zero).
ABS_TOL = 1e-12
#: The parts of a references file that change a score.
_SCORING_KEYS = ("baseline", "best", "hit_rate_threshold", "groups", "weights")


@dataclass(frozen=True)
class Scores:
    """The server's scores of one submission in one phase.

    Attributes
    ----------
    phase1_score : float
        The mean of the nine leaderboard tests (each a fold mean).
    leaderboard_score : float
        The phase-2 score with the phase's references.
    interval : tuple of float
        The 95 % bootstrap-over-folds interval of the leaderboard score.
    tests : dict of str to float
        The fold mean of each leaderboard test.
    num_folds : int
    references_sha256 : str
        The content hash of the references scored with (``json_sha256`` of
        ``References.to_dict()``); tells whether a client's claim was made with the same
        references.
    """

    phase1_score: float
    leaderboard_score: float
    interval: tuple[float, float]
    tests: dict[str, float]
    num_folds: int
    references_sha256: str = ""


def recompute(fold_tests: Sequence[Mapping[str, float]], references: References) -> Scores:
    """Score a run from its per-fold leaderboard tests.

    Parameters
    ----------
    fold_tests : sequence of Mapping
        One ``{test: value}`` per fold, in fold order, with the nine leaderboard tests (other
        keys are ignored), e.g. ``Submission.fold_tests()``.
    references : References
        The phase's references.

    Returns
    -------
    Scores

    Raises
    ------
    SubmissionRejected
        422 when there are no folds, or a fold lacks a leaderboard test or has a value that
        is not a finite number.
    """
    rows = _rows(fold_tests)
    try:
        agg = aggregate(rows, references)
    except ConfigError as exc:
        raise SubmissionRejected(422, str(exc)) from None
    return Scores(
        phase1_score=float(agg["phase1_score"]),
        leaderboard_score=float(agg["phase2_score"]),
        interval=fold_bootstrap_interval(rows, references),
        tests={t: float(agg["mean"][t]) for t in LEADERBOARD_TESTS},
        num_folds=len(rows),
        references_sha256=references_sha256(references),
    )


def _rows(fold_tests: Sequence[Mapping[str, float]]) -> list[dict[str, float]]:
    """The nine leaderboard tests of each fold as floats; ``SubmissionRejected`` otherwise."""
    if len(fold_tests) == 0:
        raise SubmissionRejected(422, "the run has no folds to score")
    rows = []
    for i, tests in enumerate(fold_tests):
        missing = [t for t in LEADERBOARD_TESTS if t not in tests]
        if missing:
            raise SubmissionRejected(422, f"fold {i} lacks the leaderboard test(s) {missing}")
        bad = {t: tests[t] for t in LEADERBOARD_TESTS
               if isinstance(tests[t], bool) or not isinstance(tests[t], (int, float))
               or not math.isfinite(tests[t])}
        if bad:
            raise SubmissionRejected(422, f"fold {i}: the test value(s) {bad} are not finite "
                                          f"numbers")
        rows.append({t: float(tests[t]) for t in LEADERBOARD_TESTS})
    return rows


def references_sha256(references: References) -> str:
    """The content hash of what ``references`` score with: baseline and best values, gate,
    groups and weights (not their name, description or notes)."""
    values = references.to_dict()
    return json_sha256({k: values[k] for k in _SCORING_KEYS})


# --------------------------------------------------------------------------- the interval


def fold_bootstrap_interval(rows: Sequence[Mapping[str, float]],
                            references: References) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of the phase-2 score over resamples of the folds.

    A resample draws ``n`` of the ``n`` folds with replacement; its score is the phase-2 score
    of its fold means. With ``n <= EXACT_MAX_FOLDS`` every one of the ``n**n`` resamples counts
    once (percentiles of the full enumeration, NumPy's linear interpolation); with more folds,
    ``N_RESAMPLES`` resamples drawn with ``RESAMPLE_SEED``.

    Parameters
    ----------
    rows : sequence of Mapping
        The nine leaderboard tests of each fold.
    references : References

    Returns
    -------
    tuple of float
        ``(low, high)``.
    """
    n = len(rows)
    matrix = np.array([[r[t] for t in LEADERBOARD_TESTS] for r in rows], dtype=np.float64)
    if n <= EXACT_MAX_FOLDS:
        # a resample's score depends only on which folds it holds, not on their order: each
        # multiset is scored once and counts as often as the ordered resamples it stands for
        samples, weights = _multisets(n)
        scores = np.repeat(_resample_scores(matrix, samples, references), weights)
    else:
        draws = np.random.default_rng(RESAMPLE_SEED).integers(0, n, size=(N_RESAMPLES, n))
        scores = _resample_scores(matrix, np.sort(draws, axis=1), references)
    low, high = np.percentile(scores, PERCENTILES)
    return float(low), float(high)


def _resample_scores(matrix: np.ndarray, samples: np.ndarray,
                     references: References) -> np.ndarray:
    """The phase-2 score of each resample (a row of fold indices, sorted), all at once.

    The same floating-point operations, in the same order, as ``phase2_score`` of each
    resample's fold means (``matrix[sample].mean(axis=0)``): the fold means are summed fold by
    fold and divided by ``n``; each group's normalised tests are averaged as ``np.mean`` does;
    the weighted group means are added group by group. So the scores are bit-identical to the
    one-resample-at-a-time loop, only without its Python loop.
    """
    index = {t: i for i, t in enumerate(LEADERBOARD_TESTS)}
    if any(t not in index for t in references.tests):  # not a leaderboard test: the slow path
        return np.array([phase2_score(dict(zip(LEADERBOARD_TESTS, m.tolist())), references)
                         for m in _fold_means(matrix, samples)])
    means = _fold_means(matrix, samples)
    total = sum(references.weights.values())
    acc = 0
    for g, members in references.groups.items():
        cols = [index[t] for t in members]
        base = np.array([references.baseline[t] for t in members], dtype=np.float64)
        span = np.array([references.best[t] - references.baseline[t] for t in members],
                        dtype=np.float64)
        norm = (means[:, cols] - base) / span
        acc = acc + references.weights[g] * norm.mean(axis=1)
    scores = np.asarray(acc / total, dtype=np.float64)
    gated = means[:, index[HIT_RATE]] < references.hit_rate_threshold
    return np.where(gated, GATED_SCORE, scores)


def _fold_means(matrix: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The fold means of each resample: ``(k, tests)``, summed in the resample's order."""
    acc = matrix[samples[:, 0]].copy()
    for j in range(1, samples.shape[1]):
        acc += matrix[samples[:, j]]
    return acc / samples.shape[1]


@lru_cache(maxsize=EXACT_MAX_FOLDS)
def _multisets(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each multiset of ``n`` folds out of ``n`` (a sorted row of fold indices) and how many of
    the ``n**n`` ordered resamples it stands for (the multinomial coefficient)."""
    samples = np.array(list(combinations_with_replacement(range(n), n)), dtype=np.intp)
    weights = []
    for sample in samples:
        ways = math.factorial(n)
        for c in np.bincount(sample, minlength=n):
            ways //= math.factorial(int(c))
        weights.append(ways)
    samples.setflags(write=False)
    return samples, np.array(weights, dtype=np.intp)


# --------------------------------------------------------------------------- the claims


def claimed_differs(submission: Submission, scores: Scores) -> bool:
    """Whether a score the client claims differs from the server's.

    The phase-1 claims (``results.phase1_score``, ``results.aggregate.phase1_score``) are
    compared always. The phase-2 claims (the top-level ``leaderboard_score``,
    ``results.leaderboard_score``, ``results.phase2_score``, ``results.aggregate.phase2_score``)
    are compared when the client scored with the same references as the server (the content
    hash of ``results.references.values`` equals ``scores.references_sha256``, or the latter is
    unknown): a phase with other references scores every run differently, and that is no sign
    of an edited file. Claims that are None or absent claim nothing.

    Parameters
    ----------
    submission : Submission
    scores : Scores
        The server's scores of it (:func:`recompute`).

    Returns
    -------
    bool
        True when some compared claim is not within ``REL_TOL`` (relative) or ``ABS_TOL``
        (absolute) of the server's value.
    """
    phase1, phase2 = _claims(submission)
    checks = [(c, scores.phase1_score) for c in phase1]
    if not scores.references_sha256 or _client_references(submission) == scores.references_sha256:
        checks += [(c, scores.leaderboard_score) for c in phase2]
    return any(not _close(claim, actual) for claim, actual in checks)


def _claims(submission: Submission) -> tuple[list, list]:
    """The phase-1 and phase-2 scores the submission claims (numbers only)."""
    results = submission.results
    agg = results.aggregate or {}
    phase1 = [results.phase1_score, agg.get("phase1_score")]
    phase2 = [submission.leaderboard_score, results.leaderboard_score, results.phase2_score,
              agg.get("phase2_score")]
    return [c for c in phase1 if _is_number(c)], [c for c in phase2 if _is_number(c)]


def _client_references(submission: Submission) -> str | None:
    """The content hash of the references the client scored with, or None when unknown."""
    record = submission.results.references
    values = record.get("values") if isinstance(record, Mapping) else None
    if not isinstance(values, Mapping):
        return None
    try:
        return references_sha256(References.from_dict(values))
    except (EvalRSError, TypeError, ValueError, AttributeError):  # untrusted data: unknown
        return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _close(claim: float, actual: float) -> bool:
    return math.isclose(float(claim), actual, rel_tol=REL_TOL, abs_tol=ABS_TOL)
