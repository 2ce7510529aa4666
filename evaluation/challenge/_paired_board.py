"""Paired bootstrap replicates of the scores of a board's teams, one team at a time.

Every team of a board is scored on the same folds and test users. The resamples (how often
each user of each fold is drawn in each replicate) are drawn once, with the run's own scheme
(users resampled with replacement within each fold, a seeded stream per fold: the counts of
``resample_counts`` on the streams of ``fold_streams``), and every team is scored on the same
resamples. The replicates of two teams are therefore paired, and a team's replicates depend
only on its own per-user values and the resamples: they can be computed once per submission
and kept, so that an upload costs the new team's replicates only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from threadpoolctl import threadpool_limits

from evaluation._util.validation import check_int
from evaluation.challenge._aggregate import normalise, phase2_score, scored_groups
from evaluation.challenge._bootstrap import fold_streams, resample_counts
from evaluation.challenge._references import References
from evaluation.challenge._scores import UserScores, _tests_from_sums
from evaluation.challenge._spec import GATED_SCORE, HIT_RATE, LEADERBOARD_TESTS
from evaluation.errors import ConfigError

#: Replicates summed at once: bounds the float copies of the counts to a few MiB per fold.
_SUM_CHUNK = 128


@dataclass(frozen=True)
class PairedResamples:
    """The resamples every team of a board is scored on.

    Attributes
    ----------
    seed : int
    n_boot : int
    counts : tuple of numpy.ndarray
        Per fold, shape ``(n_boot, n_users)``: how often each user is drawn in each replicate
        (``uint8``, or ``uint16`` in the rare fold where a user is drawn over 255 times), the
        counts of :func:`resample_counts` on the fold's stream of :func:`fold_streams`.
    """

    seed: int
    n_boot: int
    counts: tuple[np.ndarray, ...]

    @property
    def fold_sizes(self) -> tuple[int, ...]:
        """The number of test users of each fold."""
        return tuple(c.shape[1] for c in self.counts)

    @property
    def nbytes(self) -> int:
        """The memory the counts take."""
        return sum(c.nbytes for c in self.counts)


@dataclass(frozen=True)
class TeamReplicates:
    """One team's scores, as the board shows them and on every paired resample.

    Attributes
    ----------
    score : float
        The phase-2 score of the fold means of the tests (the board's score).
    replicates : numpy.ndarray
        Shape ``(n_boot,)``: the score on each resample.
    groups : tuple of str
        The phase-2 groups, in the references' order.
    group_scores : numpy.ndarray
        Shape ``(n_groups,)``: each group's mean normalised test (not gated).
    group_replicates : numpy.ndarray
        Shape ``(n_groups, n_boot)``.
    tests : dict of str to float
        The fold mean of each leaderboard test.
    """

    score: float
    replicates: np.ndarray
    groups: tuple[str, ...]
    group_scores: np.ndarray
    group_replicates: np.ndarray
    tests: dict[str, float]

    @property
    def nbytes(self) -> int:
        """The memory the replicates take."""
        return self.replicates.nbytes + self.group_replicates.nbytes


def paired_resamples(seed: int, n_boot: int, fold_sizes: Sequence[int]) -> PairedResamples:
    """Draw the resamples of a board: the run's own, per fold, from ``seed``.

    Parameters
    ----------
    seed : int
        Seed of the resampling (non-negative).
    n_boot : int
        Replicates (at least 2).
    fold_sizes : sequence of int
        The number of test users of each fold (at least 1 each).

    Returns
    -------
    PairedResamples

    Raises
    ------
    ConfigError
        When a parameter is out of range.
    """
    check_int("seed", seed, minimum=0, owner="paired_resamples")
    check_int("n_boot", n_boot, minimum=2, owner="paired_resamples")
    if not fold_sizes:
        raise ConfigError("paired_resamples: fold_sizes must name at least one fold, got none")
    for i, size in enumerate(fold_sizes):
        check_int(f"fold_sizes[{i}]", size, minimum=1, owner="paired_resamples")
    streams = fold_streams(seed, len(fold_sizes))
    counts = tuple(_fold_counts(np.random.default_rng(stream), int(size), n_boot)
                   for stream, size in zip(streams, fold_sizes))
    return PairedResamples(seed=seed, n_boot=n_boot, counts=counts)


def _fold_counts(rng: np.random.Generator, n_users: int, n_boot: int) -> np.ndarray:
    """One fold's counts, kept small: a count is at most ``n_users`` and almost never 256."""
    out = np.empty((n_boot, n_users), dtype=np.uint8)
    for start, counts in resample_counts(rng, n_users, n_boot):
        if counts.max(initial=0) > np.iinfo(np.uint8).max:
            out = out.astype(np.uint16)
        out[start:start + len(counts)] = counts
    return out


def team_replicates(folds: Sequence[UserScores], resamples: PairedResamples,
                    references: References) -> TeamReplicates:
    """A team's phase-2 score and group scores on every resample of a board.

    Each resample's tests are computed per fold from the resampled users' contributions (the
    MRED tests from the resampled groups), averaged over folds and scored as
    :func:`phase2_score` scores them (the hit-rate gate, the weighted group means); the
    same counts for every team make the replicates of two teams paired.

    Parameters
    ----------
    folds : sequence of UserScores
        The team's per-user values of each fold, on the board's users.
    resamples : PairedResamples
        The board's resamples (:func:`paired_resamples`).
    references : References
        The phase's references.

    Returns
    -------
    TeamReplicates

    Raises
    ------
    ConfigError
        When the folds do not match the resamples (their number or users per fold), or a
        leaderboard test cannot be computed from them.
    """
    _check_folds(folds, resamples)
    # the sums need each fold's design matrix (~10 MiB at full scale), which UserScores keeps
    # on the object: work on copies (sharing the arrays) so that it goes with them, and not
    # with values a caller keeps for longer
    folds = [replace(f) for f in folds]
    per_fold_point = [f.tests() for f in folds]
    per_fold_reps = _per_fold(folds, resamples)
    tests = {t: float(np.mean([p[t][0] for p in per_fold_point])) for t in LEADERBOARD_TESTS}
    means = {t: np.mean([r[t] for r in per_fold_reps], axis=0) for t in LEADERBOARD_TESTS}
    groups, weights = scored_groups(references)
    norm = normalise(tests, references)
    group_scores = np.array([np.mean([norm[t] for t in members])
                             for members in groups.values()])
    group_reps = _group_replicates(means, references, groups)
    return TeamReplicates(
        score=phase2_score(tests, references), replicates=_score(means, group_reps, weights,
                                                                 references),
        groups=tuple(groups), group_scores=group_scores, group_replicates=group_reps,
        tests=tests)


def _check_folds(folds: Sequence[UserScores], resamples: PairedResamples) -> None:
    """Nothing; a ``ConfigError`` when the folds' users differ from the resamples'."""
    sizes = tuple(len(f) for f in folds)
    if sizes != resamples.fold_sizes:
        raise ConfigError(f"team_replicates: the per-user values have {sizes} users per fold, "
                          f"the board's resamples {resamples.fold_sizes}; every team must be "
                          f"scored on the board's folds and users")


def _per_fold(folds: Sequence[UserScores], resamples: PairedResamples
              ) -> list[dict[str, np.ndarray]]:
    """Each fold's test replicates, the folds in parallel threads.

    Each fold's sums are its own (the same bits in any thread); NumPy releases the GIL in
    the products. A multi-threaded BLAS inside each thread would only oversubscribe the
    cores, so it runs single-threaded here.
    """
    def one(f: int) -> dict[str, np.ndarray]:
        return _fold_replicates(folds[f], resamples.counts[f])

    workers = min(len(folds), os.cpu_count() or 1)
    with threadpool_limits(limits=1, user_api="blas"):
        if workers == 1:
            return [one(f) for f in range(len(folds))]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, range(len(folds))))


