"""Evaluation protocols beyond the challenge's leave-one-out: a held-out split, time-aware
replay, and sampled negatives."""

from evaluation.protocols._holdout import (
    DEFAULT_METRICS,
    RATING_ERRORS,
    evaluate_split,
    rating_errors,
    supports_ratings,
)
from evaluation.protocols._replay import ReplayResult, replay
from evaluation.protocols._sampled import SampledResult, evaluate_sampled, sample_negatives

__all__ = ["DEFAULT_METRICS", "RATING_ERRORS", "ReplayResult", "SampledResult",
           "evaluate_sampled", "evaluate_split", "rating_errors", "replay", "sample_negatives",
           "supports_ratings"]
