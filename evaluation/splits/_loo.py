"""Bootstrapped leave-one-out folds and last-interaction leave-one-out.

Fold ``f`` of the 2022 challenge, in pandas::

    users = df_events[["user_id"]].drop_duplicates()           # first-appearance order
    fold_users = users.sample(frac=frac, random_state=seed + f)
    fold = df_events[df_events["user_id"].isin(fold_users["user_id"])]
    fold = k_core(fold, k)                                       # tracks, then users; <= 10 rounds
    test = fold.groupby("user_id").sample(n=1, random_state=seed)
    train = fold.drop(test.index)

``sampler="pandas"`` reproduces those folds row for row without pandas' per-group loop:

* ``DataFrame.sample(frac=frac)`` is ``RandomState(s).choice(n, round(frac * n),
  replace=False)``, i.e. ``RandomState(s).permutation(n)[:size]``.
* ``groupby(...).sample(n=1)`` visits the users in sorted id order and draws
  ``permutation(m)[:1]`` for each (``m`` = the user's rows, in row order): a Fisher-Yates
  shuffle of ``arange(m)`` with one bounded draw ``j_i`` in ``[0, i]`` for ``i = m-1 .. 1``.
  ``RandomState.randint(0, highs, dtype=uint32)`` with the array of all those bounds replays
  the same masked-rejection draws from the same stream, one call per chunk of users. The
  element that ends at position 0 is then the end of the chain ``0 -> L(0) -> L(L(0)) ...``
  where ``L(p)`` is the smallest step ``i > p`` with ``j_i == p``; the chains of all users
  are followed together, one step of depth at a time.

``sampler="generator"`` is a fully vectorised alternative on ``numpy.random.Generator``
(seeded with ``[seed, f]``): the users of a fold are the ``size`` users with the smallest of
one uniform draw each, and each user's target is ``floor(v * m)`` for a second uniform ``v``.
Its folds are as valid (uniform users, uniform targets) but different from the 2022 ones.

``split="last_one"`` keeps the fold's users and k-core but holds out one event per user, the
latest: the largest ``timestamp``, ties broken by the largest ``track_id``, then by the later
row. The 2023 edition held out *every* event at a user's latest timestamp (see
``leave_last_out``); folds hold one target per user, so that split is not a fold option.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_choice, check_fraction, check_int
from evaluation.errors import ConfigError, DataError, show_values
from evaluation.splits._kcore import (
    concat_ranges,
    dense_codes,
    kcore_filter,
    kcore_runs,
    run_blocks,
    take,
)
from evaluation.splits._split import Split, check_events, time_values

SAMPLERS = ("pandas", "generator")
SPLITS = ("bootstrap", "last_one")
DEFAULT_SEED = 42


@dataclass(frozen=True)
class Fold:
    """One fold as row positions into the events table it was cut from.

    ``train_rows`` ascend (the events' order); ``test_rows`` hold one row per test user,
    ordered by user id.
    """

    index: int
    train_rows: np.ndarray
    test_rows: np.ndarray
    sampled_users: int
    kcore_rounds: int
    kcore_converged: bool

    @property
    def n_test_users(self) -> int:
        return len(self.test_rows)

    def stats(self) -> dict[str, Any]:
        return {
            "fold": self.index,
            "sampled_users": self.sampled_users,
            "test_users": self.n_test_users,
            "train_rows": len(self.train_rows),
            "kcore_rounds": self.kcore_rounds,
            "kcore_converged": self.kcore_converged,
        }


@dataclass(frozen=True)
class FoldParams:
    """Everything that defines the folds of a dataset (besides its content)."""

    num_folds: int = 4
    seed: int = DEFAULT_SEED
    frac: float = 0.25
    k_core: int = 10
    max_rounds: int = 10
    sampler: str = "pandas"
    split: str = "bootstrap"

    def __post_init__(self) -> None:
        for name in ("num_folds", "k_core", "max_rounds"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), minimum=1))
        # fold i uses seed + i, and every fold's seed must stay a valid NumPy seed
        object.__setattr__(self, "seed", check_int("seed", self.seed, minimum=0,
                                                   maximum=2**32 - self.num_folds))
        object.__setattr__(self, "frac", check_fraction("frac", self.frac))
        check_choice("sampler", self.sampler, SAMPLERS)
        if self.split == "last":
            raise ConfigError(
                "The 'split' parameter 'last' is not a fold split: the 2023 edition put every "
                "event at a user's latest timestamp into test (several targets per user), while "
                "folds and the leaderboard tests score one target per user. Use "
                "split='last_one' (each user's latest event, ties to the largest track_id) or "
                "evaluation.splits.leave_last_out(events) for the exact 2023 split.")
        check_choice("split", self.split, SPLITS)

    def as_dict(self) -> dict[str, Any]:
        return {"protocol": "leave_one_out", **{f: getattr(self, f) for f in (
            "split", "sampler", "num_folds", "seed", "frac", "k_core", "max_rounds")}}


class EventIndex:
    """Per-dataset precomputation shared by all folds (built once, O(rows)).

    Users get dense codes in sorted-id order (pandas' groupby order); ``first_seen`` lists the
    codes in order of first appearance (the order ``drop_duplicates`` keeps). Rows are
    described as runs of consecutive rows of one user, so that a fold's rows are gathered run
    by run, already in the events' order; data grouped by user has one run per user.
    """

    def __init__(self, events: pd.DataFrame, *, need_time: bool = False) -> None:
        cols = ["user_id", "track_id"] + (["timestamp"] if need_time else [])
        for col in cols:
            if col not in events.columns:
                raise DataError(f"events: missing column {col!r} needed to cut folds (columns: "
                                f"{list(map(str, events.columns))}).")
            values = events[col]
            # NumPy integers cannot be missing: skip a pass over tens of millions of rows.
            if not (isinstance(values.dtype, np.dtype) and values.dtype.kind in "iu") \
                    and values.hasnans:
                rows = np.flatnonzero(values.isna().to_numpy())
                raise DataError(f"events: column {col!r} has missing values at rows "
                                f"{show_values(rows)}; drop or fill them first.")
        uid = events["user_id"].to_numpy()
        self.n_rows = n = len(uid)
        if n == 0:
            raise DataError("events: the table is empty; folds need at least one event.")
        boundary = np.flatnonzero(uid[1:] != uid[:-1])
        run_starts = np.empty(len(boundary) + 1, dtype=np.int64)
        run_starts[0] = 0
        run_starts[1:] = boundary + 1
        fa_codes, fa_users = pd.factorize(uid[run_starts])
        fa_users = np.asarray(fa_users)
        by_id = np.argsort(fa_users, kind="stable")
        rank = np.empty(len(fa_users), dtype=np.int32)
        rank[by_id] = np.arange(len(fa_users), dtype=np.int32)
        self.user_ids = fa_users[by_id]  # sorted user ids; code -> id
        self.first_seen = rank  # codes in first-appearance order
        self.n_users = len(fa_users)
        self.run_starts = run_starts
        self.run_lens = np.diff(np.append(run_starts, n))
        self.run_codes = rank[fa_codes]
        self.one_run_per_user = len(run_starts) == self.n_users  # data grouped by user
        self.tracks, self.n_tracks = dense_codes(events["track_id"].to_numpy())
        self.track_ids = events["track_id"].to_numpy()
        self.timestamps = events["timestamp"].to_numpy() if need_time else None


def make_fold(index: EventIndex, params: FoldParams, fold: int) -> Fold:
    """Cut fold ``fold`` (0-based) of ``params`` from the events behind ``index``.

    Parameters
    ----------
    index : EventIndex
        The events, indexed once per dataset.
    params : FoldParams
        The fold parameters.
    fold : int
        Which fold.

    Returns
    -------
    Fold
        The fold's train and test row positions and statistics.
    """
    if params.split == "last_one" and index.timestamps is None:
        raise ConfigError("split='last_one' needs an EventIndex built with need_time=True.")
    n_users = index.n_users
    size = round(params.frac * n_users)  # what DataFrame.sample(frac=...) takes
    gen = np.random.default_rng([params.seed, fold]) if params.sampler == "generator" else None
    if gen is None:
        chosen = np.random.RandomState(params.seed + fold).permutation(n_users)[:size]
    elif size < n_users:
        chosen = np.argpartition(gen.random(n_users), size)[:size] if size else \
            np.empty(0, dtype=np.intp)
    else:
        chosen = np.arange(n_users)
    selected = np.zeros(n_users, dtype=bool)
    selected[index.first_seen[chosen]] = True

    # The fold's rows, in the events' order, come as runs of one user each. They are spelled
    # out a block of runs at a time (never all at once): for their track codes, then for the
    # rows that survive the k-core.
    runs = np.flatnonzero(selected[index.run_codes])
    run_starts, run_lens = index.run_starts[runs], index.run_lens[runs]
    run_codes = index.run_codes[runs]
    run_offsets = np.cumsum(run_lens) - run_lens
    blocks = run_blocks(run_offsets, int(run_lens.sum()))
    tracks = np.empty(int(run_lens.sum()), dtype=index.tracks.dtype)
    for lo, hi, first, last in blocks:
        take(index.tracks, concat_ranges(run_starts[lo:hi], run_lens[lo:hi], index.n_rows),
             out=tracks[first:last])
    core, run_alive = kcore_runs(tracks, run_offsets, run_lens, run_codes, params.k_core,
                                 params.max_rounds, n_users=n_users, n_items=index.n_tracks)
    del tracks
    rows = np.empty(int(run_alive.sum()), dtype=np.int32 if index.n_rows < 2**31 else np.int64)
    done = 0
    for lo, hi, first, last in blocks:
        count = int(run_alive[lo:hi].sum())
        np.compress(core.alive[first:last],
                    concat_ranges(run_starts[lo:hi], run_lens[lo:hi], index.n_rows),
                    out=rows[done:done + count])
        done += count

    # Group rows by user in sorted-id order; within a user they stay in row order.
    pos_of = None
    if index.one_run_per_user:
        kept = np.flatnonzero(run_alive)
        order = np.argsort(run_codes[kept], kind="stable")
        starts = (np.cumsum(run_alive) - run_alive)[kept][order]
        sizes = run_alive[kept][order]
    else:
        ucodes = np.repeat(run_codes, run_alive)
        starts = np.flatnonzero(np.r_[True, ucodes[1:] != ucodes[:-1]]) if len(rows) else \
            np.empty(0, dtype=np.int64)
        sizes = np.diff(np.append(starts, len(rows)))
        if len(sorted_unique(ucodes[starts])) == len(starts):  # each user's rows are contiguous
            order = np.argsort(ucodes[starts], kind="stable")
            starts, sizes = starts[order], sizes[order]
        else:
            pos_of = np.argsort(ucodes, kind="stable")
            sorted_codes = ucodes[pos_of]
            starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
            sizes = np.diff(np.append(starts, len(rows)))

    if params.split == "last_one":
        assert index.timestamps is not None  # refused on entry otherwise
        grouped = rows if pos_of is None else rows[pos_of]
        pick = _latest(index.timestamps[grouped], index.track_ids[grouped], starts, sizes)
    elif gen is None:
        pick = starts + _first_of_permutations(np.random.RandomState(params.seed), sizes)
    else:
        pick = starts + np.minimum((gen.random(len(sizes)) * sizes).astype(np.int64), sizes - 1)
    if pos_of is not None:
        pick = pos_of[pick]
    test_rows = rows[pick]
    is_train = np.ones(len(rows), dtype=bool)
    is_train[pick] = False
    return Fold(index=fold, train_rows=rows[is_train], test_rows=test_rows,
                sampled_users=int(size), kcore_rounds=core.rounds,
                kcore_converged=core.converged)


def _first_of_permutations(rs: np.random.RandomState, sizes: np.ndarray) -> np.ndarray:
    """``[rs.permutation(m)[0] for m in sizes]`` (drawn in that order), vectorised.

    Legacy ``permutation(m)`` shuffles ``arange(m)`` with ``j_i = random_interval(i)`` for
    ``i = m-1 .. 1``; ``randint(0, i + 1, dtype=uint32)`` takes the same masked-rejection draws.
    Users are processed in chunks of about ``_CHUNK_DRAWS`` draws so that memory stays small;
    the stream simply continues from one chunk to the next.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) and int(sizes.max()) >= 2**31:
        raise ConfigError("a user has 2**31 rows or more; the pandas sampler cannot replay it")
    steps = np.maximum(sizes - 1, 0)
    ends = np.cumsum(steps)
    out = np.zeros(len(sizes), dtype=np.int64)
    lo = 0
    while lo < len(sizes):
        # at least one user per chunk, however many draws it needs
        hi = max(int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _CHUNK_DRAWS,
                                     side="right")), lo + 1)
        out[lo:hi] = _chain_ends(rs, sizes[lo:hi])
        lo = hi
    return out


