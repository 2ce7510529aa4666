"""Evaluate any model on any train/test split with the metric library (ranking + rating errors)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.jsonable import to_jsonable
from evaluation._util.validation import check_k
from evaluation.errors import ConfigError
from evaluation.metrics import Metric
from evaluation.protocols._ranking import (
    DEFAULT_METRICS,
    checked_predictions,
    list_scorer,
    relevant_test,
    resolve_metrics,
    score_predictions,
)
from evaluation.protocols._ratings import (
    RATING_ERRORS,
    rating_errors,
    rating_scale,
    supports_ratings,
)
from evaluation.protocols._render import fmt, metric_frame, metric_table, show, with_extra
from evaluation.protocols._sampled import SampledResult, evaluate_sampled
from evaluation.splits import LeakageAudit, Split, audit_leakage, check_events


@dataclass(frozen=True, eq=False)
class SplitResult:
    """What :func:`evaluate_split` measured, with the settings that produced it.

    Parameters
    ----------
    model : str
        The model's class name.
    split : dict
        The split's parameters and its row and user counts.
    k : int
        The length of the ranked lists.
    aggregate : str
        How the ranking metrics were averaged (``"user"``, ``"item"`` or ``"global"``).
    relevance_threshold : float or None
        The lowest rating of a relevant test event (``None``: every test event is relevant).
    graded : bool
        Whether the ratings were the gains of NDCG.
    n_users_evaluated : int
        Users with at least one relevant test event.
    n_relevant_events : int
        The relevant test events.
    metrics : dict of str to float
        Ranking and catalog metrics.
    rating_errors : dict of str to float, optional
        RMSE, MAE, NRMSE and NMAE (those asked for), when the model predicts ratings and the
        test events carry one.
    rating_aggregate : str, optional
        How the rating errors were averaged, when there are rating errors.
    sampled : SampledResult, optional
        The sampled-negative metrics, when they were asked for.
    sampled_scorer : str, optional
        What scored the sampled candidates: ``"score_items"`` or the model's list positions.
    audit : LeakageAudit, optional
        The split's leakage audit, when it was asked for.
    timing : dict of str to float
        Seconds spent training, predicting, scoring and on the sampled metrics.
    """

    model: str
    split: dict[str, Any]
    k: int
    aggregate: str
    relevance_threshold: float | None
    graded: bool
    n_users_evaluated: int
    n_relevant_events: int
    metrics: dict[str, float]
    rating_errors: dict[str, float] | None = None
    rating_aggregate: str | None = None
    sampled: SampledResult | None = None
    sampled_scorer: str | None = None
    audit: LeakageAudit | None = None
    timing: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON values, the format written to results files.

        Returns
        -------
        dict
            ``protocol``, ``model``, ``split``, ``k``, ``aggregate``, ``relevance_threshold``,
            ``graded``, ``n_users_evaluated``, ``n_relevant_events``, ``metrics``, then
            ``rating_errors`` and ``rating_aggregate``, ``sampled`` and ``audit`` when present,
            and ``timing``; NaN and infinities become ``None``.
        """
        out: dict[str, Any] = {
            "protocol": "evaluate_split", "model": self.model, "split": self.split,
            "k": self.k, "aggregate": self.aggregate,
            "relevance_threshold": self.relevance_threshold, "graded": self.graded,
            "n_users_evaluated": self.n_users_evaluated,
            "n_relevant_events": self.n_relevant_events, "metrics": self.metrics,
        }
        if self.rating_errors is not None:
            out["rating_errors"] = self.rating_errors
            out["rating_aggregate"] = self.rating_aggregate
        if self.sampled is not None:
            out["sampled"] = {**self.sampled.to_dict(), "scorer": self.sampled_scorer}
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        out["timing"] = self.timing
        return to_jsonable(out)

    def to_frame(self) -> pd.DataFrame:
        """The metric values as a tidy frame.

        Returns
        -------
        pandas.DataFrame
            One row per value, columns ``group`` (``"metrics"``, ``"rating_errors"`` or
            ``"sampled"``), ``metric`` and ``value`` (float64).
        """
        groups = [("metrics", self.metrics), ("rating_errors", self.rating_errors or {})]
        if self.sampled is not None:
            groups.append(("sampled", self.sampled.metrics))
        return metric_frame(groups)

    def __rich__(self) -> Any:
        """A table of the metrics, rating errors and sampled metrics, then the leakage audit."""
        title = (f"{self.model} on a {self.split.get('kind')} split "
                 f"({self.n_users_evaluated} users, aggregate={self.aggregate})")
        rows = [*self.metrics.items(), *(self.rating_errors or {}).items()]
        caption = None
        if self.sampled is not None:
            rows += [(f"sampled {name} (N={self.sampled.n_negatives})", value)
                     for name, value in self.sampled.metrics.items()]
            caption = self.sampled.warning
        table = metric_table(title, ("metric", "value"),
                             [(name, fmt(value)) for name, value in rows], caption=caption)
        return with_extra(table, self.audit)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SplitResult):
            return self.to_dict() == other.to_dict()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares by value, so not hashable


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
) -> SplitResult:
    """Train ``model`` on ``split.train``, predict for the test users and score the predictions.

    Users are evaluated when they have at least one relevant test event; each gets the model's
    top-``k`` list. Rating errors (over the rating scale seen in the split) are added when the
    model predicts ratings and the test events have a ``rating``.

    Parameters
    ----------
    model : RecModel
        An untrained model; ``train`` is called on ``split.train``.
    split : Split
        The train/test events (from ``temporal_user_split``, ``global_time_split``,
        ``leave_last_out``, ...).
    k : int
        Length of the ranked lists; also completes metric names given without a cutoff.
    metrics : sequence of str or Metric
        Ranking, catalog and rating metrics by name (``"ndcg@10"``, ``"ndcg"``, ``"rmse"``).
    relevance_threshold : float, optional
        A test event is relevant when its rating is at least this; ``None``: every event is.
    graded : bool
        Use the ratings of the relevant events as the gains of NDCG.
    aggregate : str
        How ranking metrics are averaged: ``"user"``, ``"item"`` or ``"global"``.
    rating_aggregate : str
        How rating errors are averaged: ``"global"``, ``"user"`` or ``"item"``.
    audit : bool
        Attach the split's leakage audit.
    sampled : int or dict, optional
        Add sampled-negative metrics: the number of negatives, or a dict of options of
        :func:`evaluate_sampled`. Models without ``score_items`` are scored by the position of
        a candidate in their top-k list.
    train_kwargs : dict, optional
        Keyword arguments of ``model.train``.
    verbose : bool
        Print the result as tables.

    Returns
    -------
    SplitResult
        The metrics, rating errors, sampled metrics, audit and timings;
        ``SplitResult.to_dict()`` is the JSON form.

    Raises
    ------
    ConfigError
        For a ``split`` that is not a ``Split``, an invalid ``k``, unknown metrics, a
        ``relevance_threshold`` without ratings, or invalid ``sampled`` options.
    DataError
        When the train or test events lack ``user_id`` or ``track_id``.
    PredictionError
        When the model's predictions or rating predictions cannot be scored.
    """
    _check_split(split)
    k = check_k(k, owner="evaluate_split")
    ranking, rating_names = resolve_metrics(metrics, k)
    timing: dict[str, float] = {}
    with _timed(timing, "train_s"):
        model.train(split.train, **dict(train_kwargs or {}))
    relevant = relevant_test(split.test, relevance_threshold)
    users = sorted_unique(relevant["user_id"].to_numpy(np.int64))
    preds: pd.DataFrame | None = None
    scores: dict[str, float] = {}
    if len(users) and (ranking or sampled is not None):
        preds, scores = _ranking_scores(model, split, relevant, users, ranking, k=k,
                                        aggregate=aggregate, graded=graded, timing=timing)
    errors = _rating_errors(model, split, rating_names, rating_aggregate)
    sampled_result, scorer = None, None
    if sampled is not None:
        with _timed(timing, "sampled_s"):
            sampled_result, scorer = _sampled(model, split, relevant, sampled, preds)
    result = SplitResult(
        model=type(model).__name__, split={**to_jsonable(split.params), **split.summary()},
        k=k, aggregate=aggregate, relevance_threshold=relevance_threshold, graded=bool(graded),
        n_users_evaluated=len(users), n_relevant_events=len(relevant), metrics=scores,
        rating_errors=errors, rating_aggregate=None if errors is None else rating_aggregate,
        sampled=sampled_result, sampled_scorer=scorer,
        audit=audit_leakage(split) if audit else None, timing=timing,
    )
    if verbose:
        show(result)
    return result


