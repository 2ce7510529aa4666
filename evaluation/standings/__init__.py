"""The standings of a board: which differences between teams are real.

Paired bootstrap replicates of every team's score (the same resampled users for all teams)
give simultaneous intervals for every pairwise difference; from them come tiers (teams that
cannot be told apart, with a minimum practical difference below which differences are ties),
rank intervals and win probabilities. Beyond one weighted score: the Pareto front over the
score's groups (and the cost–quality front, with each team's probability of being on it),
the group weights under which each team would rank first, and a Borda consensus over the
tests; ties within a tier broken by cost. Against the declared alternative protocols, a
robustness certificate of the official order. NumPy only: :func:`read_board` is the one
entry point of both the leaderboard service and the local ``compare``.
"""

from evaluation.standings._board import DEFAULT_LEVEL, METHOD, BoardReading, read_board
from evaluation.standings._costs import cost_order, front_probability
from evaluation.standings._groups import borda, first_place_weights, pareto_front, region_share
from evaluation.standings._pairwise import (
    PairwiseDifferences,
    simultaneous_differences,
    win_probabilities,
)
from evaluation.standings._robustness import (
    TAU_LEVEL,
    AlternativeCertificate,
    ProtocolReplicates,
    RobustnessCertificate,
    TeamFragility,
    kendall_tau_b,
    robustness_certificate,
)
from evaluation.standings._tiers import rank_intervals, separated, tiers

__all__ = [
    "AlternativeCertificate",
    "BoardReading",
    "DEFAULT_LEVEL",
    "METHOD",
    "PairwiseDifferences",
    "ProtocolReplicates",
    "RobustnessCertificate",
    "TAU_LEVEL",
    "TeamFragility",
    "borda",
    "cost_order",
    "first_place_weights",
    "front_probability",
    "kendall_tau_b",
    "pareto_front",
    "rank_intervals",
    "read_board",
    "region_share",
    "robustness_certificate",
    "separated",
    "simultaneous_differences",
    "tiers",
    "win_probabilities",
]
