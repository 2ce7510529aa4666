"""Deprecated import path: sampled-negative evaluation moved to :mod:`evaluation.protocols`.

This path keeps working for one release and warns (``DeprecationWarning``) on use.
"""

from evaluation._util.deprecation import moved

__getattr__ = moved(
    "evaluation.sampled", "evaluation.protocols",
    (
        "SampledResult", "evaluate_sampled", "sample_negatives",
    ),
)
