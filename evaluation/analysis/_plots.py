"""Figures of a run and of a comparison, as matplotlib ``Figure`` objects.

- :func:`plot_tests`: the nine leaderboard tests, each fold's value and the mean over folds
  with its bootstrap interval;
- :func:`plot_slices`: the miss rate of every group of every MRED slice with an interval, so
  that a reader sees which group a model fails;
- :func:`plot_score_distribution`: the leaderboard score's bootstrap replicates, its point
  estimate and interval;
- :func:`forest_plot`: the differences of a comparison to its baseline, with their intervals,
  significance after the multiple-testing correction marked.

The figures are built without pyplot (no global state, no display needed) at fixed sizes;
:func:`png_bytes` renders one to PNG without a timestamp or software tag, so the same run
gives the same bytes. matplotlib is imported on first use: ``import evaluation`` stays light.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.analysis._groups import (
    Replicates,
    replicates,
    score_replicates,
    slice_table,
)
from evaluation.analysis._results import LoadedRun, load_results
from evaluation.challenge import LEADERBOARD_TESTS, MRED_SLICES, References, UserScores
from evaluation.contract import run_label, run_name
from evaluation.errors import ConfigError

#: Resolution of the PNGs (figure sizes are in inches).
DPI = 100
#: Replicates of the figures' bootstrap when a run stored no intervals (``n_boot=0``).
DEFAULT_N_BOOT = 1000

_FOLD_COLOUR = "#8c8c8c"
_MEAN_COLOUR = "#1f4e79"
_ABOVE, _BELOW, _NEUTRAL = "#c0392b", "#2471a3", "#555555"


# --------------------------------------------------------------------------- a run's data


@dataclass
class RunData:
    """What the figures read of one run: its results and, on demand, its per-user arrays."""

    run_dir: Path | None
    results: dict
    references: References | None = None
    _loader: Any = None
    _scores: list[UserScores] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The run's name, else its model's name."""
        return run_name(self.results)

    @property
    def label(self) -> str:
        """The run's name with its model's parameters."""
        return run_label(self.results)

    @property
    def run_id(self) -> str:
        """The run's id (its directory's name)."""
        return str(self.results.get("run_id", "?"))

    @property
    def intervals(self) -> dict:
        """The run's bootstrap intervals (empty without)."""
        return self.results.get("confidence_intervals") or {}

    def scores(self) -> list[UserScores]:
        """The per-user contributions of every fold (read once)."""
        if self._scores is None:
            self._scores = [self._loader(f["fold"]) for f in self.results["folds"]]
        return self._scores


def run_data(run) -> RunData:
    """``run`` (a loaded run, a run directory or its ``results.json``) as :class:`RunData`.

    Raises
    ------
    ConfigError
        When ``run`` is not a run, or its files are missing or do not match their checksums.
    """
    if isinstance(run, RunData):
        return run
    if isinstance(run, (str, os.PathLike)):
        run = load_results(run)
    if not isinstance(run, LoadedRun):
        raise ConfigError(f"expected a run (a LoadedRun from load_results, or a run "
                          f"directory), got {type(run).__name__}.")
    return RunData(run.run_dir, run.results, run.references, run.user_scores)


# --------------------------------------------------------------------------- rendering


def png_bytes(fig) -> bytes:
    """``fig`` as PNG bytes: fixed resolution, no timestamp or software tag in the file."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _figure(width: float, height: float):
    """A new figure (no pyplot: nothing global is touched) with an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _fmt(value) -> str:
    """A number to 4 significant digits ("n/a" for None/NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4g}"


def _number(value) -> float:
    """``value`` as a float; NaN when it is not a number (a test not applicable to a fold)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


# --------------------------------------------------------------------------- the nine tests