_CHUNK_DRAWS = 1 << 21


def _chain_ends(rs: np.random.RandomState, sizes: np.ndarray) -> np.ndarray:
    """Final ``a[0]`` of the Fisher-Yates shuffles of ``arange(m)`` for ``m`` in ``sizes``."""
    steps = np.maximum(sizes - 1, 0)
    total = int(steps.sum())
    pos = np.zeros(len(sizes), dtype=np.int64)
    if total == 0:
        return pos
    first = (np.cumsum(steps) - steps).astype(np.uint32)  # where each user's draws begin
    offset = np.cumsum(sizes) - sizes  # where each user's positions begin
    # bound = i + 1 for i = m-1, m-2, ..., 1 per user (uint32, one element per draw)
    bound = np.repeat(sizes.astype(np.uint32) + first, steps)
    bound -= np.arange(total, dtype=np.uint32)
    j = rs.randint(0, bound, dtype=np.uint32).view(np.int32)  # draws are < 2**31
    # nxt[offset + p] = L(p), the smallest step i > p with j_i == p. A self-swap (j_i == i)
    # moves nothing: its write goes to a spare slot at the end.
    spare = int(sizes.sum())
    slot = np.repeat(offset, steps)  # intp: np.minimum.at, which holds the GIL, converts
    slot += j                         # any other index type first
    i = bound.view(np.int32)
    i -= 1
    slot[j == i] = spare
    del j
    nxt = np.full(spare + 1, np.iinfo(np.int32).max, dtype=np.int32)
    np.minimum.at(nxt, slot, i)
    del slot, i, bound
    # Follow every user's chain from position 0, one step of depth per iteration.
    active = np.flatnonzero(sizes > 1)
    while len(active):
        step = nxt[offset[active] + pos[active]]
        moving = step != np.iinfo(np.int32).max
        active = active[moving]
        pos[active] = step[moving]
    return pos


