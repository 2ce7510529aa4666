"""HIT_RATE and MRR from ranks: the one definition every hit rate and MRR of the harness uses.

A rank is the 1-based position of a relevant item in a list, 0 when it is not there. The
challenge's tests (one target per user) and the library's ranking metrics (per user: the first
relevant item; globally: every relevant item) read their ranks here.
"""

from __future__ import annotations

import numpy as np


def hits(ranks, k: int | None = None) -> np.ndarray:
    """Whether each rank is a hit: in the list (``> 0``) and, with ``k``, within the top ``k``.

    Parameters
    ----------
    ranks : array-like of int
        1-based ranks, 0 for a miss.
    k : int, optional
        Cutoff.

    Returns
    -------
    numpy.ndarray of bool
    """
    ranks = np.asarray(ranks)
    hit = ranks > 0
    return hit if k is None else hit & (ranks <= k)


def reciprocal_ranks(ranks, k: int | None = None) -> np.ndarray:
    """``1 / rank`` of each hit (:func:`hits`), 0.0 for a miss.

    Parameters
    ----------
    ranks : array-like of int
        1-based ranks, 0 for a miss.
    k : int, optional
        Cutoff.

    Returns
    -------
    numpy.ndarray of float64
    """
    ranks = np.asarray(ranks)
    return np.divide(1.0, ranks, out=np.zeros(ranks.shape), where=hits(ranks, k))


def hit_rate_from_ranks(ranks, k: int | None = None) -> float:
    """HIT_RATE: the share of ranks that are hits.

    Parameters
    ----------
    ranks : array-like of int
        1-based ranks, 0 for a miss (e.g. ``evaluation.challenge.hit_ranks``).
    k : int, optional
        Cutoff.

    Returns
    -------
    float
        0.0 for no ranks.
    """
    hit = hits(ranks, k)
    return float(hit.mean()) if len(hit) else 0.0


def mrr_from_ranks(ranks, k: int | None = None) -> float:
    """MRR: the mean reciprocal rank, 0 for a miss.

    Parameters
    ----------
    ranks : array-like of int
        1-based ranks, 0 for a miss (e.g. ``evaluation.challenge.hit_ranks``).
    k : int, optional
        Cutoff.

    Returns
    -------
    float
        0.0 for no ranks.
    """
    rr = reciprocal_ranks(ranks, k)
    return float(rr.mean()) if len(rr) else 0.0
