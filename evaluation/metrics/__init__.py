"""A ranking and rating metric library on plain arrays (the challenge's own tests live in
:mod:`evaluation.challenge`; their HIT_RATE and MRR are this library's, from ranks)."""


# --- metric library (ranking, rating, catalog metrics, registry): added in its own block below
from evaluation.metrics._catalog import catalog_coverage, item_popularity, popularity_bias
from evaluation.metrics._hits import hit_rate_from_ranks, hits, mrr_from_ranks, reciprocal_ranks
from evaluation.metrics._ranking import (
    auc,
    f1_at_k,
    hit_rate_at_k,
    map_at_k,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from evaluation.metrics._rating import mae, nmae, nrmse, rmse
from evaluation.metrics._registry import (
    METRICS,
    Metric,
    evaluate_ranking,
    evaluate_ratings,
    get_metric,
)
from evaluation.metrics._relevance import RankingInputs, judge, ranking_inputs, relevance_matrix

__all__ = [  # challenge tests
]
__all__ += [  # metric library
    "METRICS",
    "Metric",
    "RankingInputs",
    "auc",
    "catalog_coverage",
    "evaluate_ranking",
    "evaluate_ratings",
    "f1_at_k",
    "get_metric",
    "hit_rate_at_k",
    "hit_rate_from_ranks",
    "hits",
    "item_popularity",
    "judge",
    "mae",
    "map_at_k",
    "mrr_at_k",
    "mrr_from_ranks",
    "ndcg_at_k",
    "nmae",
    "nrmse",
    "popularity_bias",
    "precision_at_k",
    "ranking_inputs",
    "recall_at_k",
    "reciprocal_ranks",
    "relevance_matrix",
    "rmse",
]
