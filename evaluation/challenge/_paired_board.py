"""Paired bootstrap replicates of the scores of a board's teams, one team at a time.

Every team of a board is scored on the same folds and test users, and on the same resamples,
drawn once (:func:`paired_resamples`: the run's own scheme) and kept. The replicates of two
teams are therefore paired, and a team's replicates depend only on its own per-user values
and the resamples: they can be computed once per submission and kept, so that an upload
costs the new team's replicates only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from evaluation.challenge._aggregate import group_scores, phase2_score
from evaluation.challenge._references import References
from evaluation.challenge._resamples import PairedResamples, over_folds
from evaluation.challenge._scores import UserScores, _counted_binary_sums, _tests_from_sums
from evaluation.challenge._spec import LEADERBOARD_TESTS
from evaluation.errors import ConfigError

#: Replicates summed at once: bounds the float copies of the counts to a few MiB per fold.
_SUM_CHUNK = 128


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
    groups = group_scores(tests, references)
    return TeamReplicates(
        score=phase2_score(tests, references), replicates=phase2_score(means, references),
        groups=tuple(groups), group_scores=np.array(list(groups.values())),
        group_replicates=np.array(list(group_scores(means, references).values())),
        tests=tests)


def metric_score(folds: Sequence[np.ndarray]) -> float:
    """A team's score under a protocol scored by one metric: the fold mean of each fold's mean
    over its users (NaN when a fold has no user)."""
    return float(np.mean([np.asarray(f, dtype=np.float64).mean() if len(f) else np.nan
                          for f in folds])) if len(folds) else float("nan")


def metric_replicates(folds: Sequence[np.ndarray], resamples: PairedResamples,
                      metric: str) -> TeamReplicates:
    """A team's score and replicates under a protocol scored by one metric (its per-user
    values, e.g. the sampled-negative alternative's corrected estimates).

    The score is the fold mean of each fold's mean over its users; replicate r the fold
    mean of each fold's mean over resample r's users (drawn with replacement, so a user
    counts as often as it is drawn): on the board's resamples, so that two teams'
    replicates are paired as :func:`team_replicates`' are. The one group is the metric.

    Raises
    ------
    ConfigError
        When the folds do not match the resamples (their number or users per fold), or a
        fold has no user.
    """
    sizes = tuple(len(f) for f in folds)
    if sizes != resamples.fold_sizes or 0 in sizes:
        raise ConfigError(f"metric_replicates: the per-user values have {sizes} users per "
                          f"fold, the board's resamples {resamples.fold_sizes}; every team "
                          f"must be scored on the board's folds and users (none empty)")
    values = [np.asarray(f, dtype=np.float64) for f in folds]

    def fold(f: int) -> np.ndarray:
        counts = resamples.counts[f]
        out = np.empty(len(counts))
        for start in range(0, len(counts), _SUM_CHUNK):
            block = counts[start:start + _SUM_CHUNK].astype(np.float64)
            out[start:start + len(block)] = (block @ values[f]) / block.sum(axis=1)
        return out

    per_fold = over_folds(fold, len(values))
    score = metric_score(values)
    replicates = np.mean(per_fold, axis=0)
    return TeamReplicates(score=score, replicates=replicates, groups=(metric,),
                          group_scores=np.array([score]), group_replicates=replicates[None, :],
                          tests={metric: score})


def _check_folds(folds: Sequence[UserScores], resamples: PairedResamples) -> None:
    """Nothing; a ``ConfigError`` when the folds' users differ from the resamples'."""
    sizes = tuple(len(f) for f in folds)
    if sizes != resamples.fold_sizes:
        raise ConfigError(f"team_replicates: the per-user values have {sizes} users per fold, "
                          f"the board's resamples {resamples.fold_sizes}; every team must be "
                          f"scored on the board's folds and users")


def _per_fold(folds: Sequence[UserScores], resamples: PairedResamples
              ) -> list[dict[str, np.ndarray]]:
    """Each fold's test replicates, the folds in parallel threads (each fold's sums are its
    own: the same bits in any thread)."""
    return over_folds(lambda f: _fold_replicates(folds[f], resamples.counts[f],
                                                 resamples.kept_sums[f]), len(folds))


def _fold_replicates(scores: UserScores, counts: np.ndarray, kept: dict
                     ) -> dict[str, np.ndarray]:
    """Test -> its value on each resample of one fold (``counts``: replicates x users).

    The tests are ratios of weighted column sums of the fold's design (``UserScores``): the
    0/1 columns are exact integers, summed over the team's hit users only, the sums that
    depend on the users alone read from ``kept`` (``_counted_binary_sums``); the real-valued
    ones (rr, BLW, LD) in float64 by the BLAS, ``_SUM_CHUNK`` replicates at a time (the
    chunks' shape decides the BLAS's order of summation, hence the bits).
    """
    layout = scores._design()
    if len(scores) >= 2**24:  # never at the challenge's scale: float32 sums would round
        return scores.resampled_tests(counts.astype(np.intp))
    real_t = layout["real"].T
    sums = np.empty((len(counts), layout["n_columns"]))
    sums[:, layout["binary_columns"]] = _counted_binary_sums(scores, counts, kept)
    block = np.empty((min(_SUM_CHUNK, len(counts)), counts.shape[1]))  # reused: no page faults
    for start in range(0, len(counts), _SUM_CHUNK):
        rows = slice(start, min(start + _SUM_CHUNK, len(counts)))
        part = block[:rows.stop - start]
        np.copyto(part, counts[rows], casting="unsafe")  # integers: exact in float64
        sums[rows, layout["real_columns"]] = part @ real_t
    return _tests_from_sums(sums, layout)
