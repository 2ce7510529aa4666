"""Iterative k-core filter on user-track rows (design §4)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, DataError, show_values


class KCore(NamedTuple):
    """Result of the k-core kernel: surviving rows, rounds run, whether the k-core was reached."""

    alive: np.ndarray  # boolean, one per input row
    rounds: int
    converged: bool

    @property
    def keep(self) -> np.ndarray:
        """Ascending positions of the surviving rows."""
        return np.flatnonzero(self.alive)


def kcore_codes(
    user_codes: np.ndarray,
    item_codes: np.ndarray,
    k: int = 10,
    max_rounds: int = 10,
    *,
    n_users: int | None = None,
    n_items: int | None = None,
) -> KCore:
    """k-core over rows given as dense non-negative ``user_codes`` / ``item_codes``.

    Each round drops the items with fewer than ``k`` rows, then the users with fewer than ``k``
    rows (counted after the item step); the loop stops after a round that drops nothing or after
    ``max_rounds`` rounds. ``alive`` marks the surviving rows.
    ``converged`` says whether every surviving user and item has at least ``k`` rows (false
    only when ``max_rounds`` cut the loop short).
    """
    n = len(user_codes)
    u, t = user_codes, item_codes
    n_users = int(u.max()) + 1 if n_users is None and n else (n_users or 0)
    n_items = int(t.max()) + 1 if n_items is None and n else (n_items or 0)
    # Counts are computed once and then decremented by the rows each step removes: a full
    # bincount over scattered item codes costs far more than the small ones over removed rows.
    item_count = _count(t, n_items)
    user_count = _count(u, n_users)
    alive = np.ones(n, dtype=bool)
    rounds = 0
    changed = True
    while changed and rounds < max_rounds:
        rounds += 1
        changed = False
        for codes, count, other, other_count in ((t, item_count, u, user_count),
                                                 (u, user_count, t, item_count)):
            below = count < k
            drop = below[codes]
            drop &= alive
            if drop.any():
                changed = True
                alive ^= drop  # drop is a subset of alive
                # Dropped codes stay dropped (their count is zeroed); only the other side's
                # counts must follow the removed rows.
                count[below] = 0
                other_count -= _count(other[drop], len(other_count))
    # A loop cut short by max_rounds may leave users or items below k.
    converged = not changed or bool(
        ((item_count < k) & (item_count > 0)).sum() == 0
        and ((user_count < k) & (user_count > 0)).sum() == 0)
    return KCore(alive, rounds, converged)


def _count(codes: np.ndarray, size: int, chunk: int = 1 << 21) -> np.ndarray:
    """``np.bincount(codes, minlength=size)`` in chunks: bincount copies its input to int64,
    which for tens of millions of int32 codes is a large temporary."""
    if len(codes) <= chunk:
        return np.bincount(codes, minlength=size)
    out = np.zeros(size, dtype=np.int64)
    for lo in range(0, len(codes), chunk):
        out += np.bincount(codes[lo:lo + chunk], minlength=size)
    return out


def kcore_filter(
    events: pd.DataFrame,
    k: int = 10,
    max_rounds: int = 10,
    *,
    user_col: str = "user_id",
    item_col: str = "track_id",
) -> np.ndarray:
    """Boolean row mask of ``events`` that survive the iterative k-core filter.

    Rounds as in the 2022 challenge: drop tracks with fewer than ``k`` rows, then users with
    fewer than ``k`` rows, until a round drops nothing or ``max_rounds`` rounds have run.
    A mask (rather than a filtered frame) lets callers keep the original row order and index:
    ``events[kcore_filter(events)]``.
    """
    k = _check_positive_int("k", k)
    max_rounds = _check_positive_int("max_rounds", max_rounds)
    if not isinstance(events, pd.DataFrame):
        raise DataError(f"kcore_filter: expected a pandas DataFrame of events, got "
                        f"{type(events).__name__}")
    codes = []
    for col in (user_col, item_col):
        if col not in events.columns:
            raise DataError(f"kcore_filter: events have no column {col!r} (columns: "
                            f"{list(map(str, events.columns))}); pass user_col=/item_col=.")
        values = events[col]
        if values.hasnans:
            rows = np.flatnonzero(values.isna().to_numpy())
            raise DataError(f"kcore_filter: column {col!r} has missing values at rows "
                            f"{show_values(rows)}; drop or fill them first.")
        codes.append(dense_codes(values.to_numpy()))
    (u, n_users), (t, n_items) = codes
    return kcore_codes(u, t, k, max_rounds, n_users=n_users, n_items=n_items).alive


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes ``0..n-1`` for ``values`` and ``n``; compact non-negative ints are kept as is.

    Keeping compact ids avoids a hash pass over tens of millions of rows: ``np.bincount`` over
    ids up to a few times the row count is cheaper than factorising them.
    """
    values = np.asarray(values)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int32), 0
    if values.dtype.kind in "iu":
        lo, hi = int(values.min()), int(values.max())
        if lo >= 0 and hi < max(4 * len(values), 1 << 20) and hi < 2**31:
            return values.astype(np.int32, copy=False), hi + 1
    codes, uniques = pd.factorize(values)
    return codes.astype(np.int32, copy=False), len(uniques)


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"The {name!r} parameter must be an int in the range [1, inf). "
                          f"Got {value!r} instead.")
    return int(value)
