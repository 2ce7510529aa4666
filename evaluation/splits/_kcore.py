"""Iterative k-core filter on user-track rows: drop tracks, then users, with fewer than k rows."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_int
from evaluation.errors import DataError, show_values


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


def kcore_runs(
    item_codes: np.ndarray,
    run_offsets: np.ndarray,
    run_lens: np.ndarray,
    run_users: np.ndarray,
    k: int = 10,
    max_rounds: int = 10,
    *,
    n_users: int,
    n_items: int,
) -> tuple[KCore, np.ndarray]:
    """``kcore_codes`` for rows that come in runs of one user each; also the rows left per run.

    Run ``r`` is the rows ``[run_offsets[r], run_offsets[r] + run_lens[r])`` of ``item_codes``
    (the runs tile the rows in order, none empty) and belongs to user code ``run_users[r]``; a
    user may own several runs. Same rounds, result and ``converged`` flag as ``kcore_codes``,
    with less work: user counts follow the runs (no per-row user codes), a user step touches
    only the rows of the users it drops, and a step with no code newly below ``k`` is skipped.
    """
    n = len(item_codes)
    alive = np.ones(n, dtype=bool)
    run_alive = run_lens.astype(np.int64)
    if n == 0:
        return KCore(alive, 1, True), run_alive
    item_count = _count(item_codes, n_items)
    user_count = _run_count(run_users, run_alive, n_users)
    drop = None
    rounds = 0
    changed = True
    while changed and rounds < max_rounds:
        rounds += 1
        changed = False
        # Counts are exact for the codes still present and zero for the dropped ones, so the
        # codes to drop are those with 0 < count < k (each has rows left: the step drops some).
        below = item_count < k
        below &= item_count > 0
        if below.any():
            changed = True
            drop = take(below, item_codes, out=drop)
            drop &= alive
            alive ^= drop
            item_count[below] = 0
            lost = _run_sums(drop, run_offsets)
            run_alive -= lost
            user_count -= _run_count(run_users, lost, n_users)
        below = user_count < k
        below &= user_count > 0
        if below.any():
            changed = True
            gone = np.flatnonzero(below[run_users] & (run_alive > 0))
            rows = concat_ranges(run_offsets[gone], run_lens[gone], n)
            rows = rows[alive[rows]]
            alive[rows] = False
            run_alive[gone] = 0
            user_count[below] = 0
            item_count -= _count(item_codes[rows], n_items)
    # A loop cut short by max_rounds may leave users or items below k.
    converged = not changed or bool(
        ((item_count < k) & (item_count > 0)).sum() == 0
        and ((user_count < k) & (user_count > 0)).sum() == 0)
    return KCore(alive, rounds, converged), run_alive


def take(table: np.ndarray, indices: np.ndarray, out: np.ndarray | None = None,
         chunk: int = 1 << 18) -> np.ndarray:
    """``table[indices]`` in chunks (into ``out`` when given).

    NumPy converts a whole index array to intp before gathering; chunk by chunk that copy stays
    small (tens of millions of int32 indices would need twice their size again) and in cache.
    """
    if out is None:
        out = np.empty(len(indices), dtype=table.dtype)
    for lo in range(0, len(indices), chunk):
        np.take(table, indices[lo:lo + chunk], out=out[lo:lo + chunk])
    return out


def run_blocks(run_offsets: np.ndarray, n_rows: int,
               chunk: int = 1 << 20) -> list[tuple[int, int, int, int]]:
    """Consecutive runs grouped into blocks of about ``chunk`` rows (a longer run alone).

    ``run_offsets`` are the ascending starts of runs that tile ``n_rows`` rows. Each block is
    ``(first run, end run, first row, end row)``, ends excluded.
    """
    if not len(run_offsets):
        return []
    cuts = sorted_unique(np.searchsorted(run_offsets, np.arange(0, n_rows, chunk)))
    cuts = cuts[cuts < len(run_offsets)].tolist()  # a long last run spans several chunks
    ends = cuts[1:] + [len(run_offsets)]
    rows = run_offsets[cuts].tolist() + [n_rows]
    return [(lo, hi, int(rows[i]), int(rows[i + 1])) for i, (lo, hi) in enumerate(zip(cuts, ends))]


def _run_sums(mask: np.ndarray, run_offsets: np.ndarray) -> np.ndarray:
    """True values of ``mask`` per run (runs start at ``run_offsets`` and tile ``mask``).

    ``reduceat`` casts its whole input to the sum's dtype first: a block of runs at a time
    keeps that copy small.
    """
    flags = mask.view(np.uint8)
    out = np.empty(len(run_offsets), dtype=np.int64)
    for lo, hi, first, last in run_blocks(run_offsets, len(mask)):
        out[lo:hi] = np.add.reduceat(flags[first:last], run_offsets[lo:hi] - first,
                                     dtype=np.int64)
    return out


def _run_count(run_users: np.ndarray, per_run: np.ndarray, n_users: int) -> np.ndarray:
    """Per-user sums of the per-run counts ``per_run`` (exact: counts stay far below 2**53)."""
    return np.bincount(run_users, weights=per_run, minlength=n_users).astype(np.int64)


def concat_ranges(starts: np.ndarray, lens: np.ndarray, n_rows: int) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lens)])`` without the loop.

    A running sum of steps (1 inside a range, the jump at each range start) built in place:
    no temporary as large as the result.
    """
    dtype = np.int32 if n_rows < 2**31 else np.int64
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    out = np.ones(int(lens.sum()), dtype=dtype)
    if len(out):
        out[0] = starts[0]
        out[(np.cumsum(lens) - lens)[1:]] = starts[1:] - (starts[:-1] + lens[:-1] - 1)
        np.cumsum(out, out=out)
    return out


def _count(codes: np.ndarray, size: int, chunk: int = 1 << 20) -> np.ndarray:
    """``np.bincount(codes, minlength=size)`` in chunks: bincount copies its input to int64,
    which for tens of millions of int32 codes is a large temporary."""
    out = np.bincount(codes[:chunk], minlength=size)
    for lo in range(chunk, len(codes), chunk):
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

    Parameters
    ----------
    events : pandas.DataFrame
        One row per user-item interaction.
    k : int
        Minimum rows per track and per user (>= 1).
    max_rounds : int
        Most rounds (>= 1).
    user_col, item_col : str
        The id columns.

    Returns
    -------
    numpy.ndarray
        Boolean mask, one entry per row of ``events``.

    Raises
    ------
    ConfigError
        On a bad ``k`` or ``max_rounds``.
    DataError
        When ``events`` is not a DataFrame with the id columns.
    """
    k = check_int("k", k, minimum=1, owner="kcore_filter")
    max_rounds = check_int("max_rounds", max_rounds, minimum=1, owner="kcore_filter")
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
