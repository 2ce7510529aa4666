"""Corrected sampled metrics: estimates of the full-ranking HR@k and NDCG@k from sampled ranks.

A test target of full rank ``r`` among the ``n`` candidates of a user (the target and the
``n - 1`` items the user never interacted with; ``r - 1`` of them score at least as high as the
target, the protocol's pessimistic ties) gets the sampled rank ``r_s = 1 + s``, where ``s``
counts the sampled negatives among those ``r - 1``. The sampler draws ``m`` distinct negatives
uniformly, so ``s`` is hypergeometric: ``P(s | r) = C(r-1, s) C(n-r, m-s) / C(n-1, m)``.

Two corrections (Krichene & Rendle, "On Sampled Metrics for Item Recommendation", KDD 2020):

* ``"rank"``: the rank estimate ``r_hat = 1 + (r_s - 1)(n - 1)/m``, unbiased for the full rank
  (``E[s | r] = m (r - 1)/(n - 1)``), put into the metric: ``HR@k = [r_hat <= k]``,
  ``NDCG@k = [r_hat <= k] / log2(1 + r_hat)``.
* ``"bv"``: the bias-variance corrected metric. For each sampled rank it uses the value
  ``x[r_s]`` that minimises, over full ranks ``r = 1..n`` weighted uniformly,
  ``sum_r (E[x | r] - M(r))^2 + gamma * Var[x | r]``; the minimiser is
  ``x = ((1 - gamma) A'A + gamma diag(c))^-1 A'b`` with ``A[r, s] = P(s | r)``,
  ``b[r] = M(r)`` and ``c = column sums of A``. ``gamma = 0`` is the minimal-bias (least
  squares) estimator, ``gamma = 1`` the posterior mean of ``M(r)`` under a uniform prior.

Both assume uniform sampling of the negatives; the tables depend on ``n``, so each distinct
number of candidates among the test points gets its own table (cost ``O(n m^2)`` each).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

CORRECTIONS = ("none", "rank", "bv")
DEFAULT_GAMMA = 0.1


def hypergeometric_matrix(n: int, m: int) -> np.ndarray:
    """``A[r - 1, s] = P(s sampled negatives rank above the target | full rank r)``.

    Parameters
    ----------
    n : int
        Candidates in the full ranking (the target and ``n - 1`` negatives).
    m : int
        Negatives sampled without replacement, ``1 <= m <= n - 1``.

    Returns
    -------
    numpy.ndarray
        An ``(n, m + 1)`` array whose rows sum to 1.
    """
    above = np.arange(n, dtype=np.float64)[:, None]  # r - 1 negatives above the target
    below = (n - 1) - above
    s = np.arange(m + 1, dtype=np.float64)[None, :]
    ok = (s <= above) & (m - s <= below)
    with np.errstate(invalid="ignore"):
        log_p = (_log_choose(above, s) + _log_choose(below, m - s)
                 - _log_choose(np.float64(n - 1), np.float64(m)))
    return np.where(ok, np.exp(np.where(ok, log_p, 0.0)), 0.0)


def _log_choose(a, b):
    """``log C(a, b)`` for ``0 <= b <= a`` (undefined elsewhere; masked by the caller)."""
    from scipy.special import gammaln  # here: importing the protocols needs no SciPy

    return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def full_metrics(ranks: np.ndarray, hit_ks, ndcg_ks) -> dict[str, np.ndarray]:
    """``{hit_rate@k, ndcg@k: per-rank value}`` of (possibly fractional) 1-based ranks.

    The metrics of the sampled ranks themselves, of a full ranking, or of a rank estimate.
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    out = {}
    for k in hit_ks:
        out[f"hit_rate@{k}"] = (ranks <= k).astype(np.float64)
    for k in ndcg_ks:
        out[f"ndcg@{k}"] = np.where(ranks <= k, 1.0 / np.log2(ranks + 1.0), 0.0)
    return out


def bv_table(n: int, m: int, metric: np.ndarray, gamma: float) -> np.ndarray:
    """The bias-variance corrected value of each sampled rank (see the module docstring).

    Parameters
    ----------
    n, m : int
        Candidates of the full ranking, sampled negatives.
    metric : numpy.ndarray
        ``M(r)`` for ``r = 1..n``; shape ``(n,)`` or ``(n, K)`` for ``K`` metrics at once.
    gamma : float
        Weight of the variance, in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        ``x[r_s - 1]`` for ``r_s = 1..m + 1``, shaped like ``metric`` without its first axis
        (plus a leading ``m + 1`` axis).
    """
    a = hypergeometric_matrix(n, m)
    if gamma == 0.0:
        # A'A can be singular to working precision: the least-squares solution of A x = b
        return np.linalg.lstsq(a, metric, rcond=None)[0]
    lhs = (1.0 - gamma) * (a.T @ a) + gamma * np.diag(a.sum(axis=0))
    return np.linalg.solve(lhs, a.T @ metric)


@lru_cache(maxsize=4096)
def _bv_tables(n: int, m: int, hit_ks: tuple, ndcg_ks: tuple, gamma: float) -> np.ndarray:
    """The ``bv`` table of every metric, one column each (cached: the same data and settings
    give the same ``n`` again, e.g. one model after another on one split)."""
    metric = full_metrics(np.arange(1, n + 1), hit_ks, ndcg_ks)
    table = bv_table(n, m, np.column_stack(list(metric.values())), gamma)
    table.setflags(write=False)
    return table


def corrected_values(sampled_ranks: np.ndarray, n_candidates: np.ndarray, m: int, hit_ks,
                     ndcg_ks, correction: str, gamma: float) -> dict[str, np.ndarray]:
    """``{metric: per-point estimate of the full-ranking metric}`` from the sampled ranks.

    Parameters
    ----------
    sampled_ranks : numpy.ndarray
        The 1-based rank of each target among its ``1 + m`` candidates.
    n_candidates : numpy.ndarray
        ``n`` of each test point: 1 + the items its user never interacted with.
    m : int
        Sampled negatives per point.
    hit_ks, ndcg_ks : sequence of int
        The cutoffs.
    correction : {"rank", "bv"}
        The estimator (see the module docstring).
    gamma : float
        The variance weight of ``"bv"``.
    """
    sampled_ranks = np.asarray(sampled_ranks, dtype=np.int64)
    n_candidates = np.asarray(n_candidates, dtype=np.int64)
    if correction == "rank":
        estimate = 1.0 + (sampled_ranks - 1) * (n_candidates - 1) / m
        return full_metrics(estimate, hit_ks, ndcg_ks)
    hit_ks, ndcg_ks = tuple(int(k) for k in hit_ks), tuple(int(k) for k in ndcg_ks)
    names = list(full_metrics(np.ones(1), hit_ks, ndcg_ks))
    out = {name: np.empty(len(sampled_ranks)) for name in names}
    # one table per distinct n, shared by every point with that many candidates
    sizes, which = np.unique(n_candidates, return_inverse=True)
    order = np.argsort(which, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=len(sizes)))])
    for j, n in enumerate(sizes):
        table = _bv_tables(int(n), int(m), hit_ks, ndcg_ks, float(gamma))
        rows = order[bounds[j]:bounds[j + 1]]
        for col, name in enumerate(names):
            out[name][rows] = table[sampled_ranks[rows] - 1, col]
    return out
