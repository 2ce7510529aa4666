"""Evaluate any model on any train/test split with the metric library (ranking + rating errors)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.jsonable import to_jsonable
from evaluation.errors import ConfigError, DataError, PredictionError, show_values
from evaluation.splits import Split, check_events

DEFAULT_METRICS = ("precision@10", "recall@10", "ndcg@10", "hit_rate@10", "mrr@10", "map@10",
                   "coverage@10", "popularity_bias@10")
RATING_ERRORS = ("rmse", "mae", "nrmse", "nmae")


def supports_ratings(model: Any) -> bool:
    """Whether ``model`` predicts ratings (a ``RecModel`` that overrides ``predict_ratings``)."""
    flag = getattr(model, "supports_ratings", None)
    if isinstance(flag, bool):
        return flag
    return callable(getattr(model, "predict_ratings", None))


def checked_predictions(model: Any, users: np.ndarray, depth: int) -> pd.DataFrame:
    """``model.predict`` for ``users``, validated, as ``depth`` columns (-1 padded/truncated)."""
    from evaluation.predictions import validate_predictions

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


def resolve_metrics(metrics: Iterable[Any], k: int) -> tuple[list, list]:
    """Split ``metrics`` into (ranking/catalog ``Metric`` objects, rating error names).

    A ranking metric named without a cutoff (``"ndcg"``) gets ``@k``.
    """
    from evaluation.metrics import Metric, get_metric

    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    ranking, rating = [], []
    for name in metrics:
        if isinstance(name, Metric):
            metric = name
        else:
            try:
                metric = get_metric(name)
            except ConfigError:
                if not isinstance(name, str) or "@" in name:
                    raise
                metric = get_metric(f"{name}@{k}")
        (rating if metric.family == "rating" else ranking).append(metric)
    return ranking, [m.name for m in rating]


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
    ``metrics`` are ignored here (see ``rating_errors``).
    """
    from evaluation.metrics import evaluate_ranking, item_popularity, ranking_inputs

    ranking, _ = resolve_metrics(metrics, k)
    if not ranking:
        return {}
    test = relevant_test(test, relevance_threshold)
    gain_col = "rating" if graded and "rating" in test.columns else None
    listed = predictions.to_numpy()
    parts = [test["track_id"].to_numpy(np.int64), listed[listed >= 0].astype(np.int64)]
    if train is not None:
        parts.append(train["track_id"].to_numpy(np.int64))
    items = np.unique(np.concatenate(parts))
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


def rating_errors_from(
    y_pred: np.ndarray, y_true: np.ndarray, *, users=None, items=None,
    aggregate: str = "global", rating_range: tuple[float, float] | None = None,
) -> dict[str, float]:
    """RMSE, MAE, NRMSE and NMAE of predicted against true ratings (plain arrays)."""
    from evaluation.metrics import evaluate_ratings

    return evaluate_ratings(y_true, y_pred, RATING_ERRORS, users=users, items=items,
                            aggregate=aggregate, rating_range=rating_range)


def rating_errors(
    model: Any, test_df: pd.DataFrame, *, aggregate: str = "global",
    rating_range: tuple[float, float] | None = None,
) -> dict[str, float]:
    """RMSE, MAE, NRMSE, NMAE of ``model.predict_ratings`` on the rated events of ``test_df``.

    ``aggregate``: ``"global"`` over all test ratings, ``"user"``/``"item"`` per user (item)
    then averaged. ``rating_range`` (the scale's (min, max), for the normalised errors)
    defaults to the range of the test ratings.
    """
    if not supports_ratings(model):
        raise ConfigError(f"{type(model).__name__} does not predict ratings: implement "
                          f"predict_ratings(pairs_df) -> pd.Series to get rating errors.")
    check_events(test_df, ["user_id", "track_id"], name="test")
    if "rating" not in test_df.columns:
        raise DataError(f"test: rating errors need a 'rating' column; the test events have "
                        f"{list(map(str, test_df.columns))}.")
    values = predicted_ratings(model, test_df)
    return rating_errors_from(values, test_df["rating"].to_numpy(np.float64),
                              users=test_df["user_id"].to_numpy(),
                              items=test_df["track_id"].to_numpy(),
                              aggregate=aggregate, rating_range=rating_range)


