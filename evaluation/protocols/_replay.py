"""Time-aware replay: refit before each window of test events, versus one static fit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError
from evaluation.splits import LeakageAudit, Split, audit_leakage, check_events, time_values

MODES = ("replay", "static", "both")


@dataclass(frozen=True)
class ReplayResult:
    """Per-window and overall metrics of a replay run.

    ``per_window`` has one row per window (``window``, ``start``/``end``: the times of its first
    and last test event, ``n_points``, ``n_users``, ``history_events``: events the replay model
    was fitted on) and a column ``"<mode>/<metric>"`` per metric and mode. ``overall`` maps each
    mode to its metrics over all windows together (every (window, user) pair is one evaluation
    unit), plus ``"delta"`` = replay - static when both ran.
    """

    per_window: pd.DataFrame
    overall: dict[str, dict[str, float]]
    params: dict[str, Any] = field(default_factory=dict)
    audit: LeakageAudit | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        rows = self.per_window.astype(object).where(self.per_window.notna(), None)
        out = {"params": self.params, "overall": self.overall,
               "per_window": rows.to_dict(orient="records")}
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        return out

    def __str__(self) -> str:
        metrics = sorted({m for values in self.overall.values() for m in values})
        modes = list(self.overall)
        width = max([len(m) for m in metrics] + [6])
        lines = [f"Replay over {len(self.per_window)} windows "
                 f"(window={self.params.get('window')!r})",
                 f"  {'metric':<{width}}" + "".join(f"  {m:>10}" for m in modes)]
        for metric in metrics:
            cells = "".join(f"  {_fmt(self.overall[m].get(metric)):>10}" for m in modes)
            lines.append(f"  {metric:<{width}}{cells}")
        if self.audit is not None:
            lines.append(str(self.audit))
        return "\n".join(lines)

    def __rich__(self):
        from rich.table import Table

        table = Table(title=f"Replay over {len(self.per_window)} windows "
                            f"(window={self.params.get('window')!r})")
        table.add_column("metric")
        for mode in self.overall:
            table.add_column(mode, justify="right")
        metrics = sorted({m for values in self.overall.values() for m in values})
        for metric in metrics:
            table.add_row(metric, *(_fmt(self.overall[m].get(metric)) for m in self.overall))
        if self.audit is None:
            return table
        from rich.console import Group

        return Group(table, self.audit)


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def window_ids(times: np.ndarray, window: Any) -> np.ndarray:
    """Window number (0, 1, ... without gaps) of each test point; ``times`` sorted ascending.

    ``window`` is a number of test points (int; 1 refits before every point) or a duration
    (``pandas.Timedelta``, ``datetime.timedelta`` or a string such as ``"7D"``): windows then
    start at the first test time and cover ``[t0 + j * d, t0 + (j + 1) * d)``; empty ones are
    skipped.
    """
    n = len(times)
    if isinstance(window, (int, np.integer)) and not isinstance(window, bool):
        if window < 1:
            raise ConfigError(f"The 'window' parameter must be >= 1 test points or a positive "
                              f"duration. Got {window!r} instead.")
        return np.arange(n) // int(window)
    seconds = duration_seconds(window)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    raw = np.floor((times - times[0]) / seconds).astype(np.int64)
    return np.unique(raw, return_inverse=True)[1].astype(np.int64)


def duration_seconds(window: Any) -> float:
    """A positive duration given as a Timedelta, timedelta or pandas string -> seconds."""
    if isinstance(window, (str, dt.timedelta, pd.Timedelta, np.timedelta64)):
        try:
            seconds = pd.Timedelta(window).total_seconds()
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"The 'window' parameter {window!r} is not a duration pandas can "
                              f"read (e.g. '7D', '12h'): {exc}") from None
        if seconds > 0:
            return seconds
    raise ConfigError(f"The 'window' parameter must be a number of test points (int >= 1) or a "
                      f"positive duration ('7D', pandas.Timedelta). Got {window!r} instead.")


def replay(
    model_factory: Callable[[], Any],
    split: Split,
    *,
    window: Any,
    k: int = 10,
    metrics: Sequence[str] = ("hit_rate@10", "ndcg@10", "recall@10"),
    mode: str = "both",
    relevance_threshold: float | None = None,
    aggregate: str = "user",
    strict_time: bool = False,
    train_kwargs: dict[str, Any] | None = None,
    audit: bool = True,
    progress: bool = False,
) -> ReplayResult:
    """Evaluate a model by time-aware replay of ``split.test``.

    Test events are ordered by (timestamp, user_id, track_id, row) and cut into windows (see
    ``window_ids``). In ``"replay"`` mode, before each window a fresh model from
    ``model_factory()`` is trained on everything known before it: ``split.train`` plus the test
    events of earlier windows (with ``strict_time=True`` only those strictly earlier than the
    window's first event, which also drops train events from the future of a per-user split);
    it then predicts the top-``k`` for the window's users, whose window events are the relevant
    items. ``"static"`` trains once on ``split.train``. ``"both"`` reports the two side by
    side; ``delta`` = replay - static (higher is better for ranking metrics, lower for rating
    errors). Rating errors are added when the model has ``predict_ratings`` and the test events
    carry a ``rating``; ``audit`` attaches the split's leakage audit.
    """
    from evaluation.protocols._holdout import (
        predicted_ratings,
        rating_errors_from,
        rating_scale,
        score_predictions,
    )

    if mode not in MODES:
        raise ConfigError(f"The 'mode' parameter of replay must be one of {list(MODES)}. "
                          f"Got {mode!r} instead.")
    if not callable(model_factory):
        raise ConfigError("replay: 'model_factory' must be a callable that returns a fresh, "
                          f"untrained model (e.g. the model class). Got {model_factory!r}.")
    if not isinstance(split, Split):
        raise ConfigError(f"replay: 'split' must be a Split (from temporal_user_split, "
                          f"global_time_split, ...). Got {type(split).__name__}.")
    check_events(split.train, ["user_id", "track_id", "timestamp"], name="train")
    check_events(split.test, ["user_id", "track_id", "timestamp"], name="test")
    if len(split.test) == 0:
        raise ConfigError("replay: the split's test set is empty; there is nothing to replay.")
    train_kwargs = dict(train_kwargs or {})
    modes = ["static", "replay"] if mode == "both" else [mode]

    test = split.test
    times = time_values(test["timestamp"])
    order = np.lexsort((np.arange(len(test)), test["track_id"].to_numpy(),
                        test["user_id"].to_numpy(), times))
    test = test.iloc[order]
    times = times[order]
    wid = window_ids(times, window)
    n_windows = int(wid.max()) + 1
    bounds = np.searchsorted(wid, np.arange(n_windows + 1))
    train_times = time_values(split.train["timestamp"])
    scale = rating_scale(split)
    # Coverage and popularity bias use the items and popularity of all the split's events.
    catalog = pd.concat([split.train[["track_id"]], split.test[["track_id"]]])
    options = {"k": k, "metrics": metrics, "relevance_threshold": relevance_threshold,
               "aggregate": aggregate, "train": catalog}

    def fit(history: pd.DataFrame):
        model = model_factory()
        model.train(history, **train_kwargs)
        return model

    static_model = fit(split.train) if "static" in modes else None
    static_preds = None
    if static_model is not None:
        static_preds = _predict(static_model, np.unique(test["user_id"].to_numpy()), k)

    # Overall scores treat every (window, user) pair as one unit: keep each window's parts.
    rows: list[dict[str, Any]] = []
    unit_tests: list[pd.DataFrame] = []
    unit_preds: dict[str, list[pd.DataFrame]] = {m: [] for m in modes}
    unit_ratings: dict[str, list[np.ndarray]] = {m: [] for m in modes}
    windows = range(n_windows)
    if progress:
        from tqdm.auto import tqdm

        windows = tqdm(windows, desc="replay windows", unit="window")
    for w in windows:
        lo, hi = bounds[w], bounds[w + 1]
        part = test.iloc[lo:hi]
        users = np.unique(part["user_id"].to_numpy())
        row: dict[str, Any] = {"window": w, "start": times[lo].item(),
                               "end": times[hi - 1].item(), "n_points": int(hi - lo),
                               "n_users": len(users)}
        for m in modes:
            if m == "static":
                model, preds = static_model, static_preds.loc[users]
            else:
                history = pd.concat([split.train, test.iloc[:lo]])
                if strict_time:
                    h_times = np.r_[train_times, times[:lo]]
                    history = history[h_times < times[lo]]
                row["history_events"] = len(history)
                model = fit(history)
                preds = _predict(model, users, k)
            scores = score_predictions(preds, part, **options)
            if _has_ratings(model, part):
                predicted = predicted_ratings(model, part)
                unit_ratings[m].append(predicted)
                scores.update(rating_errors_from(predicted, part["rating"].to_numpy(np.float64),
                                                 rating_range=scale))
            for name, value in scores.items():
                row[f"{m}/{name}"] = value
            unit_preds[m].append(preds)
        unit_tests.append(part)
        rows.append(row)

    overall = {}
    unit_test = _units(unit_tests)
    for m in modes:
        preds = pd.concat(unit_preds[m], ignore_index=True)
        preds.index = pd.RangeIndex(len(preds), name="user_id")
        scores = score_predictions(preds, unit_test, **options)
        if unit_ratings[m]:
            scores.update(rating_errors_from(np.concatenate(unit_ratings[m]),
                                             unit_test["rating"].to_numpy(np.float64),
                                             rating_range=scale))
        overall[m] = scores
    if mode == "both":
        overall["delta"] = {name: overall["replay"][name] - overall["static"][name]
                            for name in overall["static"] if name in overall["replay"]}
    params = {"window": window if isinstance(window, (int, str)) else str(window),
              "n_windows": n_windows, "k": k, "metrics": list(metrics), "mode": mode,
              "relevance_threshold": relevance_threshold, "aggregate": aggregate,
              "strict_time": bool(strict_time), "split": dict(split.params)}
    return ReplayResult(per_window=pd.DataFrame(rows), overall=overall, params=params,
                        audit=audit_leakage(split) if audit else None)


def _units(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate window test events, renumbering users as (window, user) units 0, 1, ..."""
    frames, base = [], 0
    for part in parts:
        _, inv = np.unique(part["user_id"].to_numpy(), return_inverse=True)
        frames.append(part.assign(user_id=inv + base))
        base += int(inv.max()) + 1
    return pd.concat(frames, ignore_index=True)


def _predict(model: Any, users: np.ndarray, k: int) -> pd.DataFrame:
    from evaluation.protocols._holdout import checked_predictions

    return checked_predictions(model, users, k)


def _has_ratings(model: Any, test: pd.DataFrame) -> bool:
    from evaluation.protocols._holdout import supports_ratings

    return supports_ratings(model) and "rating" in test.columns