def plot_tests(run):
    """The nine leaderboard tests: each fold's value, and the mean with its interval.

    Parameters
    ----------
    run : LoadedRun, str or os.PathLike
        A run (``load_results``) or its directory.

    Returns
    -------
    matplotlib.figure.Figure
        A 3 x 3 grid, one panel per test (title: the test). Grey dots: the folds; the dark
        marker and bar: the mean over folds and its bootstrap interval (the run's
        ``confidence_intervals``), drawn dashed and starred where the run flags it unreliable.
    """
    data = run_data(run)
    folds = data.results["folds"]
    means = data.results["aggregate"]["mean"]
    ci = data.intervals
    flagged = set(ci.get("bias_dominated", []))
    fig = _figure(10.0, 8.0)
    axes = fig.subplots(3, 3)
    x_folds = np.arange(len(folds), dtype=float)
    x_mean = len(folds) + 0.5
    for ax, test in zip(axes.ravel(), LEADERBOARD_TESTS):
        values = [_number(f["tests"].get(test)) for f in folds]
        mean = _number(means.get(test))
        interval = (ci.get("tests") or {}).get(test)
        ax.set_title(test + (" *" if test in flagged else ""), fontsize=10)
        ax.plot(x_folds, values, "o", color=_FOLD_COLOUR, markersize=5, gid="folds",
                label="fold")
        if interval is not None:
            bar = ax.errorbar([x_mean], [mean], yerr=[[mean - interval[0]], [interval[1] - mean]],
                              fmt="D", color=_MEAN_COLOUR, capsize=4, markersize=6,
                              label="mean, 95% interval")
            bar.lines[2][0].set_gid("interval")
            if test in flagged:
                bar.lines[2][0].set_linestyle("--")
        else:
            ax.plot([x_mean], [mean], "D", color=_MEAN_COLOUR, markersize=6, label="mean")
        ax.set_gid("mean")
        if all(math.isnan(v) for v in [*values, mean]):
            ax.text(0.5, 0.5, "not applicable", transform=ax.transAxes, ha="center",
                    va="center", color=_NEUTRAL)
        ax.set_xticks([*x_folds, x_mean], [*(str(f["fold"]) for f in folds), "mean"])
        ax.set_xlim(-0.6, x_mean + 0.6)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("fold", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("value (higher is better)", fontsize=9)
    level = ci.get("level", 0.95)
    note = (f"grey: each fold; dark: mean over folds with its {level:.0%} bootstrap interval "
            f"(n_boot={ci['n_boot']}, seed={ci['seed']})" if ci else
            "grey: each fold; dark: mean over folds (the run has no intervals: n_boot=0)")
    if flagged & set(LEADERBOARD_TESTS):
        note += "\n* dashed: resampling bias exceeds the spread (small groups), interval unreliable"
    fig.suptitle(f"{data.label}: the nine leaderboard tests (run {data.run_id})\n{note}",
                 fontsize=10)
    return fig


# --------------------------------------------------------------------------- slices


def plot_slices(run, *, n_boot: int | None = None, seed: int | None = None,
                level: float | None = None):
    """The miss rate of each group of each MRED slice, with a bootstrap interval.

    The rates are each group's miss rate averaged over the folds where it has users (the way
    the tests are averaged); the intervals are percentile intervals of a bootstrap over test
    users within folds with the run's resamples (its ``n_boot`` and seed, unless given).

    Parameters
    ----------
    run : LoadedRun, str or os.PathLike
        A run (``load_results``) or its directory.
    n_boot, seed : int, optional
        The bootstrap's replicates and seed (default: the run's; 1000 and the run's seed for a
        run without intervals).
    level : float, optional
        Coverage of the intervals (default: the run's, else 0.95).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per MRED test (title: the test, its slice and its value), one row per group
        (``label (n=users)``), the slice's overall miss rate as a dashed line with its interval
        shaded. Groups whose interval lies wholly above the overall rate are red (the model
        misses them more), wholly below blue, otherwise grey.
    """
    data = run_data(run)
    return draw_slices(data, figure_replicates(data, n_boot, seed), interval_level(data, level))


def interval_level(data: RunData, level: float | None) -> float:
    """The interval level: ``level``, else the run's, else 0.95."""
    level = data.intervals.get("level", 0.95) if level is None else level
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}.")
    return float(level)