def _fold_replicates(scores: UserScores, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Test -> its value on each resample of one fold (``counts``: replicates x users).

    The tests are ratios of weighted column sums of the fold's design (``UserScores``): the
    0/1 columns summed in float32 (integer sums below 2**24 are exact), the real-valued ones
    (rr, BLW, LD) in float64 by the BLAS, a few chunks of replicates at a time.
    """
    layout = scores._design()
    if len(scores) >= 2**24:  # never at the challenge's scale: float32 sums would round
        return scores.resampled_tests(counts.astype(np.intp))
    binary_t = layout["binary"].T
    real_t = layout["real"].T
    sums = np.empty((len(counts), layout["n_columns"]))
    for start in range(0, len(counts), _SUM_CHUNK):
        block = counts[start:start + _SUM_CHUNK].astype(np.float32)
        rows = slice(start, start + len(block))
        sums[rows, layout["binary_columns"]] = block @ binary_t
        sums[rows, layout["real_columns"]] = block.astype(np.float64) @ real_t
    return _tests_from_sums(sums, layout)


def _group_replicates(means: Mapping[str, np.ndarray], references: References,
                      groups: Mapping[str, list[str]]) -> np.ndarray:
    """Each group's mean normalised test on each resample: ``(n_groups, n_boot)``."""
    rows = []
    for members in groups.values():
        norm = [(means[t] - references.baseline[t]) / (references.best[t] - references.baseline[t])
                for t in members]
        rows.append(np.mean(norm, axis=0))
    return np.array(rows)


def _score(means: Mapping[str, np.ndarray], group_reps: np.ndarray,
           weights: Mapping[str, float], references: References) -> np.ndarray:
    """The phase-2 score on each resample: gated, else the weighted mean of the groups."""
    w = np.array(list(weights.values()), dtype=np.float64)
    scores = (w @ group_reps) / w.sum()
    return np.where(means[HIT_RATE] < references.hit_rate_threshold, GATED_SCORE, scores)
