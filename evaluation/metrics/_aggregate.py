"""The aggregation switch of the metric library: per user, per item, or over all test points.

- ``"user"``: compute the metric for each user (a row of the recommendation matrix), then take the
  mean over users.
- ``"item"``: compute the metric for each test item (over the test points of that item), then take
  the mean over the items that have at least one test point.
- ``"global"``: pool all test points (relevant user-item pairs, or rated pairs) and compute the
  metric once over the pool (a micro average).

Each metric declares which of the three make sense for it; any other combination raises
``ConfigError``.
"""

from __future__ import annotations

import numpy as np

from evaluation._util.validation import check_choice
from evaluation.errors import ConfigError

AGGREGATIONS = ("user", "item", "global")


def check_aggregate(aggregate: str, allowed: tuple[str, ...], metric: str) -> str:
    """Return ``aggregate`` if ``metric`` supports it, else raise ``ConfigError``."""
    check_choice("aggregate", aggregate, AGGREGATIONS, owner=metric)
    if aggregate not in allowed:
        raise ConfigError(
            f"{metric} cannot be aggregated {aggregate!r}: it is defined for {list(allowed)} "
            f"only. Pass aggregate={allowed[0]!r}."
        )
    return aggregate


def group_mean(values: np.ndarray, groups: np.ndarray, n_groups: int | None = None) -> float:
    """Mean over the groups present of the per-group mean of ``values`` (0.0 when empty)."""
    if len(values) == 0:
        return 0.0
    groups, n_groups = group_codes(groups) if n_groups is None else (groups, n_groups)
    counts = np.bincount(groups, minlength=n_groups)
    sums = np.bincount(groups, weights=values, minlength=n_groups)
    present = counts > 0
    return float(np.mean(sums[present] / counts[present]))


def group_codes(keys) -> tuple[np.ndarray, int]:
    """Integer codes ``0..n-1`` for ``keys`` (direct for small non-negative ints, else sorted)."""
    keys = np.asarray(keys)
    if keys.dtype.kind in "iu" and len(keys) and keys.min() >= 0 and keys.max() < 4 * len(keys):
        present = np.zeros(int(keys.max()) + 1, dtype=bool)
        present[keys] = True
        code = np.cumsum(present) - 1
        return code[keys], int(present.sum())
    _, codes = np.unique(keys, return_inverse=True)
    codes = codes.ravel()
    return codes, int(codes.max(initial=-1)) + 1
