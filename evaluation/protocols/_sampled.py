"""The sampled-negative protocol: rank each test target among N sampled unseen items.

For every test interaction (user, target) the harness samples ``n_negatives`` (default 100) distinct
items the user never interacted with (neither in train nor in test), asks the model to score the
``1 + n_negatives`` candidates, and ranks the target among them. HR@k and NDCG@k are then computed
on these short lists.

Tie rule (pessimistic): the target ranks *after* every negative with an equal score, so a model
that scores everything alike gets rank ``n_negatives + 1``, never a lucky hit.

Sampled metrics are not the full-ranking metrics: they can reorder models (Krichene & Rendle,
"On Sampled Metrics for Item Recommendation", KDD 2020). Every result carries that warning; report
them beside the full-ranking numbers, never instead of them. ``correction="rank"`` or ``"bv"``
adds their corrected estimates of the full-ranking metrics (see ``_sampled_correction``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import IdIndex, isin, sorted_positions, sorted_unique
from evaluation._util.validation import check_choice, check_int, check_k, check_number
from evaluation.errors import ConfigError, PredictionError, show_values
from evaluation.protocols._render import fmt, metric_frame, metric_table, show
from evaluation.protocols._sampled_correction import (
    CORRECTIONS,
    DEFAULT_GAMMA,
    corrected_values,
    full_metrics,
)

SAMPLED_METRICS_WARNING = (
    "Sampled metrics rank each target among a few sampled negatives, not the whole catalog; they "
    "are biased estimates of the full-ranking metrics and can reorder models (Krichene & Rendle, "
    "'On Sampled Metrics for Item Recommendation', KDD 2020). Report them beside full-ranking "
    "metrics, not instead of them."
)
WEIGHTINGS = ("uniform", "popularity")
AGGREGATES = ("global", "user")
DEFAULT_SEED = 42
_REJECTION_ROUNDS = 12  # rounds of rejection sampling before the exact (Gumbel) fallback


@dataclass(frozen=True)
class SampledResult:
    """Metrics of the sampled-negative protocol, with the per-point ranks and the warning.

    Parameters
    ----------
    metrics : dict of str to float
        ``hit_rate@k`` and ``ndcg@k`` on the sampled lists.
    user_ids, item_ids : numpy.ndarray
        The user and target item of each test point, sorted by user, then item.
    ranks : numpy.ndarray
        The 1-based rank of each target among its ``1 + n_negatives`` candidates.
    n_negatives, seed, weighting, aggregate, correction, gamma
        The settings of :func:`evaluate_sampled` that produced the result.
    warning : str
        Why sampled metrics must not replace the full-ranking ones.
    corrected : dict of str to float
        With a ``correction``: the corrected estimates of the full-ranking ``hit_rate@k`` and
        ``ndcg@k``; empty without one.
    """

    metrics: dict[str, float]
    user_ids: np.ndarray = field(repr=False)
    item_ids: np.ndarray = field(repr=False)
    ranks: np.ndarray = field(repr=False)
    n_negatives: int = 100
    seed: int = DEFAULT_SEED
    weighting: str = "uniform"
    aggregate: str = "global"
    warning: str = SAMPLED_METRICS_WARNING
    correction: str = "none"
    gamma: float | None = None
    corrected: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The summary written to results files (the warning included, the ranks left out).

        Returns
        -------
        dict
            ``protocol``, ``metrics``, ``n_points``, ``n_negatives``, ``seed``, ``weighting``,
            ``aggregate``, ``tie_rule`` and ``warning``; with a correction also
            ``correction``, ``gamma`` (``"bv"`` only) and ``corrected_metrics``.
        """
        out = {
            "protocol": "sampled_negatives",
            "metrics": dict(self.metrics),
            "n_points": int(len(self.ranks)),
            "n_negatives": self.n_negatives,
            "seed": self.seed,
            "weighting": self.weighting,
            "aggregate": self.aggregate,
            "tie_rule": "pessimistic: the target ranks after negatives with an equal score",
            "warning": self.warning,
        }
        if self.correction != "none":
            out["correction"] = self.correction
            if self.gamma is not None:
                out["gamma"] = self.gamma
            out["corrected_metrics"] = dict(self.corrected)
        return out

    def to_frame(self) -> pd.DataFrame:
        """The metric values as a tidy frame.

        Returns
        -------
        pandas.DataFrame
            One row per metric, columns ``group`` (``"sampled"``, and with a correction
            ``"corrected"`` for its estimates), ``metric`` and ``value`` (float64).
        """
        groups = [("sampled", self.metrics)]
        if self.correction != "none":
            groups.append(("corrected", self.corrected))
        return metric_frame(groups)

    def __rich__(self) -> Any:
        """A table of the sampled metrics, captioned with the warning."""
        title = (f"Sampled negatives (N={self.n_negatives}, {len(self.ranks)} test points, "
                 f"weighting={self.weighting}, aggregate={self.aggregate}, seed={self.seed})")
        if self.correction == "none":
            values = [(name, fmt(value)) for name, value in self.metrics.items()]
            return metric_table(title, ("metric", "value"), values, caption=self.warning)
        both = [(name, fmt(value), fmt(self.corrected[name]))
                for name, value in self.metrics.items()]
        return metric_table(title, ("metric", "sampled", f"corrected ({self.correction})"),
                            both, caption=self.warning)


