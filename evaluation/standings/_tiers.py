"""Tiers and rank intervals of a board, from simultaneous pairwise intervals."""

from __future__ import annotations

import numpy as np

from evaluation.standings._pairwise import PairwiseDifferences


def separated(pairs: PairwiseDifferences, min_difference: float = 0.0) -> np.ndarray:
    """Which team is told apart from which: ``out[i, j]`` says "i beats j".

    A team beats another when the lower bound of their simultaneous interval is above the
    minimum practical difference: the difference is both real (board-wide error below
    ``1 - level``) and larger than the smallest one that matters. With
    ``min_difference = 0`` this is plain significance.

    Parameters
    ----------
    pairs : PairwiseDifferences
    min_difference : float
        The minimum practical difference (>= 0), in score units.

    Returns
    -------
    numpy.ndarray of bool
        Shape ``(n_teams, n_teams)``.
    """
    return pairs.lower() > min_difference


def rank_intervals(beats: np.ndarray) -> np.ndarray:
    """Each team's rank interval: from 1 + the teams that beat it to n - the teams it beats.

    Derived from the simultaneous pairwise intervals, the intervals of all teams hold
    together with the intervals' joint level (a rank can only be wrong where a pairwise
    conclusion is).

    Parameters
    ----------
    beats : numpy.ndarray of bool
        ``beats[i, j]``: i is told apart above j (:func:`separated`).

    Returns
    -------
    numpy.ndarray of int
        Shape ``(n_teams, 2)``: best and worst rank, 1 being first.
    """
    n = len(beats)
    best = 1 + beats.sum(axis=0)
    worst = n - beats.sum(axis=1)
    return np.stack([best, worst], axis=1).astype(np.int64)


def tiers(order: np.ndarray, beats: np.ndarray) -> np.ndarray:
    """Tiers down the board: each tier holds the teams not told apart from its first team.

    Going down the board in ``order``, the first team opens tier 1; each following team joins
    the current tier while its first team does not beat it, and opens the next tier once it
    does. Tiers are therefore runs of consecutive places.

    Parameters
    ----------
    order : numpy.ndarray of int
        Team indices from first to last place.
    beats : numpy.ndarray of bool
        ``beats[i, j]``: i is told apart above j.

    Returns
    -------
    numpy.ndarray of int
        Each team's tier (1 = the leader's), indexed like the teams.
    """
    tier = np.zeros(len(order), dtype=np.int64)
    head, current = None, 0
    for team in order:
        if head is None or beats[head, team]:
            head, current = team, current + 1
        tier[team] = current
    return tier
