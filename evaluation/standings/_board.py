"""A board's full reading: tiers, rank intervals and win probabilities in the board's own
order, and beyond the one weighted score the Pareto front over its groups, the weights that
put each team first and a Borda consensus over the tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation._util.validation import check_number
from evaluation.errors import ConfigError
from evaluation.standings._groups import borda, first_place_weights, pareto_front, region_share
from evaluation.standings._pairwise import simultaneous_differences, win_probabilities
from evaluation.standings._tiers import rank_intervals, separated, tiers

#: Joint coverage of the pairwise intervals unless a board says otherwise.
DEFAULT_LEVEL = 0.95

#: How the tiers and rank intervals control the error, in words for readers of a board.
METHOD = ("simultaneous intervals of every pairwise score difference (bootstrap max-|t| over "
          "paired resamples of the test users within folds): the chance of any wrong call "
          "anywhere on the board (family-wise error over every pair) is at most 1 - level")


@dataclass(frozen=True)
class BoardReading:
    """The statistics of a board's teams, indexed in the board's order.

    Attributes
    ----------
    tier : numpy.ndarray of int
        1 for the teams that cannot be told apart from the leader, then down the board.
    rank_interval : numpy.ndarray of int
        Shape ``(n, 2)``: best and worst place each team may really hold among the teams
        compared (jointly at ``level``).
    win_probability : numpy.ndarray
        ``[i, j]``: the share of replicates in which team i scores above team j (ties half).
    beats : numpy.ndarray of bool
        ``[i, j]``: i is told apart above j by more than ``min_difference``.
    pareto : numpy.ndarray of bool
        No other team is at least as good on every group and better on one (gated teams
        are never on the front).
    first_place_share : numpy.ndarray
        The share of the group-weight simplex under which the team ranks first (ties
        included); 0 when no weights put it first.
    first_place : numpy.ndarray of bool
        Some group weights put the team first.
    borda_points, borda_rank : numpy.ndarray
        Borda points over the tests and the consensus place they give (1 = most points;
        equal points share the better place).
    level, min_difference : float
    """

    tier: np.ndarray
    rank_interval: np.ndarray
    win_probability: np.ndarray
    beats: np.ndarray
    pareto: np.ndarray
    first_place_share: np.ndarray
    first_place: np.ndarray
    borda_points: np.ndarray
    borda_rank: np.ndarray
    level: float
    min_difference: float


def read_board(point: np.ndarray, replicates: np.ndarray, groups: np.ndarray | None = None,
               tests: np.ndarray | None = None, *, eligible: np.ndarray | None = None,
               level: float = DEFAULT_LEVEL, min_difference: float = 0.0) -> BoardReading:
    """Read a board whose rows are already in the official order.

    The official order is the board's, whatever it is (its ties broken by its own rules):
    tiers run down it, and nothing here reorders it. The leaderboard reads its boards here,
    and ``compare`` the runs it compares (in the order of their scores).

    Parameters
    ----------
    point : numpy.ndarray
        Shape ``(n,)``: the scores the board ranks by, in its order.
    replicates : numpy.ndarray
        Shape ``(n, n_boot)``: each team's score on each paired resample.
    groups : numpy.ndarray, optional
        Shape ``(n, n_groups)``: each team's group scores (higher is better). Without them
        (no groups): no team is first under some group weights, and no team dominates
        another (every eligible team is on the Pareto front).
    tests : numpy.ndarray, optional
        Shape ``(n, n_tests)``: each team's test values, oriented higher is better. Without
        them (no tests): every team has 0 Borda points.
    eligible : numpy.ndarray of bool, optional
        Teams that may be on the Pareto front or first under some weights (e.g. not gated);
        default all.
    level : float
        Joint coverage of the pairwise intervals, in (0, 1).
    min_difference : float
        The minimum practical difference (>= 0).

    Returns
    -------
    BoardReading

    Raises
    ------
    ConfigError
        When the shapes disagree, a value is not finite or a parameter is out of range.
    """
    point, reps, groups, tests = _checked(point, replicates, groups, tests)
    level = check_number("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                         owner="read_board")
    min_difference = check_number("min_difference", min_difference, low=0.0,
                                  owner="read_board")
    n = len(point)
    ok = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    pairs = simultaneous_differences(reps, point, level)
    beats = separated(pairs, min_difference)
    share, first = _first_place(groups, ok)
    points = borda(tests) if n else np.zeros(0)
    return BoardReading(
        tier=tiers(np.arange(n), beats),
        # rank intervals speak of order, not of practical size: plain significance
        rank_interval=rank_intervals(separated(pairs, 0.0)),
        win_probability=win_probabilities(reps), beats=beats,
        pareto=_pareto(groups, ok), first_place_share=share, first_place=first,
        borda_points=points, borda_rank=_competition_rank(points), level=level,
        min_difference=min_difference)


def _checked(point: np.ndarray, replicates: np.ndarray, groups: np.ndarray | None,
             tests: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """The inputs as float arrays, after checking their shapes and values."""
    point = np.asarray(point, dtype=np.float64)
    reps = np.asarray(replicates, dtype=np.float64)
    n = len(point)
    groups = np.zeros((n, 0)) if groups is None else np.asarray(groups, dtype=np.float64)
    tests = np.zeros((n, 0)) if tests is None else np.asarray(tests, dtype=np.float64)
    if point.ndim != 1 or reps.ndim != 2 or reps.shape[0] != n or reps.shape[1] < 2:
        raise ConfigError(f"read_board: replicates must have shape (n_teams={n}, n_boot >= 2) "
                          f"and point ({n},); got {reps.shape} and {point.shape}")
    for name, values in (("groups", groups), ("tests", tests)):
        if values.ndim != 2 or values.shape[0] != n:
            raise ConfigError(f"read_board: {name} must have one row per team ({n}); got "
                              f"shape {values.shape}")
    if not (np.isfinite(point).all() and np.isfinite(reps).all()
            and np.isfinite(groups).all()):
        raise ConfigError("read_board: scores, replicates and group scores must be finite")
    return point, reps, groups, tests


def _pareto(groups: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """The Pareto front among the eligible teams (the others are never on it)."""
    out = np.zeros(len(groups), dtype=bool)
    if eligible.any():
        out[eligible] = pareto_front(groups[eligible])
    return out


def _first_place(groups: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per team, the share of the weight simplex that puts it first, and whether any does.

    Only the eligible teams compete; with three groups the share is the area of its region
    of the weight triangle over the triangle's, with two the length of its segment, with one
    1 for the best team. Teams are offered best first so that the regions of the others empty
    after a few comparisons.
    """
    n = len(groups)
    share, first = np.zeros(n), np.zeros(n, dtype=bool)
    index = np.flatnonzero(eligible)
    if not len(index) or groups.shape[1] > 3 or groups.shape[1] == 0:
        return share, first
    order = index[np.argsort(-groups[index].sum(axis=1), kind="stable")]
    for team, region in zip(order, first_place_weights(groups[order])):
        first[team] = region is not None
        share[team] = _share(region, groups.shape[1])
    return share, first


def _share(region: np.ndarray | None, n_groups: int) -> float:
    """The share of the weight simplex a first-place region covers."""
    if region is None:
        return 0.0
    if n_groups == 3:
        return region_share(region)
    if n_groups == 2:
        return float(np.ptp(region[:, 0])) if len(region) > 1 else 0.0
    return 1.0


def _competition_rank(points: np.ndarray) -> np.ndarray:
    """1 + the number of teams with more points (equal points share a place)."""
    return (1 + (points[None, :] > points[:, None]).sum(axis=1)).astype(np.int64)

