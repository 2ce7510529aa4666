"""Ranking metrics for users with any number of relevant items (inputs: see ``_relevance``).

Conventions (all metrics):

- A user (row) with no relevant item scores 0 on every metric and still counts in the per-user
  mean; pass only the users you want to evaluate. Empty sets give 0: precision of an empty list,
  recall with no relevant item, F1 when precision + recall = 0.
- Lists shorter than ``k`` are treated as padded with ``-1``: precision@k always divides by ``k``.
- A repeated item counts at its first position only; ``-1`` never hits.
- The lists are already ranked, so there are no score ties inside a list. AUC ties every item that
  is not listed (they share the bottom rank; a tie counts 1/2).

Aggregations (see ``_aggregate``): ``"user"`` everywhere; ``"global"`` pools test points
(precision: all hits over all ``n_users * k`` slots; recall and hit rate: share of all test points
found in their user's top-k; MRR: mean reciprocal rank of every test point; AUC: mean over test
points of the share of negatives ranked below it); ``"item"`` averages the per-test-point value
over each item's test points, then over items (recall, hit rate, MRR, AUC). Precision, F1, NDCG
and MAP are list-level quantities with no per-point value: ``"item"`` raises ``ConfigError``, and
so does ``"global"`` for NDCG and MAP.
"""

from __future__ import annotations

import numpy as np

from evaluation._util.validation import check_choice, check_k
from evaluation.errors import ConfigError, show_values
from evaluation.metrics._aggregate import check_aggregate, group_mean
from evaluation.metrics._hits import hits, reciprocal_ranks
from evaluation.metrics._relevance import Judged, judge

GAINS = ("linear", "exp", "binary")


def _judged(recs, relevance, k: int) -> tuple[Judged, int]:
    k = check_k(k)
    if isinstance(recs, Judged):
        if relevance is not None:
            raise ConfigError("Pass either a Judged object or (recs, relevance), not both.")
        if k > recs.depth:
            raise ConfigError(f"k={k} is deeper than the {recs.depth} judged positions.")
        return recs, k
    return judge(recs, relevance, k), k


def _point_values(j: Judged, values: np.ndarray, aggregate: str) -> float:
    if aggregate == "global":
        return float(values.mean()) if len(values) else 0.0
    if aggregate == "item":
        return group_mean(values, j.point_item, j.n_items)
    raise AssertionError(aggregate)  # unreachable: callers check aggregate first


def _user_mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else 0.0


def _hits(j: Judged, k: int) -> np.ndarray:
    return j.hit[:, :k].sum(axis=1)


def _first_ranks(j: Judged, k: int) -> np.ndarray:
    """Each user's rank of their first relevant item in the top ``k``, 0 when none."""
    hit = j.hit[:, :k]
    return np.where(hit.any(axis=1), np.argmax(hit, axis=1) + 1, 0)


def precision_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Share of the top-``k`` slots holding a relevant item (denominator ``k``).

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user", "global"), f"precision@{k}")
    n_hits = _hits(j, k)
    if aggregate == "global":
        return float(n_hits.sum() / (k * j.n_users)) if j.n_users else 0.0
    return _user_mean(n_hits / k)


def recall_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Share of the relevant items found in the top ``k`` (0 for a user with none).

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user", "item", "global"), f"recall@{k}")
    if aggregate != "user":
        return _point_values(j, hits(j.point_rank, k).astype(float), aggregate)
    n_hits = _hits(j, k)
    recall = np.divide(n_hits, j.n_relevant, out=np.zeros(j.n_users), where=j.n_relevant > 0)
    return _user_mean(recall)


def f1_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Harmonic mean of precision@k and recall@k (0 when both are 0).

    Per user: the mean over users of each user's F1. Global: F1 of global precision and recall.

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user", "global"), f"f1@{k}")
    if aggregate == "global":
        p = precision_at_k(j, None, k, aggregate="global")
        r = recall_at_k(j, None, k, aggregate="global")
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    n_hits = _hits(j, k)
    precision = n_hits / k
    recall = np.divide(n_hits, j.n_relevant, out=np.zeros(j.n_users), where=j.n_relevant > 0)
    total = precision + recall
    return _user_mean(np.divide(2 * precision * recall, total, out=np.zeros(j.n_users),
                                where=total > 0))


def hit_rate_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Per user: share of users with at least one relevant item in the top ``k``.

    Global / per item: share of test points found in their user's top ``k`` (equal to the per-user
    value when every user has exactly one test point).

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user", "item", "global"), f"hit_rate@{k}")
    if aggregate != "user":
        return _point_values(j, hits(j.point_rank, k).astype(float), aggregate)
    return _user_mean(hits(_first_ranks(j, k)).astype(float))


