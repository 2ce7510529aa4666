"""Multiple-testing corrections: Holm-Bonferroni and Benjamini-Hochberg adjusted p-values."""

from __future__ import annotations

import numpy as np

from evaluation.errors import ConfigError


def holm(p_values) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (controls the family-wise error rate).

    With the ``m`` p-values sorted ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j
    + 1) p_(j))``; rejecting where the adjusted value is at most ``alpha`` keeps the chance
    of any false rejection at most ``alpha`` (Holm 1979). NaN p-values are not part of the
    family and stay NaN.

    Parameters
    ----------
    p_values : array-like of float
        The p-values, each in [0, 1] or NaN.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order.
    """
    return _adjust(p_values, "holm", lambda q, m: np.maximum.accumulate((m - np.arange(m)) * q))


def benjamini_hochberg(p_values) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (controls the false discovery rate).

    With the ``m`` p-values sorted ascending, ``p_(i)`` becomes ``min_{j >= i} min(1, m
    p_(j) / j)``; rejecting where the adjusted value is at most ``alpha`` keeps the expected
    share of false rejections among the rejections at most ``alpha`` for independent or
    positively dependent tests (Benjamini & Hochberg 1995). NaN p-values are not part of the
    family and stay NaN.

    Parameters
    ----------
    p_values : array-like of float
        The p-values, each in [0, 1] or NaN.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order.
    """
    return _adjust(p_values, "benjamini_hochberg",
                   lambda q, m: np.minimum.accumulate((q * m / np.arange(1, m + 1))[::-1])[::-1])


def _adjust(p_values, owner: str, step) -> np.ndarray:
    """Adjusted p-values: ``step(sorted p-values, m)`` on the non-NaN ones, capped at 1 and put
    back in the input's order; NaN stays NaN."""
    p, ok = _check(p_values, owner)
    out = np.full(p.shape, np.nan)
    q = p[ok]
    if len(q):
        order = np.argsort(q, kind="stable")
        adjusted = np.empty(len(q))
        adjusted[order] = np.minimum(step(q[order], len(q)), 1.0)
        out[ok] = adjusted
    return out


def _check(p_values, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """The p-values as a 1-d float array and the mask of the non-NaN ones."""
    try:
        p = np.asarray(p_values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{owner}: p_values must be numbers; got {p_values!r}.") from None
    if p.ndim != 1:
        raise ConfigError(f"{owner}: p_values must be one-dimensional; got shape {p.shape}.")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ConfigError(f"{owner}: p-values must lie in [0, 1]; got "
                          f"{p[ok][(p[ok] < 0) | (p[ok] > 1)].tolist()}.")
    return p, ok