@contextmanager
def _timed(timing: dict[str, float], key: str) -> Iterator[None]:
    """Record the seconds the block took as ``timing[key]`` (nothing when it raises)."""
    start = time.perf_counter()
    yield
    timing[key] = time.perf_counter() - start


def _ranking_scores(model: Any, split: Split, relevant: pd.DataFrame, users: np.ndarray,
                    ranking: list[Metric], *, k: int, aggregate: str, graded: bool,
                    timing: dict[str, float]) -> tuple[pd.DataFrame, dict[str, float]]:
    """The model's validated lists for ``users`` (deep enough for every cutoff) and their
    ranking metrics; records the seconds predicting and scoring took."""
    depth = max([k] + [m.k for m in ranking if m.k is not None])
    with _timed(timing, "predict_s"):
        preds = checked_predictions(model, users, depth)
    with _timed(timing, "score_s"):
        scores = score_predictions(preds, relevant, k=k, metrics=ranking,
                                   aggregate=aggregate, graded=graded, train=split.train)
    return preds, scores


def _check_split(split: Any) -> None:
    """Nothing; raises unless ``split`` is a ``Split`` whose events have users and items."""
    if not isinstance(split, Split):
        raise ConfigError(f"evaluate_split: 'split' must be a Split (from temporal_user_split, "
                          f"global_time_split, leave_last_out, ...). Got {type(split).__name__}.")
    check_events(split.train, ["user_id", "track_id"], name="train")
    check_events(split.test, ["user_id", "track_id"], name="test")