def sample_negatives(
    point_users: np.ndarray,
    interacted: np.ndarray,
    n_items: int,
    n_negatives: int = 100,
    *,
    seed: int = DEFAULT_SEED,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Draw ``n_negatives`` distinct item indices per test point, none interacted by its user.

    Sampling is successive draws without replacement from the user's eligible items (uniform,
    or proportional to ``weights``): i.i.d. draws are taken in order, discarding repeats and
    interacted items. Users with few eligible items fall back to exact weighted sampling
    without replacement (Gumbel top-N).

    Parameters
    ----------
    point_users : numpy.ndarray
        The user index of each test point.
    interacted : numpy.ndarray
        Sorted unique keys ``user * n_items + item`` of every known interaction.
    n_items : int
        The catalog size (items are ``0..n_items-1``).
    n_negatives : int
        Negatives per test point; every user needs at least that many eligible items.
    seed : int
        Seed of ``numpy.random.default_rng``.
    weights : numpy.ndarray, optional
        Sampling weight per item (uniform when None); zero-weight items are never drawn.

    Returns
    -------
    numpy.ndarray
        An ``(n_points, n_negatives)`` int64 array of item indices.
    """
    rng = np.random.default_rng(seed)
    n_points = len(point_users)
    out = np.empty((n_points, n_negatives), dtype=np.int64)
    if n_points == 0 or n_negatives == 0:
        return out
    cdf = None
    if weights is not None:
        cdf = np.cumsum(weights, dtype=np.float64)
        cdf /= cdf[-1]
    pending = np.arange(n_points)
    width = n_negatives + 16
    for _ in range(_REJECTION_ROUNDS):
        draws = _draw(rng, (len(pending), width), n_items, cdf)
        ok = _eligible(draws, point_users[pending], interacted, n_items)
        done = ok.sum(axis=1) >= n_negatives
        if done.any():
            rows = np.flatnonzero(done)
            keep = ok[rows] & (np.cumsum(ok[rows], axis=1) <= n_negatives)
            out[pending[rows]] = draws[rows][keep].reshape(len(rows), n_negatives)
        pending = pending[~done]
        if len(pending) == 0:
            return out
        width *= 2
    _exact_negatives(rng, out, pending, point_users, interacted, n_items, weights)
    return out


def _exact_negatives(rng, out: np.ndarray, pending: np.ndarray, point_users: np.ndarray,
                     interacted: np.ndarray, n_items: int, weights: np.ndarray | None) -> None:
    """Nothing; fills the ``pending`` rows of ``out`` by exact sampling (Gumbel top-N)."""
    n_negatives = out.shape[1]
    log_w = np.zeros(n_items) if weights is None else np.log(weights, where=weights > 0,
                                                              out=np.full(n_items, -np.inf))
    chunk = max(1, (64 * 2**20) // (8 * max(n_items, 1)))
    for start in range(0, len(pending), chunk):
        rows = pending[start : start + chunk]
        keys = log_w + rng.gumbel(size=(len(rows), n_items))
        users = point_users[rows]
        lo = np.searchsorted(interacted, users * n_items)
        hi = np.searchsorted(interacted, (users + 1) * n_items)
        counts = hi - lo
        r = np.repeat(np.arange(len(rows)), counts)
        offsets = np.arange(len(r)) - np.repeat(np.cumsum(counts) - counts, counts)
        seen = interacted[np.repeat(lo, counts) + offsets]
        keys[r, seen - users[r] * n_items] = -np.inf
        top = np.argpartition(-keys, n_negatives - 1, axis=1)[:, :n_negatives]
        out[rows] = np.take_along_axis(
            top, np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable"), axis=1
        )


def _draw(rng, shape, n_items: int, cdf) -> np.ndarray:
    """``shape`` i.i.d. item indices, uniform or by the cumulative weights ``cdf``."""
    if cdf is None:
        return rng.integers(0, n_items, size=shape, dtype=np.int64)
    return np.minimum(np.searchsorted(cdf, rng.random(shape), side="right"), n_items - 1)


def _eligible(draws: np.ndarray, users: np.ndarray, interacted: np.ndarray, n_items: int):
    """Mask of draws neither interacted by the row's user nor repeated earlier in the row."""
    keys = users[:, None] * n_items + draws
    ok = sorted_positions(interacted, keys) < 0
    order = np.argsort(draws, axis=1, kind="stable")
    ranked = np.take_along_axis(draws, order, axis=1)
    repeat = np.zeros(draws.shape, dtype=bool)
    rows = np.broadcast_to(np.arange(len(draws))[:, None], (len(draws), draws.shape[1] - 1))
    dup = ranked[:, 1:] == ranked[:, :-1]
    repeat[rows[dup], order[:, 1:][dup]] = True
    return ok & ~repeat


