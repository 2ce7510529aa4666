"""``Split``: a train/test pair of event tables plus the parameters that produced it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, DataError, show_values


@dataclass(frozen=True)
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
    """Check that ``events`` is a DataFrame with ``columns`` (integer ids, numeric times)."""
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
    """Timestamps as unix seconds: int64 (float64 for fractional input); datetimes converted."""
    if pd.api.types.is_datetime64_any_dtype(timestamps.dtype):
        if getattr(timestamps.dt, "tz", None) is not None:
            timestamps = timestamps.dt.tz_convert("UTC").dt.tz_localize(None)
        return timestamps.to_numpy().astype("datetime64[s]").astype(np.int64)
    values = timestamps.to_numpy()
    return values.astype(np.float64 if values.dtype.kind == "f" else np.int64, copy=False)


def check_ratio(name: str, value: Any, *, low: float = 0.0, high: float = 1.0) -> float:
    """A float strictly between ``low`` and ``high``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (low < float(value) < high):
        raise ConfigError(f"The {name!r} parameter must be a number in the open interval "
                          f"({low}, {high}). Got {value!r} instead.")
    return float(value)


def check_int(name: str, value: Any, *, minimum: int) -> int:
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"The {name!r} parameter must be an int in the range [{minimum}, inf). "
                          f"Got {value!r} instead.")
    return int(value)
