"""Paired comparisons of every pair of teams from bootstrap replicates of their scores.

All teams of a board are scored on the same folds and test users, and each bootstrap replicate
resamples those users once for every team, so the replicates of two teams are paired: their
difference in one replicate is the difference the resampled board would have shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Standard errors below this share of the largest team's spread (or of 1e-6) are rounding
#: noise of a difference that does not vary.
_RELATIVE_NOISE = 1e-7
_ABSOLUTE_NOISE = 1e-6


@dataclass(frozen=True)
class PairwiseDifferences:
    """Simultaneous confidence intervals of every pairwise score difference.

    Attributes
    ----------
    difference : numpy.ndarray
        ``difference[i, j]`` = point score of team i minus that of team j.
    half_width : numpy.ndarray
        The intervals are ``difference ± half_width``; together they cover every true
        difference at once with probability ``level`` (bootstrap max-|t|).
    level : float
    critical : float
        The multiplier of the pairs' bootstrap standard errors.
    """

    difference: np.ndarray
    half_width: np.ndarray
    level: float
    critical: float

    def lower(self) -> np.ndarray:
        """Lower bounds of the intervals: ``lower()[i, j] > m`` says "i beats j by more than
        m", with the board-wide error of :attr:`level`."""
        return self.difference - self.half_width


def win_probabilities(replicates: np.ndarray) -> np.ndarray:
    """The share of bootstrap replicates in which each team scores above each other team.

    Parameters
    ----------
    replicates : numpy.ndarray
        Shape ``(n_teams, n_boot)``: the teams' scores in each paired replicate.

    Returns
    -------
    numpy.ndarray
        ``p[i, j]``: the share of replicates with team i above team j, ties counting half;
        ``p[i, j] + p[j, i] == 1`` and the diagonal is 0.5.
    """
    reps = np.asarray(replicates, dtype=np.float64)
    n_teams, n_boot = reps.shape
    greater = np.zeros((n_teams, n_teams), dtype=np.int64)
    above = np.empty(reps.shape, dtype=bool)
    for i in range(n_teams):  # one team against all: no teams x teams x replicates block
        np.greater(reps[i], reps, out=above)
        greater[i] = np.count_nonzero(above, axis=1)
    # one comparison is enough: j above i is the transpose, and the rest are ties
    ties = n_boot - greater - greater.T
    return (greater + 0.5 * ties) / n_boot


def simultaneous_differences(replicates: np.ndarray, point: np.ndarray,
                             level: float) -> PairwiseDifferences:
    """Intervals for all pairwise differences that hold together (bootstrap max-|t|).

    For each pair, the bootstrap standard error of the difference is the spread of its
    replicates; the critical value is the ``level`` quantile, over replicates, of the largest
    studentised deviation ``|(d*_ij - d_ij) / se_ij|`` over all pairs. Every interval
    ``d_ij ± critical * se_ij`` then covers its true difference at once with probability
    ``level`` (as the bootstrap approximates it), so any conclusion drawn from them about any
    pair keeps the chance of a single false one on the whole board below ``1 - level``.
    A pair whose difference does not vary over the replicates has a zero-width interval.

    Parameters
    ----------
    replicates : numpy.ndarray
        Shape ``(n_teams, n_boot)``.
    point : numpy.ndarray
        Shape ``(n_teams,)``: the scores the board shows.
    level : float
        Joint coverage, in (0, 1).

    Returns
    -------
    PairwiseDifferences
    """
    reps = np.asarray(replicates, dtype=np.float64)
    point = np.asarray(point, dtype=np.float64)
    centred = reps - point[:, None]
    se = _difference_se(centred)
    critical = _max_t_quantile(centred, se, level)
    return PairwiseDifferences(difference=point[:, None] - point[None, :],
                               half_width=critical * se, level=level, critical=critical)


def _difference_se(centred: np.ndarray) -> np.ndarray:
    """Bootstrap standard errors of every pairwise difference, from the covariance matrix."""
    n_boot = centred.shape[1]
    deviations = centred - centred.mean(axis=1, keepdims=True)
    cov = deviations @ deviations.T / max(n_boot - 1, 1)
    var = np.diag(cov)
    se = np.sqrt(np.clip(var[:, None] + var[None, :] - 2 * cov, 0.0, None))
    # a difference that never varies comes out as rounding noise: call it exactly zero
    noise = _RELATIVE_NOISE * max(float(np.sqrt(var.max(initial=0.0))), _ABSOLUTE_NOISE)
    return np.where(se > noise, se, 0.0)


def _max_t_quantile(centred: np.ndarray, se: np.ndarray, level: float) -> float:
    """The ``level`` quantile of the largest studentised pairwise deviation per replicate."""
    n_teams, n_boot = centred.shape
    if n_teams < 2:
        return 0.0
    # pairs whose difference never varies carry no uncertainty: they do not enter the maximum
    scale = np.where(se > 0, se, np.inf)
    # |d_ij| = |d_ji|: each pair once, divided by the smaller of its two (equal up to the
    # rounding of the covariance product) scales, i.e. the larger of its two deviations. One
    # team at a time against those below it, over every replicate: no gather of the pairs,
    # and the team's block stays in cache
    pair_scale = np.minimum(scale, scale.T)
    largest = np.zeros(n_boot)
    t = np.empty((n_teams - 1, n_boot))
    for i in range(n_teams - 1):
        rows = t[:n_teams - 1 - i]
        np.subtract(centred[i + 1:], centred[i], out=rows)
        np.abs(rows, out=rows)
        np.divide(rows, pair_scale[i, i + 1:, None], out=rows)
        np.maximum(largest, rows.max(axis=0), out=largest)
    return float(np.quantile(largest, level, method="higher"))