def _scorer(model) -> Callable:
    """The ``score_items(user_ids, item_ids)`` function of ``model`` (or ``model`` itself)."""
    if hasattr(model, "score_items") and callable(model.score_items):
        return model.score_items
    if callable(model):
        return model
    raise ConfigError(
        "The sampled protocol needs a model with a score_items(user_ids, item_ids) method or a "
        f"callable with that signature; got {type(model).__name__}."
    )


def evaluate_sampled(
    model: Any,
    test: pd.DataFrame,
    train: pd.DataFrame,
    *,
    n_negatives: int = 100,
    seed: int = DEFAULT_SEED,
    weighting: str = "uniform",
    items=None,
    user_col: str = "user_id",
    item_col: str = "track_id",
    hit_ks: tuple[int, ...] = (5, 10),
    ndcg_ks: tuple[int, ...] = (10,),
    aggregate: str = "global",
    batch_size: int = 4096,
    verbose: bool = False,
    correction: str = "none",
    gamma: float = DEFAULT_GAMMA,
) -> SampledResult:
    """Run the sampled-negative protocol: rank each test target among sampled negatives.

    Negatives are drawn with ``numpy.random.default_rng(seed)`` over the test points sorted by
    (user, item), so the result does not depend on the row order of ``test``.

    Parameters
    ----------
    model : object or callable
        An object with ``score_items(user_ids, item_ids) -> scores`` or such a callable:
        ``user_ids`` is a 1-D array of ``b`` user ids, ``item_ids`` a ``(b, 1 + n_negatives)``
        array of item ids (column 0 the target, then the negatives), and it returns a
        ``(b, 1 + n_negatives)`` array of finite scores, higher = better. It is called on
        batches of at most ``batch_size`` test points.
    test : pandas.DataFrame
        One row per test interaction (``user_col``, ``item_col``).
    train : pandas.DataFrame
        The training interactions (``user_col``, ``item_col``); with ``test`` it defines what
        each user has interacted with, and with ``weighting="popularity"`` the sampling weights
        (an item's number of training interactions; items never trained on are not drawn).
    n_negatives : int
        Negatives per test point (at least 1).
    seed : int
        Seed of the sampler (at least 0).
    weighting : {"uniform", "popularity"}
        How negatives are drawn.
    items : array-like, optional
        The catalog to sample from (default: every item in ``train`` or ``test``).
    user_col, item_col : str
        The user and item columns of ``test`` and ``train``.
    hit_ks, ndcg_ks : tuple of int
        The cutoffs of the hit rates and of NDCG.
    aggregate : {"global", "user"}
        ``"global"``: mean over test points; ``"user"``: mean over users of the mean over their
        test points.
    batch_size : int
        The most test points scored in one call of the model.
    verbose : bool
        Print the result as a table.
    correction : {"none", "rank", "bv"}
        Also estimate the full-ranking metrics from the sampled ranks (Krichene & Rendle, KDD
        2020), with ``n`` = 1 + the items the point's user never interacted with and
        ``m = n_negatives``: ``"rank"`` puts the unbiased rank estimate
        ``r_hat = 1 + (r_s - 1)(n - 1)/m`` into the metric; ``"bv"`` maps each sampled rank
        ``r_s`` to the value ``x[r_s]`` minimising ``sum_{r=1..n} (E[x | r] - M(r))^2 +
        gamma Var[x | r]`` under the hypergeometric law of ``r_s`` given the full rank ``r``.
        Needs ``weighting="uniform"``.
    gamma : float
        The variance weight of ``correction="bv"``, in ``[0, 1]`` (0: minimal bias).

    Returns
    -------
    SampledResult
        ``hit_rate@k`` and ``ndcg@k`` on the sampled lists, the rank of every target, the
        settings and the warning about sampled metrics; with a correction, ``corrected``.

    Raises
    ------
    ConfigError
        For invalid parameters, a model without ``score_items``, missing columns, items outside
        ``items``, users with fewer than ``n_negatives`` items they never interacted with, or
        a correction with popularity-weighted sampling.
    PredictionError
        When the model returns scores of the wrong shape, non-numeric or non-finite scores.
    """
    n_negatives, batch_size, seed, gamma = _check_options(
        n_negatives, batch_size, seed, hit_ks, ndcg_ks, weighting, aggregate, correction, gamma)
    score = _scorer(model)
    drawn = _draw_candidates(test, train, items, user_col, item_col, n_negatives, seed,
                             weighting)
    points, eligible = drawn.points, drawn.eligible
    ranks = _ranks(score, drawn.user_ids, points.item_ids, points.items, drawn.negatives,
                   batch_size)
    corrected = {}
    if correction != "none":
        values = corrected_values(ranks, 1 + eligible, n_negatives, hit_ks, ndcg_ks,
                                  correction, gamma)
        corrected = _aggregate(values, points.users, aggregate)
    result = SampledResult(
        metrics=_aggregate(full_metrics(ranks, hit_ks, ndcg_ks), points.users, aggregate),
        user_ids=drawn.user_ids, item_ids=drawn.target_ids,
        ranks=ranks, n_negatives=n_negatives, seed=seed, weighting=weighting,
        aggregate=aggregate, correction=correction, gamma=gamma if correction == "bv" else None,
        corrected=corrected,
    )
    if verbose:
        show(result)
    return result