def _latest(times: np.ndarray, tracks: np.ndarray, starts: np.ndarray,
            sizes: np.ndarray) -> np.ndarray:
    """Position of each group's latest row: max time, then max track id, then the later row.

    Groups are the contiguous runs ``[starts, starts + sizes)`` (given in any order).
    """
    n = len(times)
    if not len(starts):
        return np.empty(0, dtype=np.int64)
    order = np.argsort(starts)
    s, m = starts[order], sizes[order]
    top_time = np.repeat(np.maximum.reduceat(times, s), m)
    cand = times == top_time
    key = np.where(cand, tracks.astype(np.int64), np.iinfo(np.int64).min)
    top_track = np.repeat(np.maximum.reduceat(key, s), m)
    cand &= key == top_track
    last = np.maximum.reduceat(np.where(cand, np.arange(n), -1), s)
    out = np.empty(len(starts), dtype=np.int64)
    out[order] = last
    return out


def bootstrap_folds(
    events: pd.DataFrame,
    num_folds: int = 4,
    *,
    seed: int | None = DEFAULT_SEED,
    frac: float = 0.25,
    k_core: int = 10,
    max_rounds: int = 10,
    sampler: str = "pandas",
    split: str = "bootstrap",
) -> Iterator[Fold]:
    """Yield the ``num_folds`` folds of ``events`` (see the module docstring).

    ``seed=None`` means the default seed 42. Row positions in the folds refer to ``events``;
    ``events.take(fold.train_rows)`` is the training frame.

    Parameters
    ----------
    events : pandas.DataFrame
        ``user_id``, ``track_id``, ``timestamp`` rows.
    num_folds, seed, frac, k_core, max_rounds, sampler, split
        As for :class:`FoldParams`.

    Yields
    ------
    Fold
        Each fold's train and test row positions and statistics.
    """
    params = FoldParams(num_folds=num_folds, seed=DEFAULT_SEED if seed is None else seed,
                        frac=frac, k_core=k_core, max_rounds=max_rounds, sampler=sampler,
                        split=split)
    index = EventIndex(events, need_time=params.split == "last_one")
    for f in range(params.num_folds):
        yield make_fold(index, params, f)


