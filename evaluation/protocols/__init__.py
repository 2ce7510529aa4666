"""Evaluation protocols beyond the challenge's leave-one-out: a held-out split, time-aware
replay, and sampled negatives.

Each protocol returns a result object with the same shape: ``to_dict()`` (plain JSON values),
``to_frame()`` (a tidy frame of the metrics) and a rich rendering (``rich.print(result)``).
"""

from evaluation.protocols._holdout import SplitResult, evaluate_split
from evaluation.protocols._ranking import DEFAULT_METRICS
from evaluation.protocols._ratings import RATING_ERRORS, rating_errors, supports_ratings
from evaluation.protocols._replay import ReplayResult, replay
from evaluation.protocols._sampled import SampledResult, evaluate_sampled, sample_negatives

__all__ = [
    "DEFAULT_METRICS",
    "RATING_ERRORS",
    "ReplayResult",
    "SampledResult",
    "SplitResult",
    "evaluate_sampled",
    "evaluate_split",
    "rating_errors",
    "replay",
    "sample_negatives",
    "supports_ratings",
]