@dataclass(frozen=True)
class SampledCandidates:
    """The candidates of the sampled-negative protocol: each test point's target and the
    negatives drawn for it.

    Attributes
    ----------
    user_ids, target_ids : numpy.ndarray
        The user and the target item id of each test point, sorted by user, then item.
    negative_ids : numpy.ndarray
        ``(n_points, n_negatives)``: the item ids of the point's sampled negatives.
    n_candidates : numpy.ndarray
        ``n`` of each point: 1 + the catalog's items its user never interacted with (the
        candidates of its full ranking, what the corrections need).
    """

    user_ids: np.ndarray
    target_ids: np.ndarray
    negative_ids: np.ndarray
    n_candidates: np.ndarray


@dataclass(frozen=True)
class _Drawn:
    """The indexed points and what was drawn for them (item indices, not ids)."""

    points: _Points
    negatives: np.ndarray
    eligible: np.ndarray

    @property
    def user_ids(self) -> np.ndarray:
        return self.points.user_ids[self.points.users]

    @property
    def target_ids(self) -> np.ndarray:
        return self.points.item_ids[self.points.items]


def _draw_candidates(test: pd.DataFrame, train: pd.DataFrame, items: Any, user_col: str,
                     item_col: str, n_negatives: int, seed: int, weighting: str) -> _Drawn:
    """Index the points and draw their negatives (the protocol's one way of drawing them)."""
    points = _index_points(test, train, items, user_col, item_col)
    weights = None
    if weighting == "popularity":
        weights = _popularity(points.train_items, points.n_items)
    eligible = _check_enough(points.users, points.interacted, points.n_items, n_negatives,
                             weights, points.user_ids)
    negatives = sample_negatives(points.users, points.interacted, points.n_items, n_negatives,
                                 seed=seed, weights=weights)
    return _Drawn(points=points, negatives=negatives, eligible=eligible)


