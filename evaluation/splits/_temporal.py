"""Temporal splits: the latest share of each user's events, or a global time cut."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.validation import check_int, check_number
from evaluation.errors import ConfigError, DataError
from evaluation.splits._loo import Fold
from evaluation.splits._split import Split, check_events, order_events, time_values

#: How many of a user's ``n`` events go to test (documented in ``temporal_user_split``).
ROUNDING = "n_test = min(n - 1, max(1, floor(ratio * n)))"


def temporal_user_split(
    events: pd.DataFrame,
    ratio: float = 0.2,
    *,
    min_events: int = 5,
    tie_break: str | None = "track_id",
) -> Split:
    """Per user, the latest ``ratio`` of their events (by ``timestamp``) form the test set.

    A user with ``n >= min_events`` events puts ``min(n - 1, max(1, floor(ratio * n)))`` of them
    in test: at least one, and at least one stays in train. Users with fewer than
    ``min_events`` events stay entirely in train (they are still useful for fitting).

    Events are ordered by ``timestamp``, then by ``tie_break`` (``"track_id"`` by default; any
    column, or ``None``), then by row position, so ties are resolved deterministically and,
    with a tie-break column that is unique per user, independently of the input's row order.
    Every test event is later than the same user's train events, or tied with them and ordered
    after them. Both sides keep the input's row order and index.

    Parameters
    ----------
    events : pandas.DataFrame
        ``user_id`` and ``timestamp`` rows (plus the tie-break column).
    ratio : float
        Share of each user's events that go to test, in (0, 1).
    min_events : int
        Users with fewer events stay in train (>= 2).
    tie_break : str or None
        Column that orders events with equal timestamps.

    Returns
    -------
    Split
        Train and test events and the parameters.

    Raises
    ------
    ConfigError
        On a bad parameter.
    DataError
        On a missing column or missing tie-break values.
    """
    ratio = _check_share("ratio", ratio, "temporal_user_split")
    min_events = check_int("min_events", min_events, minimum=2, owner="temporal_user_split")
    if tie_break is not None and not isinstance(tie_break, str):
        raise ConfigError(f"The 'tie_break' parameter must be a column name or None. "
                          f"Got {tie_break!r} instead.")
    check_events(events, ["user_id", "timestamp"])
    if tie_break is not None:
        if tie_break not in events.columns:
            raise DataError(f"events: no column {tie_break!r} to break timestamp ties with; the "
                            f"columns are {list(map(str, events.columns))}. Pass tie_break=None "
                            f"to break ties by row order.")
        if events[tie_break].hasnans:
            raise DataError(f"events: the tie-break column {tie_break!r} has missing values; "
                            f"fill them or choose another column.")
    n = len(events)
    users = events["user_id"].to_numpy()
    tie = events[tie_break].to_numpy() if tie_break is not None else None
    order = order_events(users, time_values(events["timestamp"]), tie)

    # Group offsets over the sorted users; position of each event within its user's run.
    sorted_users = users[order]
    starts = np.flatnonzero(np.r_[True, sorted_users[1:] != sorted_users[:-1]]) if n else \
        np.empty(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, n])
    n_test = np.where(
        sizes >= min_events,
        np.minimum(sizes - 1, np.maximum(1, np.floor(ratio * sizes + 1e-9).astype(np.int64))),
        0,
    )
    group = np.repeat(np.arange(len(starts)), sizes)
    pos = np.arange(n) - np.repeat(starts, sizes)
    is_test_sorted = pos >= (sizes - n_test)[group]
    is_test = np.empty(n, dtype=bool)
    is_test[order] = is_test_sorted

    params = {"kind": "temporal_user", "ratio": ratio, "min_events": min_events,
              "tie_break": tie_break, "rounding": ROUNDING}
    return Split(train=events[~is_test], test=events[is_test], params=params)


def global_time_split(
    events: pd.DataFrame,
    cutoff: Any = None,
    *,
    quantile: float | None = None,
    drop_cold_users: bool = False,
    drop_cold_items: bool = False,
) -> Split:
    """Events before ``cutoff`` train, events at or after it test: one cut for everyone.

    ``cutoff`` is a unix time in seconds (or anything ``pandas.Timestamp`` understands, read as
    UTC when naive: ``"2018-01-01"``); alternatively ``quantile=q`` puts the cut at the
    ``q``-quantile of the event times (an event time: numpy's ``"higher"`` method), so that
    about ``q`` of the events (fewer when many share the cut time) train. Test events of users
    (items) absent from train are kept unless ``drop_cold_users`` (``drop_cold_items``) is
    set; the leakage audit counts them either way.

    Parameters
    ----------
    events : pandas.DataFrame
        ``user_id``, ``track_id``, ``timestamp`` rows.
    cutoff : optional
        The cut time; exactly one of ``cutoff`` and ``quantile`` is given.
    quantile : float, optional
        The cut as a quantile of event times, in (0, 1).
    drop_cold_users, drop_cold_items : bool
        Drop test events of users (items) that have no training event.

    Returns
    -------
    Split
        Train and test events, the parameters and the cut time.

    Raises
    ------
    ConfigError
        On a bad cut or quantile.
    """
    if (cutoff is None) == (quantile is None):
        raise ConfigError("global_time_split: pass exactly one of 'cutoff' (a time) and "
                          f"'quantile' (a share of events). Got cutoff={cutoff!r}, "
                          f"quantile={quantile!r}.")
    check_events(events, ["user_id", "track_id", "timestamp"])
    times = time_values(events["timestamp"])
    if len(times) == 0:
        raise DataError("events: the table is empty; there is nothing to split.")
    if quantile is not None:
        quantile = _check_share("quantile", quantile, "global_time_split")
        cut = np.quantile(times, quantile, method="higher")
        cut = cut.item()
    else:
        cut = to_unix_seconds(cutoff, "cutoff")
    is_test = times >= cut
    if is_test.all() or not is_test.any():
        raise ConfigError(
            f"global_time_split: the cut at {cut!r} puts every event in "
            f"{'test' if is_test.all() else 'train'}; event times run from {times.min()} to "
            f"{times.max()}. Choose a cutoff inside that range.")
    train, test = events[~is_test], events[is_test]
    dropped_users = dropped_items = 0
    if drop_cold_users:
        known = test["user_id"].isin(pd.unique(train["user_id"]))
        dropped_users = int((~known).sum())
        test = test[known]
    if drop_cold_items:
        known = test["track_id"].isin(pd.unique(train["track_id"]))
        dropped_items = int((~known).sum())
        test = test[known]
    params = {"kind": "global_time", "cutoff": cut, "quantile": quantile,
              "drop_cold_users": bool(drop_cold_users), "drop_cold_items": bool(drop_cold_items),
              "dropped_cold_user_events": dropped_users,
              "dropped_cold_item_events": dropped_items}
    return Split(train=train, test=test, params=params, cutoff=cut)


def global_cut_fold(events: Any, cut: float) -> Fold:
    """The one fold of a global time cut at ``cut`` (unix seconds).

    Train: every event before the cut. Test: per user with at least one training event, the
    first of their events at or after the cut (ties: the earlier row), ordered by user id.

    Raises
    ------
    ConfigError
        When the cut leaves no training event or no test user (it lies outside the data).
    """
    times = time_values(events["timestamp"])
    users = events["user_id"].to_numpy()
    before = times < cut
    train_rows = np.flatnonzero(before)
    after = np.flatnonzero(~before)
    size = _id_table_size(users)
    if size is None:
        after = after[np.isin(users[after], users[train_rows])]
    else:  # a table by user id: no sort of the events (tens of millions at full scale)
        trained = np.zeros(size, dtype=bool)
        trained[users[train_rows]] = True
        after = after[trained[users[after]]]
    if len(train_rows) == 0 or len(after) == 0:
        shown = np.datetime64(int(cut), "s") if math.isfinite(cut) else cut
        raise ConfigError(f"the global time cut at {shown} leaves no "
                          f"{'training event' if len(train_rows) == 0 else 'test user'}: "
                          f"the events run from {np.datetime64(int(times.min()), 's')} to "
                          f"{np.datetime64(int(times.max()), 's')}; move the cut inside them")
    test_rows = _first_rows(users, times, after, size)
    return Fold(index=0, train_rows=train_rows, test_rows=test_rows,
                sampled_users=len(test_rows), kcore_rounds=0, kcore_converged=True)


def _first_rows(users: np.ndarray, times: np.ndarray, rows: np.ndarray,
                size: int | None) -> np.ndarray:
    """Per user among ``rows`` (ascending positions), the row of their earliest time (ties:
    the earlier row), ordered by user id.

    With a table by user id (``size``), the earliest time per user is found in one pass and
    only the rows at it are sorted (by user; a stable sort keeps the earlier row first);
    otherwise all ``rows`` are sorted by user, time and position. Both give the same rows.
    """
    if size is None or (times.dtype.kind == "f" and np.isnan(times[rows]).any()):
        rows = rows[np.lexsort((rows, times[rows], users[rows]))]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = users[rows][1:] != users[rows][:-1]
        return rows[first]
    at, when = users[rows], times[rows]
    earliest = np.full(size, when.max(), dtype=when.dtype)
    np.minimum.at(earliest, at, when)
    rows = rows[when == earliest[at]]
    _, first = np.unique(users[rows], return_index=True)  # the first (earliest) row per user
    return rows[first]


def _id_table_size(users: np.ndarray) -> int | None:
    """The length of a table indexed by user id, when the ids are non-negative integers no
    larger than a few times the events (else None: the ids are looked up by sorting)."""
    if users.dtype.kind not in "iu" or len(users) == 0:
        return None
    low, high = int(users.min()), int(users.max())
    return high + 1 if low >= 0 and high < 4 * len(users) + 1_000_000 else None


def _check_share(name: str, value: Any, owner: str) -> float:
    """``value`` as a float strictly between 0 and 1 (both ends would leave one side empty)."""
    return check_number(name, value, low=0.0, high=1.0, low_open=True, high_open=True,
                        owner=owner)


def to_unix_seconds(value: Any, name: str) -> int | float:
    """A time given as unix seconds, a datetime, a Timestamp or a date string -> unix seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"The {name!r} parameter must be a time, got {value!r}.")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ConfigError(f"The {name!r} parameter must be a finite time, got {value!r}.")
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, (str, dt.datetime, dt.date, pd.Timestamp, np.datetime64)):
        try:
            stamp = pd.Timestamp(value)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"The {name!r} parameter {value!r} is not a time pandas can "
                              f"read (e.g. '2018-01-01' or unix seconds): {exc}") from None
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        seconds = stamp.value / 1e9
        return int(seconds) if seconds.is_integer() else seconds
    raise ConfigError(f"The {name!r} parameter must be unix seconds, a datetime or a date "
                      f"string. Got {type(value).__name__} {value!r} instead.")
