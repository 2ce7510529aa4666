"""The EvalRS challenge: its tests, slices and weights, the per-fold scoring state, per-user
scores and bootstrap intervals, the reference values, and the RecList that reports them.

The scoring core needs no ``reclist``; ``EvalRSRecList``, ``score`` and ``read_predictions``
(which render through it) are imported on first use.
"""

import importlib

from evaluation.challenge._fold import (
    ARTIST_POPULARITY_EDGES,
    COUNTRIES,
    MISSING_COUNTRY,
    MRED_SLICES,
    TRACK_POPULARITY_EDGES,
    USER_ACTIVITY_EDGES,
    ChallengeFold,
    ScoringWarning,
    Slice,
    SliceMissRates,
    being_less_wrong,
    being_less_wrong_scores,
    bin_by_edges,
    country_slice,
    gender_slice,
    hit_ranks,
    hit_rate_from_ranks,
    latent_diversity,
    latent_diversity_scores,
    miss_rate_equality_difference,
    mred_from_codes,
    mrr_from_ranks,
    sum_by_key,
)
from evaluation.challenge._leaderboard import (
    BEING_LESS_WRONG,
    DEFAULT_GROUPS,
    DEFAULT_WEIGHTS,
    GATED_SCORE,
    HIT_RATE,
    IN_MR_ONLY,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    LEFT_OUT,
    MRED_TESTS,
    MRR,
    REFERENCES_DIR,
    References,
    UserScores,
    aggregate,
    bootstrap,
    build_references,
    load_references,
    normalise,
    phase1_score,
    phase2_score,
    references_name,
)

# name -> module, imported on first use: these load reclist
_LAZY = {
    "EvalRSRecList": "evaluation.challenge._reclist",
    "read_predictions": "evaluation.challenge._scoring",
    "score": "evaluation.challenge._scoring",
}

__all__ = [
    "ARTIST_POPULARITY_EDGES",
    "BEING_LESS_WRONG",
    "COUNTRIES",
    "ChallengeFold",
    "DEFAULT_GROUPS",
    "DEFAULT_WEIGHTS",
    "EvalRSRecList",
    "GATED_SCORE",
    "HIT_RATE",
    "IN_MR_ONLY",
    "LATENT_DIVERSITY",
    "LEADERBOARD_TESTS",
    "LEFT_OUT",
    "MISSING_COUNTRY",
    "MRED_SLICES",
    "MRED_TESTS",
    "MRR",
    "REFERENCES_DIR",
    "References",
    "ScoringWarning",
    "Slice",
    "SliceMissRates",
    "TRACK_POPULARITY_EDGES",
    "USER_ACTIVITY_EDGES",
    "UserScores",
    "aggregate",
    "being_less_wrong",
    "being_less_wrong_scores",
    "bin_by_edges",
    "bootstrap",
    "build_references",
    "country_slice",
    "gender_slice",
    "hit_ranks",
    "hit_rate_from_ranks",
    "latent_diversity",
    "latent_diversity_scores",
    "load_references",
    "miss_rate_equality_difference",
    "mred_from_codes",
    "mrr_from_ranks",
    "normalise",
    "phase1_score",
    "phase2_score",
    "read_predictions",
    "references_name",
    "score",
    "sum_by_key",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluation.challenge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
