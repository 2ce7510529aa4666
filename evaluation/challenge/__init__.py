"""The EvalRS challenge: its definition (tests, groups, weights, slices, gate), the metric
kernels, the per-fold scoring state, per-user scores and bootstrap intervals, the reference
values and scoring saved predictions.

Nothing here imports ``reclist``: a fold is scored by :class:`FoldScorer`. The RecList that
renders the same tests through reclist, ``EvalRSRecList``, is ``evaluation.challenge_reclist``,
above this package. ``ScoringWarning`` lives in :mod:`evaluation.errors` and is offered here
too.
"""

from evaluation.challenge._aggregate import (
    aggregate,
    check_coverage,
    group_scores,
    normalise,
    phase1_score,
    phase2_score,
    scored_groups,
)
from evaluation.challenge._applicable import (
    applicable_tests,
    dataset_not_applicable,
    not_applicable_tests,
)
from evaluation.challenge._bootstrap import bootstrap
from evaluation.challenge._counts import sum_by_key
from evaluation.challenge._fold import (
    ChallengeFold,
    Slice,
    country_slice,
    fold_slices,
    gender_slice,
)
from evaluation.challenge._metric_values import (
    METRIC_VALUES_FORMAT,
    MetricValues,
    decode_metric_values,
    encode_metric_values,
)
from evaluation.challenge._mred import (
    SliceMissRates,
    bin_by_edges,
    miss_rate_equality_difference,
    mred_from_codes,
)
from evaluation.challenge._paired_board import (
    TeamReplicates,
    metric_replicates,
    metric_score,
    team_replicates,
)
from evaluation.challenge._ranks import hit_ranks
from evaluation.challenge._references import (
    REFERENCES_DIR,
    References,
    build_references,
    load_references,
    references_name,
)
from evaluation.challenge._resamples import (
    RESAMPLE_CHUNK,
    PairedResamples,
    fold_streams,
    over_folds,
    paired_resamples,
    paired_test_replicates,
    resample_counts,
    resample_folds,
)
from evaluation.challenge._scorer import FoldScorer, check_result, leaderboard_value
from evaluation.challenge._scores import IN_MR_ONLY, LEFT_OUT, UserScores
from evaluation.challenge._scoring import read_predictions, score
from evaluation.challenge._spec import (
    ARTIST_POPULARITY_EDGES,
    BEING_LESS_WRONG,
    BIAS_WEIGHT,
    COUNTRIES,
    DEFAULT_GROUPS,
    DEFAULT_WEIGHTS,
    DIVERSITY_WEIGHT,
    GATED_SCORE,
    HIT_RATE,
    LATENT_DIVERSITY,
    LATENT_TOP,
    LEADERBOARD_TESTS,
    MISSING_COUNTRY,
    MRED_ARTIST_POPULARITY,
    MRED_COUNTRY,
    MRED_GENDER,
    MRED_SLICES,
    MRED_TESTS,
    MRED_TRACK_POPULARITY,
    MRED_USER_ACTIVITY,
    MRR,
    SLICE_EDGES,
    STATS,
    TESTS,
    THRESHOLD_RATIO,
    TRACK_POPULARITY_EDGES,
    USER_ACTIVITY_EDGES,
)
from evaluation.challenge._user_values import (
    USER_VALUES_FORMAT,
    FoldUsers,
    decode_user_values,
    encode_user_values,
    float32_bound,
    ranks_from_rr,
    user_values_bytes,
    users_sha256,
)
from evaluation.challenge._vectors import (
    being_less_wrong,
    being_less_wrong_scores,
    latent_diversity,
    latent_diversity_scores,
)
from evaluation.errors import ScoringWarning

__all__ = [
    "ARTIST_POPULARITY_EDGES",
    "BEING_LESS_WRONG",
    "BIAS_WEIGHT",
    "COUNTRIES",
    "ChallengeFold",
    "DEFAULT_GROUPS",
    "DEFAULT_WEIGHTS",
    "DIVERSITY_WEIGHT",
    "FoldScorer",
    "FoldUsers",
    "GATED_SCORE",
    "HIT_RATE",
    "IN_MR_ONLY",
    "LATENT_DIVERSITY",
    "LATENT_TOP",
    "LEADERBOARD_TESTS",
    "LEFT_OUT",
    "METRIC_VALUES_FORMAT",
    "MISSING_COUNTRY",
    "MRED_ARTIST_POPULARITY",
    "MRED_COUNTRY",
    "MRED_GENDER",
    "MRED_SLICES",
    "MRED_TESTS",
    "MRED_TRACK_POPULARITY",
    "MRED_USER_ACTIVITY",
    "MRR",
    "MetricValues",
    "PairedResamples",
    "REFERENCES_DIR",
    "RESAMPLE_CHUNK",
    "References",
    "SLICE_EDGES",
    "STATS",
    "ScoringWarning",
    "Slice",
    "SliceMissRates",
    "TESTS",
    "THRESHOLD_RATIO",
    "TRACK_POPULARITY_EDGES",
    "TeamReplicates",
    "USER_ACTIVITY_EDGES",
    "USER_VALUES_FORMAT",
    "UserScores",
    "aggregate",
    "applicable_tests",
    "being_less_wrong",
    "being_less_wrong_scores",
    "bin_by_edges",
    "bootstrap",
    "build_references",
    "check_coverage",
    "check_result",
    "country_slice",
    "dataset_not_applicable",
    "decode_metric_values",
    "decode_user_values",
    "encode_metric_values",
    "encode_user_values",
    "float32_bound",
    "fold_slices",
    "fold_streams",
    "gender_slice",
    "group_scores",
    "hit_ranks",
    "latent_diversity",
    "latent_diversity_scores",
    "leaderboard_value",
    "load_references",
    "metric_replicates",
    "metric_score",
    "miss_rate_equality_difference",
    "mred_from_codes",
    "normalise",
    "not_applicable_tests",
    "over_folds",
    "paired_resamples",
    "paired_test_replicates",
    "phase1_score",
    "phase2_score",
    "ranks_from_rr",
    "read_predictions",
    "references_name",
    "resample_counts",
    "resample_folds",
    "score",
    "scored_groups",
    "sum_by_key",
    "team_replicates",
    "user_values_bytes",
    "users_sha256",
]

