"""Metrics addressed by name: ``get_metric("ndcg@10")``, ``evaluate_ranking(recs, rel, [...])``.

A name is ``base`` or ``base@k`` (case-insensitive), ``base`` being a key of ``METRICS`` or an
alias (``hr`` = ``hit_rate``, ``arp`` = ``popularity_bias``, ...). Families:

- ``"ranking"``: ``metric(recs, relevance, *, aggregate="user", ...)``; ``@k`` required except
  for ``auc`` (whole list by default).
- ``"catalog"``: ``coverage[@k](recs, n_items=...)``, ``popularity_bias[@k](recs, popularity=...)``.
- ``"rating"``: ``metric(y_true, y_pred, *, users=None, items=None, aggregate="global")``;
  no ``@k``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from evaluation._util.validation import check_choice
from evaluation.errors import ConfigError
from evaluation.metrics import _catalog, _ranking, _rating
from evaluation.metrics._relevance import Judged, judge


@dataclass(frozen=True)
class MetricSpec:
    """A metric kernel and what it accepts."""

    function: Callable
    family: str
    aggregations: tuple[str, ...]
    needs_k: bool
    accepts_k: bool = True
    options: tuple[str, ...] = ()
    description: str = ""


METRICS: dict[str, MetricSpec] = {
    "auc": MetricSpec(
        _ranking.auc, "ranking", ("user", "item", "global"), False, True, ("n_candidates",),
        "area under the ROC curve per user (unlisted candidates tie at the bottom)",
    ),
    "coverage": MetricSpec(
        _catalog.catalog_coverage, "catalog", ("global",), False, True, ("n_items",),
        "share of the catalog recommended to at least one user",
    ),
    "f1": MetricSpec(_ranking.f1_at_k, "ranking", ("user", "global"), True, description="F1@k"),
    "hit_rate": MetricSpec(
        _ranking.hit_rate_at_k, "ranking", ("user", "item", "global"), True,
        description="share of users with a relevant item in the top k",
    ),
    "mae": MetricSpec(
        _rating.mae, "rating", ("user", "item", "global"), False, False, (), "mean absolute error"
    ),
    "map": MetricSpec(
        _ranking.map_at_k, "ranking", ("user",), True,
        description="mean average precision, denominator min(k, #relevant)",
    ),
    "mrr": MetricSpec(
        _ranking.mrr_at_k, "ranking", ("user", "item", "global"), True,
        description="mean reciprocal rank of the first relevant item",
    ),
    "ndcg": MetricSpec(
        _ranking.ndcg_at_k, "ranking", ("user",), True, options=("gain",),
        description="normalised DCG (gain linear | exp | binary)",
    ),
    "nmae": MetricSpec(
        _rating.nmae, "rating", ("user", "item", "global"), False, False, ("rating_range",),
        "MAE / rating range",
    ),
    "nrmse": MetricSpec(
        _rating.nrmse, "rating", ("user", "item", "global"), False, False, ("rating_range",),
        "RMSE / rating range",
    ),
    "popularity_bias": MetricSpec(
        _catalog.popularity_bias, "catalog", ("user", "global"), False, True, ("popularity",),
        "mean popularity of the recommended items",
    ),
    "precision": MetricSpec(
        _ranking.precision_at_k, "ranking", ("user", "global"), True, description="precision@k"
    ),
    "recall": MetricSpec(
        _ranking.recall_at_k, "ranking", ("user", "item", "global"), True, description="recall@k"
    ),
    "rmse": MetricSpec(
        _rating.rmse, "rating", ("user", "item", "global"), False, False, (),
        "root mean squared error",
    ),
}
"""Every metric by its base name: its kernel, kind (``"ranking"`` or ``"rating"``), the
aggregations it supports and a one-line description (``get_metric`` reads it)."""

ALIASES: dict[str, str] = {
    "arp": "popularity_bias",
    "catalog_coverage": "coverage",
    "hitrate": "hit_rate",
    "hr": "hit_rate",
    "mean_average_precision": "map",
    "p": "precision",
    "r": "recall",
}

_NAME = re.compile(r"^\s*([a-z0-9_]+)\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Metric:
    """A named metric, e.g. ``get_metric("ndcg@10")``; call it like its kernel (without ``k``)."""

    name: str
    base: str
    k: int | None
    spec: MetricSpec = field(repr=False)
    options: dict = field(default_factory=dict, repr=False)

    @property
    def family(self) -> str:
        return self.spec.family

    def __call__(self, *args, **kwargs):
        kwargs = {**self.options, **kwargs}
        if self.spec.accepts_k:
            kwargs["k"] = self.k
        if self.family == "catalog":
            extra = self.spec.options[0]
            if len(args) == 2 and extra not in kwargs:
                kwargs[extra] = args[1]
                args = args[:1]
            if extra not in kwargs:
                raise ConfigError(f"Metric {self.name!r} needs {extra}=...")
        return self.spec.function(*args, **kwargs)


def get_metric(name: str, **options) -> Metric:
    """Look up a metric by name (``"ndcg@10"``, ``"precision@5"``, ``"rmse"``, ``"auc"``...).

    Parameters
    ----------
    name : str
        ``base`` or ``base@k``, case-insensitive; aliases such as ``hr`` are accepted.
    **options
        Options of the metric (e.g. ``gain="exp"`` for NDCG, ``aggregate``).

    Returns
    -------
    Metric
        A callable metric with its cutoff and options bound.

    Raises
    ------
    ConfigError
        On an unknown name, a missing or unexpected cutoff, or an unknown option.
    """
    if not isinstance(name, str):
        raise ConfigError(f"A metric name must be a string such as 'ndcg@10'; got {name!r}.")
    match = _NAME.match(name.lower())
    base = ALIASES.get(match.group(1), match.group(1)) if match else None
    if match is None or base not in METRICS:
        known = ", ".join(sorted(METRICS))
        raise ConfigError(
            f"Unknown metric {name!r}. Known metrics: {known} (write 'name@k' for a cutoff, "
            "e.g. 'ndcg@10')."
        )
    spec = METRICS[base]
    k = None if match.group(2) is None else int(match.group(2))
    if k is not None and not spec.accepts_k:
        raise ConfigError(f"Metric {base!r} takes no cutoff; write {base!r}, not {name!r}.")
    if k is None and spec.needs_k:
        raise ConfigError(f"Metric {base!r} needs a cutoff: write e.g. '{base}@10'.")
    if k == 0:
        raise ConfigError(f"The cutoff of {name!r} must be >= 1.")
    unknown = set(options) - {*spec.options, "aggregate"}
    if unknown:
        raise ConfigError(
            f"Metric {base!r} has no option(s) {sorted(unknown)}; it accepts "
            f"{sorted({*spec.options, 'aggregate'})}."
        )
    label = base if k is None else f"{base}@{k}"
    if "gain" in options:
        check_choice("gain", options["gain"], _ranking.GAINS, owner=label)
    return Metric(name=label, base=base, k=k, spec=spec, options=options)


def _metrics(metrics: Iterable) -> list[Metric]:
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    return [m if isinstance(m, Metric) else get_metric(m) for m in metrics]


def evaluate_ranking(
    recs,
    relevance,
    metrics: Iterable,
    *,
    aggregate: str = "user",
    popularity=None,
    n_candidates=None,
) -> dict[str, float]:
    """Compute several ranking/catalog metrics, matching the lists against ``relevance`` once.

    Coverage uses the catalog of ``relevance`` (its number of columns); popularity bias needs
    ``popularity``. ``aggregate`` applies to every metric (``coverage`` is always global).

    Parameters
    ----------
    recs, relevance
        As for the ranking metrics (``recs`` item indices, ``relevance`` sparse gains).
    metrics : iterable of str or Metric
        Metric names such as ``"ndcg@10"``.
    aggregate : str
        Aggregation of every metric.
    popularity : array-like of float, optional
        Item popularity, needed by ``popularity_bias``.
    n_candidates : int or array-like of int, optional
        Candidates per user for ``auc``.

    Returns
    -------
    dict of str to float
        Each metric's value, under the name it was asked by.

    Raises
    ------
    ConfigError
        On an unknown metric or one that misses an input.
    """
    metrics = _metrics(metrics)
    wrong = [m.name for m in metrics if m.family == "rating"]
    if wrong:
        raise ConfigError(f"{wrong} are rating errors: use evaluate_ratings for them.")
    ranking = [m for m in metrics if m.family == "ranking"]
    judged: Judged | None = None
    if ranking:
        recs_array = np.asarray(recs)
        depth = max(m.k or (recs_array.shape[1] if recs_array.ndim == 2 else 1) for m in ranking)
        judged = judge(recs_array, relevance, depth)
    results: dict[str, float] = {}
    for m in metrics:
        if m.family == "ranking":
            kwargs = {"aggregate": aggregate}
            if m.base == "auc":
                kwargs["n_candidates"] = n_candidates
                k = m.k or np.asarray(recs).shape[1]
                results[m.name] = m.spec.function(judged, None, k, **{**m.options, **kwargs})
            else:
                results[m.name] = m.spec.function(judged, None, m.k, **{**m.options, **kwargs})
        elif m.base == "coverage":
            results[m.name] = m(recs, n_items=relevance.shape[1])
        else:
            if popularity is None:
                raise ConfigError(f"{m.name} needs popularity=... (see item_popularity).")
            results[m.name] = m(recs, popularity, aggregate=aggregate)
    return results


def evaluate_ratings(
    y_true,
    y_pred,
    metrics: Iterable = ("rmse", "mae", "nrmse", "nmae"),
    *,
    users=None,
    items=None,
    aggregate: str = "global",
    rating_range=None,
) -> dict[str, float]:
    """Compute rating errors by name; see ``_rating`` for the definitions.

    Parameters
    ----------
    y_true, y_pred : array-like of float
        True and predicted ratings.
    metrics : iterable of str
        Rating error names.
    users, items, aggregate, rating_range
        As for :func:`rmse` and :func:`nrmse`.

    Returns
    -------
    dict of str to float
        Each error, under its name.

    Raises
    ------
    ConfigError
        On a name that is not a rating error.
    """
    results: dict[str, float] = {}
    for m in _metrics(metrics):
        if m.family != "rating":
            raise ConfigError(f"{m.name!r} is not a rating error: use evaluate_ranking for it.")
        kwargs = {"users": users, "items": items, "aggregate": aggregate}
        if "rating_range" in m.spec.options:
            kwargs["rating_range"] = rating_range
        results[m.name] = m(y_true, y_pred, **kwargs)
    return results
