"""Deprecated import path: scoring a predictions file moved to :mod:`evaluation.challenge`.

This path keeps working for one release and warns (``DeprecationWarning``) on use.
"""

from evaluation._util.deprecation import moved

__getattr__ = moved(
    "evaluation.scoring", "evaluation.challenge",
    (
        "read_predictions", "score",
    ),
)
