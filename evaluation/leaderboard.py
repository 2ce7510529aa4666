"""Deprecated import path: the challenge's leaderboard moved to :mod:`evaluation.challenge`.

This path keeps working for one release and warns (``DeprecationWarning``) on use.
"""

from evaluation._util.deprecation import moved

__getattr__ = moved(
    "evaluation.leaderboard", "evaluation.challenge",
    (
        "BEING_LESS_WRONG", "DEFAULT_GROUPS", "DEFAULT_WEIGHTS", "GATED_SCORE", "HIT_RATE",
        "IN_MR_ONLY", "LATENT_DIVERSITY", "LEADERBOARD_TESTS", "LEFT_OUT", "MRED_TESTS", "MRR",
        "REFERENCES_DIR", "References", "UserScores", "aggregate", "bootstrap",
        "build_references", "load_references", "normalise", "phase1_score", "phase2_score",
        "references_name",
    ),
)
