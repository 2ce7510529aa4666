"""The standings of a board: which differences between teams are real.

Paired bootstrap replicates of every team's score (the same resampled users for all teams)
give simultaneous intervals for every pairwise difference; from them come tiers (teams that
cannot be told apart, with a minimum practical difference below which differences are ties),
rank intervals and win probabilities. Beyond one weighted score: the Pareto front over the
score's groups, the group weights under which each team would rank first, and a Borda
consensus over the tests. NumPy only: :func:`read_board` is the one entry point of both the
leaderboard service and the local ``compare``.
"""

from evaluation.standings._board import DEFAULT_LEVEL, METHOD, BoardReading, read_board
from evaluation.standings._groups import borda, first_place_weights, pareto_front, region_share
from evaluation.standings._pairwise import (
    PairwiseDifferences,
    simultaneous_differences,
    win_probabilities,
)
from evaluation.standings._tiers import rank_intervals, separated, tiers

__all__ = [
    "BoardReading",
    "DEFAULT_LEVEL",
    "METHOD",
    "PairwiseDifferences",
    "borda",
    "first_place_weights",
    "pareto_front",
    "rank_intervals",
    "read_board",
    "region_share",
    "separated",
    "simultaneous_differences",
    "tiers",
    "win_probabilities",
]