def sampled_candidates(test: pd.DataFrame, train: pd.DataFrame, *, n_negatives: int = 100,
                       seed: int = DEFAULT_SEED, items=None, user_col: str = "user_id",
                       item_col: str = "track_id") -> SampledCandidates:
    """The candidates :func:`evaluate_sampled` draws (uniform weighting): the same negatives
    for the same data and seed, for a caller that has the model score them elsewhere.

    Parameters are those of :func:`evaluate_sampled`.

    Raises
    ------
    ConfigError
        For an invalid ``n_negatives`` or ``seed``, missing columns, items outside ``items``,
        or users with fewer than ``n_negatives`` items they never interacted with.
    """
    owner = "sampled_candidates"
    n_negatives = check_int("n_negatives", n_negatives, minimum=1, owner=owner)
    seed = check_int("seed", seed, minimum=0, owner=owner)
    drawn = _draw_candidates(test, train, items, user_col, item_col, n_negatives, seed,
                             "uniform")
    return SampledCandidates(user_ids=drawn.user_ids, target_ids=drawn.target_ids,
                             negative_ids=drawn.points.item_ids[drawn.negatives],
                             n_candidates=1 + drawn.eligible)


def _check_options(n_negatives: Any, batch_size: Any, seed: Any, hit_ks: tuple[int, ...],
                   ndcg_ks: tuple[int, ...], weighting: Any, aggregate: Any, correction: Any,
                   gamma: Any) -> tuple[int, int, int, float]:
    """``n_negatives``, ``batch_size``, ``seed`` and ``gamma``, checked; raises for a bad option."""
    owner = "evaluate_sampled"
    n_negatives = check_int("n_negatives", n_negatives, minimum=1, owner=owner)
    batch_size = check_int("batch_size", batch_size, minimum=1, owner=owner)
    seed = check_int("seed", seed, minimum=0, owner=owner)
    for k in hit_ks:
        check_k(k, name="hit_ks", owner=owner)
    for k in ndcg_ks:
        check_k(k, name="ndcg_ks", owner=owner)
    check_choice("weighting", weighting, WEIGHTINGS, owner=owner)
    check_choice("aggregate", aggregate, AGGREGATES, owner=owner)
    check_choice("correction", correction, CORRECTIONS, owner=owner)
    gamma = check_number("gamma", gamma, low=0.0, high=1.0, owner=owner)
    if correction != "none" and weighting != "uniform":
        raise ConfigError(
            f"evaluate_sampled: correction={correction!r} assumes uniformly sampled negatives; "
            f"got weighting={weighting!r}. Use weighting='uniform' or correction='none'."
        )
    return n_negatives, batch_size, seed, gamma


@dataclass(frozen=True)
class _Points:
    """The test points and known interactions as indices into the sorted users and catalog."""

    #: the sorted unique user ids, and the sorted catalog of item ids
    user_ids: np.ndarray
    item_ids: np.ndarray
    #: sorted unique keys ``user * n_items + item`` of every train and test interaction
    interacted: np.ndarray
    #: the user and target item index of each test point, sorted by user, then item
    users: np.ndarray
    items: np.ndarray
    #: the item index of each training interaction
    train_items: np.ndarray

    @property
    def n_items(self) -> int:
        """The catalog size."""
        return len(self.item_ids)


def _index_points(test: pd.DataFrame, train: pd.DataFrame, items: Any, user_col: str,
                  item_col: str) -> _Points:
    """Index users and items of ``test`` and ``train``; raises for a missing column."""
    for name, frame in (("test", test), ("train", train)):
        missing = [c for c in (user_col, item_col) if c not in frame.columns]
        if missing:
            raise ConfigError(
                f"The {name} frame lacks column(s) {missing} (columns: {list(frame.columns)})."
            )
    test_users = test[user_col].to_numpy()
    test_items = test[item_col].to_numpy()
    train_users = train[user_col].to_numpy()
    train_items = train[item_col].to_numpy()
    item_ids = _catalog(np.concatenate([train_items, test_items]), items, item_col)
    user_ids = sorted_unique(np.concatenate([train_users, test_users]))
    n_items = len(item_ids)
    all_u = _positions(user_ids, np.concatenate([train_users, test_users]))
    all_i = _positions(item_ids, np.concatenate([train_items, test_items]))
    order = np.lexsort((test_items, test_users))
    return _Points(
        user_ids=user_ids,
        item_ids=item_ids,
        interacted=sorted_unique(all_u * n_items + all_i),
        users=_positions(user_ids, test_users[order]),
        items=_positions(item_ids, test_items[order]),
        train_items=all_i[: len(train_items)],
    )


