"""Catalog-level metrics of recommendation lists: coverage and popularity bias.

``recs`` is the ``(n_users, k)`` item-index array of ``_relevance`` (``-1`` padding, repeats count
once).
"""

from __future__ import annotations

import numpy as np

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_int, check_k
from evaluation.errors import ConfigError, show_values
from evaluation.metrics._aggregate import check_aggregate
from evaluation.metrics._relevance import check_recs, first_occurrence


def _top(recs, k: int | None) -> np.ndarray:
    recs = check_recs(recs)
    if k is not None:
        recs = recs[:, : check_k(k)]
    return recs


def catalog_coverage(recs, n_items: int, k: int | None = None, *, aggregate: str = "global"):
    """Share of the ``n_items`` catalog items that appear in at least one user's top ``k``.

    Only ``aggregate="global"`` makes sense (coverage is a property of all lists together).

    Parameters
    ----------
    recs : array-like of int
        ``(n_users, depth)`` item indices, ``-1`` padding.
    n_items : int
        Catalog size (>= 1).
    k : int, optional
        Cutoff (default: the whole list).
    aggregate : {"global"}
        The only aggregation defined.

    Returns
    -------
    float
        The share of catalog items recommended at least once.

    Raises
    ------
    ConfigError
        On a bad ``n_items`` or ``k``, or item indices outside the catalog.
    """
    check_aggregate(aggregate, ("global",), "coverage")
    recs = _top(recs, k)
    n_items = check_int("n_items", n_items, minimum=1, owner="catalog_coverage")
    listed = recs[recs >= 0]
    if len(listed) and listed.max() >= n_items:
        raise ConfigError(
            f"'recs' holds item indices >= n_items={n_items}: "
            f"{show_values(sorted_unique(listed[listed >= n_items]))}."
        )
    seen = np.zeros(n_items, dtype=bool)
    seen[listed] = True
    return int(seen.sum()) / n_items


def item_popularity(items, n_items: int, *, normalize: bool = True) -> np.ndarray:
    """Popularity of each item index from its training interactions (``items``, one per row).

    With ``normalize`` the counts are divided by the number of interactions, so they sum to 1.

    Parameters
    ----------
    items : array-like of int
        Item index of each training interaction.
    n_items : int
        Catalog size.
    normalize : bool, default True
        Divide by the number of interactions.

    Returns
    -------
    numpy.ndarray
        float64 popularity of each of the ``n_items`` items.
    """
    items = np.asarray(items, dtype=np.int64)
    if len(items) and (items.min() < 0 or items.max() >= n_items):
        raise ConfigError(f"'items' must be indices in [0, {n_items}); got out-of-range values.")
    counts = np.bincount(items, minlength=n_items).astype(np.float64)
    return counts / max(len(items), 1) if normalize else counts


def popularity_bias(recs, popularity, k: int | None = None, *, aggregate: str = "user") -> float:
    """Mean popularity of the recommended items (ARP when ``popularity`` is normalised).

    ``popularity[i]`` is item ``i``'s popularity (see ``item_popularity``). Per user: the mean over
    users of the mean popularity of their top ``k`` (a user with an empty list scores 0); global:
    the mean over every recommended slot. ``"item"`` raises ``ConfigError``.

    Parameters
    ----------
    recs : array-like of int
        ``(n_users, depth)`` item indices, ``-1`` padding.
    popularity : array-like of float
        Popularity of each item index.
    k : int, optional
        Cutoff (default: the whole list).
    aggregate : {"user", "global"}
        Mean over users of each user's mean, or over every recommended slot.

    Returns
    -------
    float
        The average popularity.
    """
    check_aggregate(aggregate, ("user", "global"), "popularity_bias")
    recs = _top(recs, k)
    popularity = np.asarray(popularity, dtype=np.float64)
    if popularity.ndim != 1:
        raise ConfigError(
            f"'popularity' must be a 1-D array indexed by item; got shape {popularity.shape}."
        )
    if recs.size and recs.max() >= len(popularity):
        raise ConfigError(
            f"'recs' holds item indices beyond the {len(popularity)} entries of 'popularity': "
            f"{show_values(sorted_unique(recs[recs >= len(popularity)]))}."
        )
    valid = first_occurrence(recs)
    values = np.where(valid, popularity[np.where(valid, recs, 0)], 0.0)
    counts = valid.sum(axis=1)
    if aggregate == "global":
        return float(values.sum() / counts.sum()) if counts.sum() else 0.0
    per_user = np.divide(values.sum(axis=1), counts, out=np.zeros(len(recs)), where=counts > 0)
    return float(per_user.mean()) if len(per_user) else 0.0
