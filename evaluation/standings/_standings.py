"""The standings of a board: each team's place with the uncertainty it carries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation._util.validation import check_number
from evaluation.errors import ConfigError
from evaluation.standings._pairwise import simultaneous_differences, win_probabilities
from evaluation.standings._tiers import rank_intervals, separated, tiers

#: Joint coverage of the pairwise intervals unless a board says otherwise.
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Standings:
    """A board read with its uncertainty.

    Attributes
    ----------
    teams : tuple of str
        In board order (best point score first; equal scores by name).
    score : numpy.ndarray
        The scores the board ranks by, in that order.
    tier : numpy.ndarray of int
        1 for the teams that cannot be told apart from the leader, 2 for those that cannot be
        told apart from the first team below tier 1, and so on.
    rank_interval : numpy.ndarray of int
        Shape ``(n, 2)``: best and worst rank each team may really hold (jointly at
        ``level``).
    win_probability : numpy.ndarray
        ``[i, j]``: the share of bootstrap replicates in which team i scores above team j.
    beats : numpy.ndarray of bool
        ``[i, j]``: i is told apart above j by more than ``min_difference``.
    level : float
        Joint coverage of the pairwise intervals the tiers and ranks come from.
    min_difference : float
        Differences below it are ties however significant.
    """

    teams: tuple[str, ...]
    score: np.ndarray
    tier: np.ndarray
    rank_interval: np.ndarray
    win_probability: np.ndarray
    beats: np.ndarray
    level: float
    min_difference: float

    def rows(self) -> list[dict]:
        """One JSON-ready dict per team, in board order."""
        return [{"team": team, "place": place, "score": float(self.score[place - 1]),
                 "tier": int(self.tier[place - 1]),
                 "rank_interval": [int(v) for v in self.rank_interval[place - 1]],
                 "win_probability": {other: float(self.win_probability[place - 1, k])
                                     for k, other in enumerate(self.teams) if other != team}}
                for place, team in enumerate(self.teams, start=1)]


def standings(teams: Sequence[str], replicates: np.ndarray, point: np.ndarray, *,
              level: float = DEFAULT_LEVEL, min_difference: float = 0.0) -> Standings:
    """Order a board and say which of its differences are real.

    Parameters
    ----------
    teams : sequence of str
        Distinct team names.
    replicates : numpy.ndarray
        Shape ``(n_teams, n_boot)``: each team's score in each paired bootstrap replicate
        (the same resampled users for every team; ``evaluation.analysis.paired_bootstrap``
        makes them from the teams' per-user values).
    point : numpy.ndarray
        Shape ``(n_teams,)``: the scores the board ranks by.
    level : float
        Joint coverage of the pairwise intervals, in (0, 1): the chance that any two teams
        are told apart wrongly anywhere on the board is at most ``1 - level``.
    min_difference : float
        The minimum practical difference (>= 0): two teams are only told apart when their
        difference is, with that confidence, larger than it.

    Returns
    -------
    Standings

    Raises
    ------
    ConfigError
        When the shapes disagree, names repeat, values are not finite or a parameter is out of
        range.
    """
    names, reps, scores = _checked(teams, replicates, point)
    level = check_number("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                         owner="standings")
    min_difference = check_number("min_difference", min_difference, low=0.0,
                                  owner="standings")
    order = np.array(sorted(range(len(names)), key=lambda i: (-scores[i], names[i])),
                     dtype=np.int64)
    names, reps, scores = [names[i] for i in order], reps[order], scores[order]
    pairs = simultaneous_differences(reps, scores, level)
    beats = separated(pairs, min_difference)
    # rank intervals speak of order, not of practical size: they use plain significance
    ranks = rank_intervals(separated(pairs, 0.0))
    return Standings(teams=tuple(names), score=scores,
                     tier=tiers(np.arange(len(names)), beats), rank_interval=ranks,
                     win_probability=win_probabilities(reps), beats=beats, level=level,
                     min_difference=min_difference)


def _checked(teams: Sequence[str], replicates: np.ndarray, point: np.ndarray
             ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The inputs as a list and float arrays, after checking their shapes and values."""
    names = [str(t) for t in teams]
    reps = np.asarray(replicates, dtype=np.float64)
    scores = np.asarray(point, dtype=np.float64)
    if len(set(names)) != len(names):
        raise ConfigError(f"standings: team names must be distinct; got {names}")
    if reps.ndim != 2 or reps.shape[0] != len(names) or reps.shape[1] < 2:
        raise ConfigError(f"standings: replicates must have shape (n_teams={len(names)}, "
                          f"n_boot >= 2); got {reps.shape}")
    if scores.shape != (len(names),):
        raise ConfigError(f"standings: point must have shape ({len(names)},); got "
                          f"{scores.shape}")
    if not (np.isfinite(reps).all() and np.isfinite(scores).all()):
        raise ConfigError("standings: replicates and point scores must be finite numbers")
    return names, reps, scores