def mrr_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Per user: mean of ``1/rank`` of the first relevant item in the top ``k`` (0 when none).

    Global / per item: mean of ``1/rank`` of each test point (0 when not in its user's top ``k``).

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user", "item", "global"), f"mrr@{k}")
    if aggregate != "user":
        return _point_values(j, reciprocal_ranks(j.point_rank, k), aggregate)
    return _user_mean(reciprocal_ranks(_first_ranks(j, k)))


def _transform_gain(gain: np.ndarray, mode: str) -> np.ndarray:
    """The gains as NDCG weighs them under ``mode`` (linear, 2**gain - 1, or 0/1)."""
    check_choice("gain", mode, GAINS, owner="ndcg")
    if mode == "exp":
        return np.exp2(gain) - 1.0
    if mode == "binary":
        return (gain > 0).astype(float)
    return gain


def ndcg_at_k(recs, relevance, k: int, *, gain: str = "linear", aggregate: str = "user") -> float:
    """Normalised discounted cumulative gain at ``k``, averaged over users.

    ``DCG = sum_{r=1..k} g(rel_r) / log2(r + 1)``, with ``g(x) = x`` (``gain="linear"``, the
    default, as trec_eval and scikit-learn), ``2**x - 1`` (``"exp"``) or ``1`` for any relevant item
    (``"binary"``). ``IDCG`` is the DCG of the user's relevant items sorted by gain (all of them,
    not only those recommended), cut at ``k``. A user with no relevant item scores 0.

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    gain : {"linear", "exp", "binary"}
        The gain function ``g``.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user",), f"ndcg@{k}")
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = _transform_gain(j.gain[:, :k], gain) @ discount
    # Ideal list: each user's gains sorted descending; rank within user from the sorted order.
    point_gain = _transform_gain(j.point_gain, gain)
    order = np.lexsort((-point_gain, j.point_user))
    starts = np.concatenate([[0], np.cumsum(j.n_relevant)[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, j.n_relevant)
    top = rank < k
    idcg = np.bincount(
        j.point_user[order][top],
        weights=point_gain[order][top] * discount[rank[top]],
        minlength=j.n_users,
    )
    return _user_mean(np.divide(dcg, idcg, out=np.zeros(j.n_users), where=idcg > 0))


def map_at_k(recs, relevance, k: int, *, aggregate: str = "user") -> float:
    """Mean average precision at ``k``.

    ``AP@k = sum_{r<=k, item r relevant} precision@r / min(k, n_relevant)``; 0 for a user with no
    relevant item. The ``min(k, n_relevant)`` denominator makes a perfect list score 1 even when the
    user has more than ``k`` relevant items.

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int
        Cutoff: the first ``k`` slots of each list count.
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    j, k = _judged(recs, relevance, k)
    check_aggregate(aggregate, ("user",), f"map@{k}")
    hit = j.hit[:, :k]
    precision_at_r = np.cumsum(hit, axis=1) / np.arange(1, k + 1)
    total = (precision_at_r * hit).sum(axis=1)
    denominator = np.minimum(j.n_relevant, k)
    return _user_mean(np.divide(total, denominator, out=np.zeros(j.n_users), where=denominator > 0))


def auc(recs, relevance, k: int | None = None, *, n_candidates=None, aggregate: str = "user"):
    """Area under the ROC curve of each user's ranking, averaged over users.

    The candidates of a user are ``n_candidates`` items (default: every catalog item, i.e. the
    columns of ``relevance``; pass an int or one count per user for a candidate set, which must
    contain every relevant and every listed item). Negatives are the candidates that are not
    relevant. The listed items (top ``k``, default the whole list) rank in list order, above every
    unlisted candidate; unlisted candidates tie with each other, and a tie counts 1/2. Per test
    point: the share of negatives ranked below it plus half the share tied with it; per user: the
    mean over the user's test points (the Mann-Whitney AUC). A user with no relevant item or no
    negative scores 0.

    Parameters
    ----------
    recs : array-like of int or Judged
        ``(n_users, depth)`` item indices, best first, ``-1`` padding; or the result of
        :func:`judge` (then ``relevance`` is None).
    relevance : scipy.sparse matrix
        ``(n_users, n_items)`` gains (see :func:`relevance_matrix`).
    k : int, optional
        Cutoff of the listed items (default: the whole list).
    n_candidates : int or array-like of int, optional
        Candidates per user (default: every catalog item).
    aggregate : {"user", "global", "item"}
        How per-user or per-test-point values are averaged (see the module documentation).

    Returns
    -------
    float
        The metric, aggregated as asked.

    Raises
    ------
    ConfigError
        On a bad ``k``, malformed inputs or an aggregation the metric does not define.
    """
    if isinstance(recs, Judged):
        j, k = _judged(recs, relevance, recs.depth if k is None else k)
    else:
        j = judge(recs, relevance, k)
        k = j.depth
    check_aggregate(aggregate, ("user", "item", "global"), "auc" if k is None else f"auc@{k}")
    if n_candidates is None:
        candidates = np.full(j.n_users, j.n_items, dtype=np.int64)
    else:
        candidates = np.broadcast_to(np.asarray(n_candidates, dtype=np.int64), (j.n_users,))
    hit = j.hit[:, :k]
    negative_slot = j.listed[:, :k] & ~hit
    neg_listed = negative_slot.sum(axis=1)
    negatives = candidates - j.n_relevant
    too_small = negatives < neg_listed
    if too_small.any():
        raise ConfigError(
            "'n_candidates' must count every relevant and every listed item of each user; "
            f"it is too small for users (rows) {show_values(np.flatnonzero(too_small))}."
        )
    # Negatives listed strictly above each slot.
    neg_above_slot = np.cumsum(negative_slot, axis=1) - negative_slot
    user, rank = j.point_user, j.point_rank
    in_list = (rank > 0) & (rank <= k)
    neg = negatives[user].astype(float)
    above = np.where(in_list, neg_above_slot[user, np.clip(rank - 1, 0, k - 1)], neg_listed[user])
    tied = np.where(in_list, 0.0, neg - neg_listed[user])
    point_auc = np.divide(neg - above - tied / 2, neg, out=np.zeros(len(user)), where=neg > 0)
    if aggregate != "user":
        return _point_values(j, point_auc, aggregate)
    sums = np.bincount(user, weights=point_auc, minlength=j.n_users)
    per_user = np.divide(
        sums, j.n_relevant, out=np.zeros(j.n_users), where=(j.n_relevant > 0) & (negatives > 0)
    )
    return _user_mean(per_user)
