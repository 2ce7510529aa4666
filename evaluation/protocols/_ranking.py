"""A model's ranked lists in the protocols: asked for, checked, and scored by the metric library."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_positions, sorted_unique
from evaluation.errors import ConfigError
from evaluation.metrics import Metric, evaluate_ranking, get_metric, item_popularity, ranking_inputs
from evaluation.predictions import validate_predictions

DEFAULT_METRICS = ("precision@10", "recall@10", "ndcg@10", "hit_rate@10", "mrr@10", "map@10",
                   "coverage@10", "popularity_bias@10")


def checked_predictions(model: Any, users: np.ndarray, depth: int) -> pd.DataFrame:
    """``model.predict`` for ``users``, validated, as ``depth`` columns (-1 padded/truncated)."""
    raw = model.predict(pd.DataFrame({"user_id": np.asarray(users, dtype=np.int64)}))
    if not isinstance(raw, pd.DataFrame):
        # Let the validator produce its message for the wrong type.
        return validate_predictions(raw, users, k=depth)
    width = raw.shape[1] - int("user_id" in raw.columns)
    preds = validate_predictions(raw, users, k=max(width, 1))
    if width < depth:
        warnings.warn(f"{type(model).__name__}.predict returned {width} ranked items per user "
                      f"but the metrics look at the top {depth}; the missing ranks count as "
                      f"misses. Raise the model's k to at least {depth}.", UserWarning,
                      stacklevel=3)
        pad = np.full((len(preds), depth - width), -1, dtype=np.int64)
        matrix = np.hstack([preds.to_numpy(), pad])
    else:
        matrix = preds.to_numpy()[:, :depth]
    return pd.DataFrame(matrix, index=preds.index, columns=[str(i) for i in range(depth)])


def resolve_metrics(metrics: Iterable[Any], k: int) -> tuple[list[Metric], list[str]]:
    """The ranking/catalog ``Metric`` objects and the rating error names among ``metrics``.

    A ranking metric named without a cutoff (``"ndcg"``) gets ``@k``.
    """
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    ranking: list[Metric] = []
    rating: list[Metric] = []
    for name in metrics:
        metric = name if isinstance(name, Metric) else _named_metric(name, k)
        (rating if metric.family == "rating" else ranking).append(metric)
    return ranking, [m.name for m in rating]


def _named_metric(name: Any, k: int) -> Metric:
    """The registered metric ``name``, or ``name@k`` when ``name`` has no cutoff."""
    try:
        return get_metric(name)
    except ConfigError:
        if not isinstance(name, str) or "@" in name:
            raise
        return get_metric(f"{name}@{k}")


def relevant_test(test: pd.DataFrame, relevance_threshold: float | None) -> pd.DataFrame:
    """The test events that count as relevant (rating >= threshold when one is given)."""
    if relevance_threshold is None:
        return test
    if "rating" not in test.columns:
        raise ConfigError(f"relevance_threshold={relevance_threshold!r} needs a 'rating' column "
                          f"in the test events; they have {list(map(str, test.columns))}. "
                          f"Pass relevance_threshold=None to treat every test event as relevant.")
    return test[test["rating"].to_numpy(dtype=np.float64) >= relevance_threshold]


def score_predictions(
    predictions: pd.DataFrame,
    test: pd.DataFrame,
    *,
    k: int = 10,
    metrics: Sequence[Any] = DEFAULT_METRICS,
    relevance_threshold: float | None = None,
    aggregate: str = "user",
    graded: bool = False,
    train: pd.DataFrame | None = None,
) -> dict[str, float]:
    """Ranking and catalog metrics of ``predictions`` (the ``predict`` format) against ``test``.

    Relevant items: the user's test events (with a rating >= ``relevance_threshold`` when one is
    given); with ``graded=True`` their rating is the gain (graded NDCG), else the gain is 1.
    The catalog is every item of ``train``, ``test`` and the predictions; item popularity for
    ``popularity_bias`` comes from ``train`` (required for that metric). Rating errors in
    ``metrics`` are ignored here (they come from the rating predictions, not from lists).
    Returns ``{metric name: value}``, empty when ``metrics`` holds no ranking metric.
    """
    ranking, _ = resolve_metrics(metrics, k)
    if not ranking:
        return {}
    test = relevant_test(test, relevance_threshold)
    gain_col = "rating" if graded and "rating" in test.columns else None
    listed = predictions.to_numpy()
    parts = [test["track_id"].to_numpy(np.int64), listed[listed >= 0].astype(np.int64)]
    if train is not None:
        parts.append(train["track_id"].to_numpy(np.int64))
    items = sorted_unique(np.concatenate(parts))
    inputs = ranking_inputs(predictions, test, gain_col=gain_col, items=items)
    popularity = None
    if any(m.base == "popularity_bias" for m in ranking):
        if train is None:
            raise ConfigError("popularity_bias needs the training events (train=...) to measure "
                              "item popularity.")
        popularity = item_popularity(np.searchsorted(items, train["track_id"].to_numpy()),
                                     len(items))
    return evaluate_ranking(inputs.recs, inputs.relevance, ranking, aggregate=aggregate,
                            popularity=popularity)


def list_scorer(preds: pd.DataFrame) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A ``score_items`` function from ranked lists: ``depth - rank`` when listed, else 0."""
    users = preds.index.to_numpy(np.int64)
    order = np.argsort(users, kind="stable")
    sorted_users, matrix = users[order], preds.to_numpy(np.int64)[order]
    depth = matrix.shape[1]

    def score_items(user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        rows = sorted_positions(sorted_users, np.asarray(user_ids, dtype=np.int64))
        known = rows >= 0
        lists = matrix[np.maximum(rows, 0)]  # (batch, depth); unknown users masked below
        # (batch, candidates, depth); -1 padding never matches
        match = (item_ids[:, :, None] == lists[:, None, :]) & (lists[:, None, :] >= 0)
        listed = match.any(axis=2) & known[:, None]
        rank = match.argmax(axis=2)
        return np.where(listed, depth - rank, 0).astype(np.float64)

    return score_items
