"""Evaluation protocols beyond the challenge's leave-one-out: a held-out split, time-aware
replay, and sampled negatives.

Each protocol returns a result object with the same shape: ``to_dict()`` (plain JSON values),
``to_frame()`` (a tidy frame of the metrics) and a rich rendering (``rich.print(result)``).
"""

from evaluation.protocols._holdout import SplitResult, evaluate_split
from evaluation.protocols._ranking import DEFAULT_METRICS
from evaluation.protocols._ratings import RATING_ERRORS, rating_errors, supports_ratings
from evaluation.protocols._replay import ReplayResult, replay
from evaluation.protocols._sampled import (
    SampledCandidates,
    SampledResult,
    evaluate_sampled,
    sample_negatives,
    sampled_candidates,
    target_ranks,
)
from evaluation.protocols._sampled_correction import (
    CORRECTIONS,
    DEFAULT_GAMMA,
    corrected_values,
    full_metrics,
)

__all__ = [
    "CORRECTIONS",
    "DEFAULT_GAMMA",
    "DEFAULT_METRICS",
    "RATING_ERRORS",
    "ReplayResult",
    "SampledCandidates",
    "SampledResult",
    "SplitResult",
    "corrected_values",
    "evaluate_sampled",
    "evaluate_split",
    "full_metrics",
    "rating_errors",
    "replay",
    "sample_negatives",
    "sampled_candidates",
    "supports_ratings",
    "target_ranks",
]