def _positions(sorted_ids: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``np.searchsorted(sorted_ids, query)`` as int64, for ``query`` ids that are all among
    ``sorted_ids``: integer ids through the shared id index (a dense table where they are
    small: a sorted search of millions of unsorted queries stalls on the memory's latency,
    14 s of a full-scale fold's 16 s)."""
    if sorted_ids.dtype.kind in "iu" and query.dtype.kind in "iu":
        return IdIndex(sorted_ids, is_sorted=True, queries=query.size).positions(query)
    return np.searchsorted(sorted_ids, query).astype(np.int64)


def _catalog(seen_items: np.ndarray, items: Any, item_col: str) -> np.ndarray:
    """The sorted unique catalog: ``items``, or the items of train and test without it."""
    if items is None:
        return sorted_unique(seen_items)
    item_ids = sorted_unique(np.asarray(items))
    outside = ~isin(seen_items, item_ids)
    if outside.any():
        raise ConfigError(
            f"Column {item_col!r} of train/test holds items outside 'items': "
            f"{show_values(sorted_unique(seen_items[outside]))}. Pass the full catalog."
        )
    return item_ids


def _popularity(train_idx: np.ndarray, n_items: int) -> np.ndarray:
    """Sampling weights: each item's number of training interactions."""
    weights = np.bincount(train_idx, minlength=n_items).astype(np.float64)
    if weights.sum() == 0:
        raise ConfigError("weighting='popularity' needs training interactions; train is empty.")
    return weights


def _ranks(score: Callable, users: np.ndarray, item_ids: np.ndarray, targets: np.ndarray,
           negatives: np.ndarray, batch_size: int) -> np.ndarray:
    """The 1-based rank of each target among its negatives, scored in batches."""
    ranks = np.empty(len(targets), dtype=np.int64)
    for start in range(0, len(targets), batch_size):
        stop = min(start + batch_size, len(targets))
        # one batch of candidates at a time: the full (points, 1 + N) array may not fit
        candidates = np.column_stack([targets[start:stop], negatives[start:stop]])
        scores = score(users[start:stop], item_ids[candidates])
        ranks[start:stop] = target_ranks(scores, candidates.shape)
    return ranks


def _check_enough(point_u, interacted, n_items, n_negatives, weights, user_ids) -> np.ndarray:
    """Each point's number of eligible items; raises when one has fewer than ``n_negatives``."""
    users, inverse = np.unique(point_u, return_inverse=True)
    seen_user = interacted // n_items
    if weights is None:
        seen = np.bincount(seen_user, minlength=len(user_ids))
        eligible = n_items - seen[users]
    else:
        positive = weights > 0
        seen_positive = np.bincount(
            seen_user, weights=positive[interacted % n_items], minlength=len(user_ids)
        )
        eligible = positive.sum() - seen_positive[users]
    short = eligible < n_negatives
    if short.any():
        raise ConfigError(
            f"n_negatives={n_negatives} is more than the items some users never interacted with "
            f"(users {show_values(user_ids[users[short]])} have "
            f"{show_values(eligible[short].astype(int))} eligible). Lower n_negatives or use a "
            "larger catalog."
        )
    return eligible[inverse].astype(np.int64)


def target_ranks(scores, shape: tuple[int, int]) -> np.ndarray:
    """The 1-based rank of column 0 in each row of ``scores`` (the target's, before its
    negatives), with the protocol's pessimistic ties: a negative scoring the same as the
    target ranks above it.

    Raises
    ------
    PredictionError
        When ``scores`` are not numbers, not of ``shape`` or not all finite.
    """
    try:
        scores = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise PredictionError(f"score_items must return numeric scores: {error}") from None
    if scores.shape != shape:
        raise PredictionError(
            f"score_items returned shape {scores.shape}; expected {shape} (one score per "
            "candidate item, same layout as item_ids)."
        )
    bad = ~np.isfinite(scores)
    if bad.any():
        raise PredictionError(
            f"score_items returned non-finite scores {show_values(scores[bad])}; return finite "
            "floats (use a very low finite score for items the model cannot rank)."
        )
    target = scores[:, :1]
    # Pessimistic ties: negatives scoring the same as the target rank above it.
    return 1 + (scores[:, 1:] >= target).sum(axis=1)


def _aggregate(values: dict[str, np.ndarray], users, aggregate: str) -> dict[str, float]:
    """``{metric: value}``: the mean over test points or the mean over users of their means."""
    if len(users) == 0:
        return {name: 0.0 for name in values}
    if aggregate == "global":
        return {name: float(v.mean()) for name, v in values.items()}
    _, groups = np.unique(users, return_inverse=True)
    counts = np.bincount(groups)
    return {
        name: float((np.bincount(groups, weights=v) / counts).mean()) for name, v in values.items()
    }

