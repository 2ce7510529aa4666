"""Deprecated import path: the challenge's reclist moved to :mod:`evaluation.challenge`.

This path keeps working for one release and warns (``DeprecationWarning``) on use.
"""

from evaluation._util.deprecation import moved

__getattr__ = moved(
    "evaluation.reclist", "evaluation.challenge",
    (
        "EvalRSRecList", "LEADERBOARD_TESTS",
    ),
)
