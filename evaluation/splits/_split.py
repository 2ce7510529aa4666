"""``Split``: a train/test pair of event tables plus the parameters that produced it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation.errors import DataError, show_values


@dataclass(frozen=True, eq=False)
class Split:
    """One train/test partition of an event table.

    ``train`` and ``test`` hold whole event rows (the input's columns); ``params`` records
    everything that defines the split (its ``kind`` included) so that it can be reproduced and
    hashed; ``cutoff`` is the global split time where the split has one (a global time cut),
    else ``None``.
    """

    train: pd.DataFrame
    test: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    cutoff: int | float | None = None

    @property
    def kind(self) -> str:
        return str(self.params.get("kind", "custom"))

    def summary(self) -> dict[str, Any]:
        """Row and user counts of both sides (JSON-serialisable)."""
        out: dict[str, Any] = {"kind": self.kind}
        for name, frame in (("train", self.train), ("test", self.test)):
            out[f"{name}_events"] = len(frame)
            out[f"{name}_users"] = int(frame["user_id"].nunique()) if "user_id" in frame else 0
        return out

    def __repr__(self) -> str:
        s = self.summary()
        return (f"Split(kind={s['kind']!r}, train={s['train_events']} events/"
                f"{s['train_users']} users, test={s['test_events']} events/"
                f"{s['test_users']} users)")


def check_events(events: Any, columns: Iterable[str], *, name: str = "events") -> pd.DataFrame:
    """Check that ``events`` is a DataFrame with ``columns`` (integer ids, numeric times).

    Parameters
    ----------
    events : Any
        What the caller passed.
    columns : iterable of str
        Columns the caller needs.
    name : str
        How messages name the table.

    Returns
    -------
    pandas.DataFrame
        ``events`` itself.

    Raises
    ------
    DataError
        When ``events`` is not a DataFrame or lacks a column, or a column has the wrong type.
    """
    if not isinstance(events, pd.DataFrame):
        raise DataError(f"{name}: expected a pandas DataFrame of events, got "
                        f"{type(events).__name__}")
    missing = [c for c in columns if c not in events.columns]
    if missing:
        raise DataError(f"{name}: missing column(s) {missing}; the columns present are "
                        f"{list(map(str, events.columns))}. Rename them to the EvalRS schema "
                        f"(user_id, track_id, timestamp, ...).")
    for col in columns:
        values = events[col]
        if col == "timestamp":
            if not (pd.api.types.is_numeric_dtype(values.dtype)
                    or pd.api.types.is_datetime64_any_dtype(values.dtype)) \
                    or pd.api.types.is_bool_dtype(values.dtype):
                raise DataError(f"{name}: column 'timestamp' must hold unix seconds (integers) "
                                f"or datetimes, got dtype {values.dtype}; convert it first.")
        elif not pd.api.types.is_integer_dtype(values.dtype):
            raise DataError(f"{name}: column {col!r} must hold integer ids, got dtype "
                            f"{values.dtype}; map the ids to integers first.")
        if values.hasnans:
            rows = np.flatnonzero(values.isna().to_numpy())
            raise DataError(f"{name}: column {col!r} has missing values at rows "
                            f"{show_values(rows)}; drop or fill them first.")
    return events


def time_values(timestamps: pd.Series) -> np.ndarray:
    """Timestamps as unix seconds: signed ints as stored (no copy), unsigned ints as int64,
    floats as float64; datetimes converted.

    Parameters
    ----------
    timestamps : pandas.Series
        A ``timestamp`` column.

    Returns
    -------
    numpy.ndarray
        The times as numbers.
    """
    if pd.api.types.is_datetime64_any_dtype(timestamps.dtype):
        if getattr(timestamps.dt, "tz", None) is not None:
            timestamps = timestamps.dt.tz_convert("UTC").dt.tz_localize(None)
        return timestamps.to_numpy().astype("datetime64[s]").astype(np.int64)
    values = timestamps.to_numpy()
    if values.dtype.kind == "i":
        return values
    return values.astype(np.float64 if values.dtype.kind == "f" else np.int64, copy=False)


def order_events(users: np.ndarray, times: np.ndarray, tie: np.ndarray | None) -> np.ndarray:
    """Stable order of events by (user, time, tie-break value, row position).

    One stable argsort of a combined (user, time) int64 key when it fits (fast, and fastest on
    input already grouped by user), then only the runs of tied (user, time) are re-sorted by
    the tie-break; ``np.lexsort`` otherwise.
    """
    n = len(users)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key = _combined_key(users, times)
    if key is None:
        keys = ([tie] if tie is not None else []) + [times, users]
        return np.lexsort(keys)
    order = np.argsort(key, kind="stable")
    if tie is None:
        return order
    sorted_key = key[order]
    tied = np.r_[False, sorted_key[1:] == sorted_key[:-1]]
    if not tied.any():
        return order
    in_run = tied | np.r_[tied[1:], False]  # both ends of each tied pair
    pos = np.flatnonzero(in_run)
    run_id = np.cumsum(~tied[pos])  # a new run starts where an element is not tied to the last
    sub = np.lexsort((tie[order[pos]], run_id))  # stable: row order kept among equal values
    order[pos] = order[pos][sub]
    return order


def _combined_key(users: np.ndarray, times: np.ndarray) -> np.ndarray | None:
    """``(user - min) * span + (time - min)`` as int64, or None when it would not fit."""
    if users.dtype.kind not in "iu" or times.dtype.kind not in "iu":
        return None
    u0, u1 = int(users.min()), int(users.max())
    t0, t1 = int(times.min()), int(times.max())
    span = t1 - t0 + 1
    if (u1 - u0 + 1) * span >= 2**62:
        return None
    key = users.astype(np.int64)  # built in place: this runs on tens of millions of rows
    key -= u0
    key *= span
    key += times
    key -= t0
    return key
