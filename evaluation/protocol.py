"""Deprecated import path: the held-out split protocol moved to :mod:`evaluation.protocols`.

This path keeps working for one release and warns (``DeprecationWarning``) on use.
"""

from evaluation._util.deprecation import moved

__getattr__ = moved(
    "evaluation.protocol", "evaluation.protocols",
    (
        "DEFAULT_METRICS", "RATING_ERRORS", "evaluate_split", "rating_errors", "supports_ratings",
    ),
)
