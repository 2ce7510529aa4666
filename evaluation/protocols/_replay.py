"""Time-aware replay: refit before each window of test events, versus one static fit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_choice, check_int, check_k
from evaluation.errors import ConfigError
from evaluation.protocols._ranking import checked_predictions, score_predictions
from evaluation.protocols._ratings import (
    predicted_ratings,
    rating_errors_from,
    rating_scale,
    supports_ratings,
)
from evaluation.protocols._render import fmt, metric_frame, metric_table, show, with_extra
from evaluation.splits import LeakageAudit, Split, audit_leakage, check_events, time_values

MODES = ("replay", "static", "both")


@dataclass(frozen=True)
class ReplayResult:
    """Per-window and overall metrics of a replay run.

    Parameters
    ----------
    per_window : pandas.DataFrame
        One row per window: ``window``, ``start``/``end`` (the times of its first and last test
        event), ``n_points``, ``n_users``, ``history_events`` (events the replay model was
        fitted on) and a column ``"<mode>/<metric>"`` per metric and mode.
    overall : dict of str to dict of str to float
        Each mode's metrics over all windows together (every (window, user) pair is one
        evaluation unit), plus ``"delta"`` = replay - static when both ran.
    params : dict
        The settings of :func:`replay` that produced the result.
    audit : LeakageAudit, optional
        The split's leakage audit, when it was asked for.
    """

    per_window: pd.DataFrame
    overall: dict[str, dict[str, float]]
    params: dict[str, Any] = field(default_factory=dict)
    audit: LeakageAudit | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values.

        Returns
        -------
        dict
            ``params``, ``overall``, ``per_window`` (a list of row dicts, missing values as
            ``None``) and ``audit`` when present.
        """
        rows = self.per_window.astype(object).where(self.per_window.notna(), None)
        out = {"params": self.params, "overall": self.overall,
               "per_window": rows.to_dict(orient="records")}
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        return out

    def to_frame(self) -> pd.DataFrame:
        """The overall metric values as a tidy frame (the per-window ones are ``per_window``).

        Returns
        -------
        pandas.DataFrame
            One row per (mode, metric), columns ``group`` (``"static"``, ``"replay"`` or
            ``"delta"``), ``metric`` and ``value`` (float64).
        """
        return metric_frame(self.overall.items())

    def _title(self) -> str:
        """The heading of the printed result."""
        return (f"Replay over {len(self.per_window)} windows "
                f"(window={self.params.get('window')!r})")

    def _metric_names(self) -> list[str]:
        """Every metric of any mode, sorted."""
        return sorted({m for values in self.overall.values() for m in values})

    def __str__(self) -> str:
        metrics = self._metric_names()
        modes = list(self.overall)
        width = max([len(m) for m in metrics] + [6])
        lines = [self._title(),
                 f"  {'metric':<{width}}" + "".join(f"  {m:>10}" for m in modes)]
        for metric in metrics:
            cells = "".join(f"  {fmt(self.overall[m].get(metric)):>10}" for m in modes)
            lines.append(f"  {metric:<{width}}{cells}")
        if self.audit is not None:
            lines.append(str(self.audit))
        return "\n".join(lines)

    def __rich__(self) -> Any:
        """A table of the overall metrics per mode, then the leakage audit."""
        rows = [(metric, *(fmt(values.get(metric)) for values in self.overall.values()))
                for metric in self._metric_names()]
        table = metric_table(self._title(), ("metric", *self.overall), rows)
        return with_extra(table, self.audit)


def window_ids(times: np.ndarray, window: Any) -> np.ndarray:
    """Number the windows of the test points.

    Parameters
    ----------
    times : numpy.ndarray
        The test points' times, sorted ascending.
    window : int or duration
        A number of test points (1 refits before every point), or a duration
        (``pandas.Timedelta``, ``datetime.timedelta`` or a string such as ``"7D"``): windows
        then start at the first test time and cover ``[t0 + j * d, t0 + (j + 1) * d)``; empty
        ones are skipped.

    Returns
    -------
    numpy.ndarray
        The window number (0, 1, ... without gaps) of each test point, as int64.

    Raises
    ------
    ConfigError
        For a number below 1 or anything that is not a positive duration.
    """
    n = len(times)
    if isinstance(window, (int, np.integer)) and not isinstance(window, bool):
        return np.arange(n) // check_int("window", window, minimum=1, owner="replay")
    seconds = duration_seconds(window)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    raw = np.floor((times - times[0]) / seconds).astype(np.int64)
    return np.unique(raw, return_inverse=True)[1].astype(np.int64)