def _rating_errors(model: Any, split: Split, names: list[str],
                   aggregate: str) -> dict[str, float] | None:
    """The rating errors in ``names`` (all of them when empty); None without rated test events."""
    if not (supports_ratings(model) and "rating" in split.test.columns and len(split.test)):
        return None
    errors = rating_errors(model, split.test, aggregate=aggregate,
                           rating_range=rating_scale(split))
    return {name: errors[name] for name in names or RATING_ERRORS}


def _sampled(model: Any, split: Split, relevant: pd.DataFrame, options: Any,
             preds: pd.DataFrame | None) -> tuple[SampledResult, str]:
    """The sampled-negative protocol on the relevant test events, and what scored them.

    Models with ``score_items(user_ids, item_ids)`` score the candidates themselves; for any
    other model a candidate's score comes from its position in the model's top-k list (items
    outside the list tie at the bottom, and ties count against the target).
    """
    if isinstance(options, bool) or not isinstance(options, (int, np.integer, dict)):
        raise ConfigError(f"The 'sampled' parameter of evaluate_split must be a number of "
                          f"negatives (e.g. 100) or a dict of options of evaluate_sampled. "
                          f"Got {options!r} instead.")
    kwargs: dict[str, Any] = (dict(options) if isinstance(options, dict)
                              else {"n_negatives": int(options)})
    if callable(getattr(model, "score_items", None)):
        return evaluate_sampled(model, relevant, split.train, **kwargs), "score_items"
    if preds is None:
        raise ConfigError("sampled metrics need the model's predictions; no test user has "
                          "a relevant event.")
    depth = preds.shape[1]
    warnings.warn(f"{type(model).__name__} has no score_items(user_ids, item_ids): the "
                  f"sampled metrics score candidates by their position in its top-{depth} "
                  f"list, so a target outside that list ranks last. Add score_items for "
                  f"proper sampled metrics.", UserWarning, stacklevel=3)
    result = evaluate_sampled(list_scorer(preds), relevant, split.train, **kwargs)
    return result, f"top-{depth} list position"