def leave_last_out(
    events: pd.DataFrame,
    *,
    frac: float = 1.0,
    seed: int = DEFAULT_SEED,
    k_core: int | None = None,
    max_rounds: int = 10,
) -> Split:
    """The 2023 edition's split: every event at a user's latest timestamp is a test event.

    Ties are all kept: a user with three events at their latest time has three test events,
    and a user whose events all share one time has no training events. As in 2023, the users
    can first be sampled (``frac`` < 1: ``events["user_id"].drop_duplicates().sample(frac=frac,
    random_state=seed)``, i.e. ``RandomState(seed).permutation(n)[:round(frac * n)]`` over the
    users in order of first appearance; the 2023 code used ``frac=0.25`` and ``seed=42``) and
    the sampled events reduced to their ``k_core`` (the 2023 code used 10; ``None`` skips it).
    Events of users left out by the sample or the k-core are in neither side. Returns a
    ``Split``: ``test`` sorted by user id (then row order), ``train`` in the input's row order;
    both keep the input's index. For one test event per user see ``leave_last_one_out``.

    Parameters
    ----------
    events : pandas.DataFrame
        ``user_id``, ``track_id``, ``timestamp`` rows.
    frac : float
        Share of users sampled, in (0, 1].
    seed : int
        Seed of the user sample (>= 0).
    k_core : int, optional
        k of the k-core applied to the sampled events.
    max_rounds : int
        Most k-core rounds.

    Returns
    -------
    Split
        Train and test events and the parameters.

    Raises
    ------
    ConfigError
        On a bad parameter.
    """
    frac = check_fraction("frac", frac, owner="leave_last_out")
    seed = check_int("seed", seed, minimum=0, owner="leave_last_out")
    if k_core is not None:
        k_core = check_int("k_core", k_core, minimum=1, owner="leave_last_out")
    check_events(events, ["user_id", "track_id", "timestamp"])
    n = len(events)
    users = events["user_id"].to_numpy()
    keep = np.ones(n, dtype=bool)
    if float(frac) < 1.0 and n:
        codes, uniques = pd.factorize(users)  # codes in order of first appearance
        size = round(float(frac) * len(uniques))
        chosen = np.zeros(len(uniques), dtype=bool)
        chosen[np.random.RandomState(seed).permutation(len(uniques))[:size]] = True
        keep = chosen[codes]
    if k_core is not None and keep.any():
        rows = np.flatnonzero(keep)
        keep = np.zeros(n, dtype=bool)
        keep[rows[kcore_filter(events.take(rows), k_core, max_rounds)]] = True
    rows = np.flatnonzero(keep)
    times = time_values(events["timestamp"])[rows]
    kept_users = users[rows]
    is_test = np.zeros(n, dtype=bool)
    if len(rows):
        codes = pd.factorize(kept_users)[0]
        latest = np.full(codes.max() + 1, times.min(), dtype=times.dtype)
        np.maximum.at(latest, codes, times)
        is_test[rows[times == latest[codes]]] = True
    test_pos = np.flatnonzero(is_test)
    test_pos = test_pos[np.argsort(users[test_pos], kind="stable")]
    params = {"kind": "leave_last_out", "frac": float(frac), "seed": seed, "k_core": k_core,
              "max_rounds": max_rounds,
              "ties": "every event at the latest timestamp is a test event"}
    return Split(train=events[keep & ~is_test], test=events.take(test_pos), params=params)