def duration_seconds(window: Any) -> float:
    """The seconds of a positive duration given as a Timedelta, timedelta or pandas string."""
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
    verbose: bool = False,
) -> ReplayResult:
    """Evaluate a model by time-aware replay of ``split.test``.

    Test events are ordered by (timestamp, user_id, track_id, row) and cut into windows (see
    :func:`window_ids`). In ``"replay"`` mode, before each window a fresh model from
    ``model_factory()`` is trained on everything known before it: ``split.train`` plus the test
    events of earlier windows; it then predicts the top-``k`` for the window's users, whose
    window events are the relevant items. ``"static"`` trains once on ``split.train``.
    ``"both"`` reports the two side by side, with ``delta`` = replay - static (higher is
    better for ranking metrics, lower for rating errors). Rating errors are added when the
    model has ``predict_ratings`` and the test events carry a ``rating``.

    Parameters
    ----------
    model_factory : callable
        Returns a fresh, untrained model (e.g. the model class).
    split : Split
        The train/test events, with a ``timestamp`` column on both sides.
    window : int or duration
        A number of test points per window, or a duration such as ``"7D"``.
    k : int
        Length of the ranked lists.
    metrics : sequence of str
        Ranking and catalog metrics by name.
    mode : {"both", "replay", "static"}
        Which fits to evaluate.
    relevance_threshold : float, optional
        A test event is relevant when its rating is at least this; ``None``: every event is.
    aggregate : str
        How ranking metrics are averaged: ``"user"``, ``"item"`` or ``"global"``.
    strict_time : bool
        Train the replay model only on events strictly earlier than the window's first event
        (which also drops train events from the future of a per-user split).
    train_kwargs : dict, optional
        Keyword arguments of ``model.train``.
    audit : bool
        Attach the split's leakage audit.
    progress : bool
        Show a progress bar over the windows.
    verbose : bool
        Print the result as tables.

    Returns
    -------
    ReplayResult
        Per-window and overall metrics of each mode, the settings and the audit.

    Raises
    ------
    ConfigError
        For an invalid ``mode``, ``k`` or ``window``, a ``model_factory`` that is not
        callable, a ``split`` that is not a ``Split``, or an empty test set.
    DataError
        When the train or test events lack ``user_id``, ``track_id`` or ``timestamp``.
    PredictionError
        When the model's predictions or rating predictions cannot be scored.
    """
    _check_replay(model_factory, split, mode)
    k = check_k(k, owner="replay")
    train_kwargs = dict(train_kwargs or {})
    modes = ["static", "replay"] if mode == "both" else [mode]
    test, times = _time_ordered(split.test)
    bounds = _window_bounds(window_ids(times, window))
    run = _Replay(model_factory=model_factory, train_kwargs=train_kwargs, train=split.train,
                  test=test, times=times, train_times=time_values(split.train["timestamp"]),
                  k=k, strict_time=strict_time, scale=rating_scale(split),
                  options=_score_options(split, k, metrics, relevance_threshold, aggregate))
    rows, units = run.windows(modes, bounds, progress)
    params = {"window": window if isinstance(window, (int, str)) else str(window),
              "n_windows": len(bounds) - 1, "k": k, "metrics": list(metrics), "mode": mode,
              "relevance_threshold": relevance_threshold, "aggregate": aggregate,
              "strict_time": bool(strict_time), "split": dict(split.params)}
    result = ReplayResult(per_window=pd.DataFrame(rows),
                          overall=_overall(modes, units, run.options, run.scale), params=params,
                          audit=audit_leakage(split) if audit else None)
    if verbose:
        show(result)
    return result


def _window_bounds(wid: np.ndarray) -> np.ndarray:
    """The first test point of each window, then one past the last point."""
    return np.searchsorted(wid, np.arange(int(wid.max()) + 2))


def _score_options(split: Split, k: int, metrics: Sequence[str],
                   relevance_threshold: float | None, aggregate: str) -> dict[str, Any]:
    """The keyword arguments of ``score_predictions`` shared by every window and mode."""
    # Coverage and popularity bias use the items and popularity of all the split's events.
    catalog = pd.concat([split.train[["track_id"]], split.test[["track_id"]]])
    return {"k": k, "metrics": metrics, "relevance_threshold": relevance_threshold,
            "aggregate": aggregate, "train": catalog}