def predicted_ratings(model: Any, test_df: pd.DataFrame) -> np.ndarray:
    """``model.predict_ratings`` for the (user_id, track_id) rows of ``test_df``, checked."""
    pairs = test_df[["user_id", "track_id"]]
    pred = model.predict_ratings(pairs)
    name = type(model).__name__
    if isinstance(pred, pd.Series):
        if len(pred) != len(pairs) or not pred.index.equals(pairs.index):
            if pred.index.has_duplicates or not pairs.index.isin(pred.index).all():
                raise PredictionError(
                    f"{name}.predict_ratings returned {len(pred)} values whose index does not "
                    f"match the {len(pairs)} rows asked for; return a Series indexed like "
                    f"pairs_df (pd.Series(values, index=pairs_df.index)).")
            pred = pred.reindex(pairs.index)
    try:
        values = np.asarray(pred, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise PredictionError(f"{name}.predict_ratings must return numeric ratings: "
                              f"{exc}") from None
    if not isinstance(pred, pd.Series) and len(values) != len(pairs):
        raise PredictionError(f"{name}.predict_ratings returned {len(values)} values for "
                              f"{len(pairs)} pairs; return one per row of pairs_df.")
    bad = ~np.isfinite(values)
    if bad.any():
        rows = pairs[bad].head(5).to_dict("records")
        raise PredictionError(f"{name}.predict_ratings returned "
                              f"{int(bad.sum())} missing or infinite ratings, e.g. for "
                              f"{show_values(rows)}; predict a finite rating for every pair "
                              f"(fall back to a global mean for unknown users or items).")
    return values


def rating_scale(split: Split) -> tuple[float, float]:
    """(min, max) of the ratings in train and test: the scale NRMSE and NMAE divide by."""
    parts = [f["rating"].to_numpy(np.float64) for f in (split.train, split.test)
             if "rating" in f.columns and len(f)]
    values = np.concatenate(parts) if parts else np.zeros(1)
    return float(values.min()), float(values.max())


def evaluate_split(
    model: Any,
    split: Split,
    *,
    k: int = 10,
    metrics: Sequence[Any] = DEFAULT_METRICS,
    relevance_threshold: float | None = None,
    graded: bool = False,
    aggregate: str = "user",
    rating_aggregate: str = "global",
    audit: bool = True,
    sampled: int | dict[str, Any] | None = None,
    train_kwargs: dict[str, Any] | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Train ``model`` on ``split.train``, predict for the test users, score; return a dict.

    Users are evaluated when they have at least one relevant test event (a rating >=
    ``relevance_threshold`` when given); each gets the model's top-``k`` list (``k`` also
    completes metric names given without a cutoff). Rating errors (RMSE, MAE, NRMSE, NMAE over
    the rating scale seen in the split) are added when the model predicts ratings and the test
    events have a ``rating``. ``audit`` adds the leakage audit; ``sampled`` (the number of
    negatives, or a dict of options of ``evaluate_sampled``) adds sampled-negative metrics.
    The result is JSON-serialisable; ``verbose`` prints it as tables.
    """
    if not isinstance(split, Split):
        raise ConfigError(f"evaluate_split: 'split' must be a Split (from temporal_user_split, "
                          f"global_time_split, leave_last_out, ...). Got {type(split).__name__}.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"The 'k' parameter of evaluate_split must be an int in the range "
                          f"[1, inf). Got {k!r} instead.")
    check_events(split.train, ["user_id", "track_id"], name="train")
    check_events(split.test, ["user_id", "track_id"], name="test")
    ranking, rating_names = resolve_metrics(metrics, k)
    depth = max([k] + [m.k for m in ranking if m.k is not None])

    timing: dict[str, float] = {}
    start = time.perf_counter()
    model.train(split.train, **dict(train_kwargs or {}))
    timing["train_s"] = time.perf_counter() - start

    relevant = relevant_test(split.test, relevance_threshold)
    users = np.unique(relevant["user_id"].to_numpy(np.int64))
    result: dict[str, Any] = {
        "protocol": "evaluate_split",
        "model": type(model).__name__,
        "split": {**to_jsonable(split.params), **split.summary()},
        "k": int(k), "aggregate": aggregate, "relevance_threshold": relevance_threshold,
        "graded": bool(graded), "n_users_evaluated": len(users),
        "n_relevant_events": len(relevant),
    }
    start = time.perf_counter()
    metrics_out: dict[str, float] = {}
    preds = None
    if len(users) and (ranking or sampled is not None):
        preds = checked_predictions(model, users, depth)
        timing["predict_s"] = time.perf_counter() - start
        start = time.perf_counter()
        metrics_out = score_predictions(preds, relevant, k=k, metrics=ranking,
                                        aggregate=aggregate, graded=graded, train=split.train)
        timing["score_s"] = time.perf_counter() - start
    result["metrics"] = metrics_out

    if supports_ratings(model) and "rating" in split.test.columns and len(split.test):
        errors = rating_errors(model, split.test, aggregate=rating_aggregate,
                               rating_range=rating_scale(split))
        wanted = rating_names or list(RATING_ERRORS)
        result["rating_errors"] = {name: errors[name] for name in wanted}
        result["rating_aggregate"] = rating_aggregate
    if sampled is not None:
        start = time.perf_counter()
        result["sampled"] = _sampled(model, split, relevant, sampled, preds)
        timing["sampled_s"] = time.perf_counter() - start
    if audit:
        from evaluation.splits import audit_leakage

        result["audit"] = audit_leakage(split).to_dict()
    result["timing"] = timing
    result = to_jsonable(result)
    if verbose:
        print_result(result)
    return result


def _sampled(model: Any, split: Split, relevant: pd.DataFrame, options: Any,
             preds: pd.DataFrame | None) -> dict[str, Any]:
    """The sampled-negative protocol on the relevant test events (see ``evaluate_sampled``).

    Models with ``score_items(user_ids, item_ids)`` score the candidates themselves; for any
    other model a candidate's score comes from its position in the model's top-k list (items
    outside the list tie at the bottom, and ties count against the target).
    """
    from evaluation.protocols._sampled import evaluate_sampled

    if isinstance(options, bool) or not isinstance(options, (int, np.integer, dict)):
        raise ConfigError(f"The 'sampled' parameter of evaluate_split must be a number of "
                          f"negatives (e.g. 100) or a dict of options of evaluate_sampled. "
                          f"Got {options!r} instead.")
    kwargs = dict(options) if isinstance(options, dict) else {"n_negatives": int(options)}
    scorer: Any = model
    source = "score_items"
    if not callable(getattr(model, "score_items", None)):
        if preds is None:
            raise ConfigError("sampled metrics need the model's predictions; no test user has "
                              "a relevant event.")
        depth = preds.shape[1]
        warnings.warn(f"{type(model).__name__} has no score_items(user_ids, item_ids): the "
                      f"sampled metrics score candidates by their position in its top-{depth} "
                      f"list, so a target outside that list ranks last. Add score_items for "
                      f"proper sampled metrics.", UserWarning, stacklevel=3)
        scorer, source = list_scorer(preds), f"top-{depth} list position"
    result = evaluate_sampled(scorer, relevant, split.train, **kwargs).to_dict()
    result["scorer"] = source
    return result


def list_scorer(preds: pd.DataFrame):
    """A ``score_items`` function from ranked lists: ``depth - rank`` when listed, else 0."""
    users = preds.index.to_numpy(np.int64)
    order = np.argsort(users, kind="stable")
    sorted_users, matrix = users[order], preds.to_numpy(np.int64)[order]
    depth = matrix.shape[1]

    def score_items(user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        rows = np.searchsorted(sorted_users, np.asarray(user_ids, dtype=np.int64))
        rows = np.minimum(rows, len(sorted_users) - 1)
        known = sorted_users[rows] == user_ids
        lists = matrix[rows]  # (batch, depth)
        # (batch, candidates, depth); -1 padding never matches
        match = (item_ids[:, :, None] == lists[:, None, :]) & (lists[:, None, :] >= 0)
        listed = match.any(axis=2) & known[:, None]
        rank = match.argmax(axis=2)
        return np.where(listed, depth - rank, 0).astype(np.float64)

    return score_items


def print_result(result: dict[str, Any]) -> None:
    """Print an ``evaluate_split`` result (metrics, rating errors, audit) as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{result['model']} on a {result['split'].get('kind')} split "
                        f"({result['n_users_evaluated']} users, aggregate={result['aggregate']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    sampled = result.get("sampled") or {}
    rows = [*(result.get("metrics") or {}).items(), *(result.get("rating_errors") or {}).items(),
            *((f"sampled {name} (N={sampled.get('n_negatives')})", value)
              for name, value in (sampled.get("metrics") or {}).items())]
    for name, value in rows:
        table.add_row(name, f"{value:.4f}")
    if sampled:
        table.caption = sampled.get("warning")
    console.print(table)
    if "audit" in result:
        from evaluation.splits import LeakageAudit

        fields = {k: v for k, v in result["audit"].items() if k != "has_leakage"}
        console.print(LeakageAudit(**fields))