def figure_replicates(data: RunData, n_boot: int | None, seed: int | None) -> Replicates:
    """The figures' bootstrap of ``data``: the run's settings unless given."""
    n_boot = data.intervals.get("n_boot", DEFAULT_N_BOOT) if n_boot is None else n_boot
    seed = data.intervals.get("seed", data.results.get("seed", 0)) if seed is None else seed
    return replicates(data.results["folds"], data.scores(), n_boot=n_boot, seed=seed)


def draw_slices(data: RunData, reps: Replicates, level: float):
    """The slices figure of ``data`` from its replicates."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    table = slice_table(reps, level)
    tests = list(reps.groups)
    if not tests:
        raise ConfigError(f"run {data.run_id}: no MRED test has groups in every fold, so "
                          f"there is no miss rate per group to plot.")
    sizes = [len(reps.groups[t].labels) for t in tests]
    fig = _figure(8.0, 1.2 + sum(0.32 * n + 0.75 for n in sizes))
    axes = fig.subplots(len(tests), 1, sharex=True, height_ratios=[n + 1.5 for n in sizes])
    axes = np.atleast_1d(axes)
    means = data.results["aggregate"]["mean"]
    for ax, test in zip(axes, tests):
        rows = table[table["test"] == test]
        groups, overall = rows.iloc[:-1], rows.iloc[-1]
        ax.axvspan(overall["ci_low"], overall["ci_high"], color=_NEUTRAL, alpha=0.12, lw=0)
        ax.axvline(overall["miss_rate"], color=_NEUTRAL, ls="--", lw=1, gid="overall")
        y = np.arange(len(groups))[::-1]
        colours = [_ABOVE if r.ci_low > overall["miss_rate"] else
                   _BELOW if r.ci_high < overall["miss_rate"] else _NEUTRAL
                   for r in groups.itertuples()]
        for yi, r, c in zip(y, groups.itertuples(), colours):
            ax.errorbar([r.miss_rate], [yi], xerr=[[r.miss_rate - r.ci_low],
                                                    [r.ci_high - r.miss_rate]],
                        fmt="o", color=c, capsize=3, markersize=5, gid="group")
        ax.set_yticks(y, [f"{r.label} (n={r.n_users})" for r in groups.itertuples()],
                      fontsize=8)
        ax.set_ylim(-0.7, len(groups) - 0.3)
        ax.set_title(f"{test} (slice: {MRED_SLICES[test]}): MRED = {_fmt(means.get(test))}",
                     fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    axes[-1].set_xlabel("miss rate (share of test users whose held-out track is not in the "
                        "top-k; lower is better)", fontsize=9)
    handles = [Line2D([], [], color=_ABOVE, marker="o", ls="", label="misses more than all "
                      "users"),
               Line2D([], [], color=_BELOW, marker="o", ls="", label="misses less than all "
                      "users"),
               Line2D([], [], color=_NEUTRAL, marker="o", ls="", label="interval overlaps"),
               Line2D([], [], color=_NEUTRAL, ls="--", label="all users"),
               Patch(color=_NEUTRAL, alpha=0.12, label="all users, interval")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle(f"{data.label}: miss rate per group (run {data.run_id})\nmean over folds, "
                 f"{level:.0%} percentile bootstrap interval (n_boot={reps.n_boot}, "
                 f"seed={reps.seed}); n: test users over all folds", fontsize=10)
    return fig


# --------------------------------------------------------------------------- the score


def plot_score_distribution(run, *, n_boot: int | None = None, seed: int | None = None):
    """The leaderboard score's bootstrap replicates, its point estimate and interval.

    The replicates are recomputed from the per-user arrays with the run's resamples (its
    ``n_boot`` and seed): they are the ones the run's interval was computed from. Without
    references the phase-1 score (the mean of the nine tests) is shown instead.

    Parameters
    ----------
    run : LoadedRun, str or os.PathLike
        A run (``load_results``) or its directory.
    n_boot, seed : int, optional
        The bootstrap's replicates and seed (default: the run's).

    Returns
    -------
    matplotlib.figure.Figure
        A histogram of the replicates, the point estimate (solid line) and, when the run has
        one, its interval (dashed lines, shaded); the legend gives the numbers.
    """
    data = run_data(run)
    return draw_score(data, figure_replicates(data, n_boot, seed))


def draw_score(data: RunData, reps: Replicates):
    """The score-distribution figure of ``data`` from its replicates."""
    refs = data.references
    key = "phase2_score" if refs is not None else "phase1_score"
    what = ("leaderboard score (phase 2)" if refs is not None
            else "phase-1 score (mean of the nine tests)")
    point = _number(data.results["aggregate"].get(key))
    values = score_replicates(reps, refs)
    values = values[np.isfinite(values)]
    same = reps.n_boot == data.intervals.get("n_boot") and reps.seed == data.intervals.get("seed")
    interval = data.intervals.get(key) if same else None
    fig = _figure(7.0, 4.8)
    ax = fig.subplots()
    ax.hist(values, bins=40, color="#9fb6cd", edgecolor="white", gid="replicates",
            label=f"bootstrap replicates ({len(values)})")
    ax.axvline(point, color=_MEAN_COLOUR, lw=2, gid="point", label=f"point estimate {_fmt(point)}")
    if interval is not None:
        level = data.intervals.get("level", 0.95)
        unreliable = key in data.intervals.get("bias_dominated", [])
        ax.axvspan(*interval, color=_MEAN_COLOUR, alpha=0.08, lw=0)
        for end in interval:
            ax.axvline(end, color=_MEAN_COLOUR, ls="--", lw=1, gid="interval")
        ax.lines[-1].set_label(f"{level:.0%} interval [{_fmt(interval[0])}, {_fmt(interval[1])}]"
                               + (" (unreliable: resampling bias exceeds the spread)"
                                  if unreliable else " (bias-corrected)"))
    ax.set_xlabel(what, fontsize=9)
    ax.set_ylabel("replicates", fontsize=9)
    fig.legend(loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    # the bias-corrected percentile interval shifts with the estimate's place among the
    # replicates: a reader who expects the central mass of the histogram is told why not
    corrected = ("\nthe interval is bias-corrected: it moves with where the estimate lies among "
                 "the replicates, so it need not sit on their bulk") if interval is not None \
        else ""
    missing = "" if interval is not None else (
        " (no interval: the run stored none)" if not data.intervals
        else " (the run's interval has other settings)")
    fig.suptitle(f"{data.label} (run {data.run_id})\nbootstrap distribution of the {what}\n"
                 f"users resampled within folds, n_boot={reps.n_boot}, seed={reps.seed}"
                 f"{missing}{corrected}", fontsize=9)
    return fig


# --------------------------------------------------------------------------- comparisons


def forest_plot(comparison, *, tests: Sequence[str] | None = None):
    """Differences to the baseline per test and model, with intervals and significance.

    Parameters
    ----------
    comparison : Comparison
        What ``compare`` returned.
    tests : sequence of str, optional
        The tests to show, in order (default: every test and score of the comparison).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per test (each on its own scale), one row per model: the difference
        (model - baseline) and its interval (dashed where the comparison flags it
        unreliable). Filled markers: significant after the comparison's correction (the
        score the standings rank by: told apart by them); hollow: not. The dashed vertical
        line marks no difference.
    """
    from matplotlib.lines import Line2D

    frame = comparison.to_frame()
    missing = {"model", "test", "difference", "ci_low", "ci_high", "significant"} \
        - set(frame.columns)
    if missing:
        raise ConfigError(f"forest_plot: the comparison's table lacks the columns "
                          f"{sorted(missing)}; pass what compare() returned.")
    order = list(dict.fromkeys(frame["test"])) if tests is None else list(tests)
    unknown = [t for t in order if t not in set(frame["test"])]
    if unknown or not order:
        raise ConfigError(f"forest_plot: tests {unknown or order} are not in the comparison "
                          f"(it has {list(dict.fromkeys(frame['test']))}).")
    key = "run_id" if "run_id" in frame.columns else "model"
    runs = list(dict.fromkeys(frame[key]))
    names = _run_labels(frame, key, runs)
    colours = _model_colours(len(runs))
    fig = _figure(7.5, 1.3 + len(order) * (0.3 + 0.25 * len(runs)))
    axes = np.atleast_1d(fig.subplots(len(order), 1))
    for ax, test in zip(axes, order):
        rows = frame[frame["test"] == test].set_index(key)
        for i, run in enumerate(runs):
            if run not in rows.index or not np.isfinite(rows.loc[run, "difference"]):
                continue
            _forest_row(ax, rows.loc[run], len(runs) - 1 - i, colours[i])
        ax.axvline(0.0, color=_NEUTRAL, ls="--", lw=1)
        ax.set_yticks(range(len(runs)), names[::-1] if len(runs) > 1 else [""], fontsize=8)
        ax.set_ylim(-0.6, len(runs) - 0.4)
        ax.set_ylabel(test, rotation=0, ha="right", va="center", fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    alpha = getattr(comparison, "alpha", None)
    standings = getattr(comparison, "standings", None)
    # the score the standings rank by is marked as they tell the runs apart, as its tiers
    ranking = f"; {standings['score']}: as the standings" if standings else ""
    handles = [Line2D([], [], color=_NEUTRAL, marker="o", ls="",
                      label="significant after Holm" + (f" (alpha={alpha:g}{ranking})"
                                                        if alpha else "")),
               Line2D([], [], color=_NEUTRAL, marker="o", mfc="white", ls="",
                      label="not significant")]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    base = getattr(comparison, "baseline", None)
    base_name = getattr(base, "label", None) or str(base or "the baseline")
    who = f"{names[0]} - {base_name}" if len(runs) == 1 else f"model - {base_name}"
    fig.suptitle(f"Difference to the baseline {base_name} ({who}; every test: higher is "
                 f"better)\nbars: {_comparison_level(comparison):.0%} paired bootstrap "
                 f"intervals, not corrected; each panel on its own scale", fontsize=9)
    return fig


def _forest_row(ax, row, y: float, colour) -> None:
    """One model's difference on one test: marker (filled if significant) and interval."""
    sig = bool(row["significant"])
    diff = row["difference"]
    low = row["ci_low"] if np.isfinite(row["ci_low"]) else diff
    high = row["ci_high"] if np.isfinite(row["ci_high"]) else diff
    bar = ax.errorbar([diff], [y], xerr=[[diff - low], [high - diff]], fmt="o", color=colour,
                      mfc=colour if sig else "white", capsize=3, markersize=6,
                      gid="significant" if sig else "not significant")
    bar.lines[2][0].set_gid("interval")
    if bool(row.get("bias_dominated", False)):
        bar.lines[2][0].set_linestyle("--")


def _run_labels(frame, key: str, runs: list) -> list[str]:
    """Each compared run's label: its name and parameters (its model name in a table
    without them), with the run id where labels repeat."""
    names = [_row_label(frame.loc[frame[key] == r].iloc[0]) for r in runs]
    return [f"{n} ({r})" if names.count(n) > 1 else n for n, r in zip(names, runs)]


def _row_label(row) -> str:
    """A comparison row's run: ``name (params)``, or its model without those columns."""
    name, params = row.get("name"), row.get("params")
    name = name if isinstance(name, str) else str(row["model"])
    return name + (f" ({params})" if isinstance(params, str) and params else "")


def _model_colours(n: int) -> list:
    """``n`` distinguishable colours (matplotlib's tab10 cycle)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def _comparison_level(comparison) -> float:
    """The comparison's interval level (0.95 unless it says otherwise)."""
    level = getattr(comparison, "level", 0.95)
    return float(level) if isinstance(level, (int, float)) else 0.95