@dataclass
class _Units:
    """Each window's test events, and each mode's predictions and predicted ratings for it.

    The overall scores treat every (window, user) pair as one unit, so the windows' parts are
    kept rather than merged.
    """

    tests: list[pd.DataFrame] = field(default_factory=list)
    preds: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    ratings: dict[str, list[np.ndarray]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Replay:
    """What every window of one replay shares: the model factory, the events and the options."""

    model_factory: Callable[[], Any]
    train_kwargs: dict[str, Any]
    train: pd.DataFrame
    #: the test events in time order, and their times
    test: pd.DataFrame
    times: np.ndarray
    train_times: np.ndarray
    k: int
    strict_time: bool
    scale: tuple[float, float]
    options: dict[str, Any]

    def fit(self, history: pd.DataFrame) -> Any:
        """A fresh model trained on ``history``."""
        model = self.model_factory()
        model.train(history, **self.train_kwargs)
        return model

    def windows(self, modes: list[str], bounds: np.ndarray,
                progress: bool) -> tuple[list[dict[str, Any]], _Units]:
        """Score every window in each mode: one row per window, and the parts of the units."""
        static = None
        if "static" in modes:
            model = self.fit(self.train)
            users = sorted_unique(self.test["user_id"].to_numpy())
            static = model, checked_predictions(model, users, self.k)
        rows: list[dict[str, Any]] = []
        units = _Units(preds={m: [] for m in modes}, ratings={m: [] for m in modes})
        for w in _windows(len(bounds) - 1, progress):
            rows.append(self._window(w, bounds[w], bounds[w + 1], modes, static, units))
        return rows, units

    def _window(self, w: int, lo: int, hi: int, modes: list[str],
                static: tuple[Any, pd.DataFrame] | None, units: _Units) -> dict[str, Any]:
        """The row of window ``w`` (test points ``lo:hi``); adds its parts to ``units``."""
        part = self.test.iloc[lo:hi]
        users = sorted_unique(part["user_id"].to_numpy())
        row: dict[str, Any] = {"window": w, "start": self.times[lo].item(),
                               "end": self.times[hi - 1].item(), "n_points": int(hi - lo),
                               "n_users": len(users)}
        for m in modes:
            if m == "static" and static is not None:
                model, preds = static[0], static[1].loc[users]
            else:
                history = _history(self.train, self.test, self.train_times, self.times, lo,
                                   self.strict_time)
                row["history_events"] = len(history)
                model = self.fit(history)
                preds = checked_predictions(model, users, self.k)
            scores, predicted = _window_scores(model, preds, part, self.options, self.scale)
            if predicted is not None:
                units.ratings[m].append(predicted)
            for name, value in scores.items():
                row[f"{m}/{name}"] = value
            units.preds[m].append(preds)
        units.tests.append(part)
        return row


def _check_replay(model_factory: Any, split: Any, mode: Any) -> None:
    """Nothing; raises unless the arguments describe a replay that can run."""
    check_choice("mode", mode, MODES, owner="replay")
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


def _time_ordered(test: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The test events sorted by (time, user, item, row), and their times."""
    times = time_values(test["timestamp"])
    order = np.lexsort((np.arange(len(test)), test["track_id"].to_numpy(),
                        test["user_id"].to_numpy(), times))
    return test.iloc[order], times[order]


def _windows(n_windows: int, progress: bool) -> Iterable[int]:
    """The window numbers, behind a progress bar when asked."""
    if not progress:
        return range(n_windows)
    from tqdm.auto import tqdm  # only for progress bars; tqdm.auto probes the notebook widgets

    return tqdm(range(n_windows), desc="replay windows", unit="window")


def _history(train: pd.DataFrame, test: pd.DataFrame, train_times: np.ndarray,
             times: np.ndarray, lo: int, strict_time: bool) -> pd.DataFrame:
    """What the replay model knows before the window starting at test point ``lo``."""
    history = pd.concat([train, test.iloc[:lo]])
    if strict_time:
        h_times = np.r_[train_times, times[:lo]]
        history = history[h_times < times[lo]]
    return history


def _window_scores(model: Any, preds: pd.DataFrame, part: pd.DataFrame, options: dict,
                   scale: tuple[float, float]) -> tuple[dict[str, float], np.ndarray | None]:
    """The window's metrics (with rating errors when the model predicts ratings), and the
    predicted ratings (None without them)."""
    scores = score_predictions(preds, part, **options)
    if not (supports_ratings(model) and "rating" in part.columns):
        return scores, None
    predicted = predicted_ratings(model, part)
    scores.update(rating_errors_from(predicted, part["rating"].to_numpy(np.float64),
                                     rating_range=scale))
    return scores, predicted


def _overall(modes: list[str], units: _Units, options: dict,
             scale: tuple[float, float]) -> dict[str, dict[str, float]]:
    """Each mode's metrics over every (window, user) unit, plus ``delta`` when both ran."""
    unit_test = _units(units.tests)
    overall = {}
    for m in modes:
        preds = pd.concat(units.preds[m], ignore_index=True)
        preds.index = pd.RangeIndex(len(preds), name="user_id")
        scores = score_predictions(preds, unit_test, **options)
        if units.ratings[m]:
            scores.update(rating_errors_from(np.concatenate(units.ratings[m]),
                                             unit_test["rating"].to_numpy(np.float64),
                                             rating_range=scale))
        overall[m] = scores
    if len(modes) == 2:
        overall["delta"] = {name: overall["replay"][name] - overall["static"][name]
                            for name in overall["static"] if name in overall["replay"]}
    return overall


def _units(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate window test events, renumbering users as (window, user) units 0, 1, ..."""
    frames, base = [], 0
    for part in parts:
        _, inv = np.unique(part["user_id"].to_numpy(), return_inverse=True)
        frames.append(part.assign(user_id=inv + base))
        base += int(inv.max()) + 1
    return pd.concat(frames, ignore_index=True)