def leave_last_one_out(
    events: pd.DataFrame,
    *,
    min_events: int = 2,
) -> Split:
    """Last-interaction leave-one-out: each user's single latest event is their test event.

    The latest event has the largest ``timestamp``; ties go to the largest ``track_id``, then
    to the later row, so the result does not depend on the row order unless a user has two
    rows with the same time and track. Users with fewer than ``min_events`` events stay
    entirely in train. Returns a ``Split``: ``test`` has one row per test user, sorted by user
    id; ``train`` keeps the input's row order; both keep the input's index.

    Parameters
    ----------
    events : pandas.DataFrame
        ``user_id``, ``track_id``, ``timestamp`` rows.
    min_events : int
        Users with fewer events stay in train (>= 1).

    Returns
    -------
    Split
        Train and test events and the parameters.

    Raises
    ------
    ConfigError
        On a bad parameter.
    """
    min_events = check_int("min_events", min_events, minimum=1, owner="leave_last_one_out")
    check_events(events, ["user_id", "track_id", "timestamp"])
    n = len(events)
    users = events["user_id"].to_numpy()
    times = time_values(events["timestamp"])
    tracks = events["track_id"].to_numpy()
    if n:
        order = np.lexsort((np.arange(n), tracks, times, users))  # primary key last
        su = users[order]
        starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
        sizes = np.diff(np.append(starts, n))
        ends = (starts + sizes - 1)[sizes >= min_events]
        test_pos = order[ends]
    else:
        test_pos = np.empty(0, dtype=np.int64)
    is_test = np.zeros(n, dtype=bool)
    is_test[test_pos] = True
    params = {"kind": "leave_last_one_out", "min_events": min_events,
              "tie_break": "timestamp, then track_id, then row order (latest wins)"}
    return Split(train=events[~is_test], test=events.take(test_pos), params=params)
