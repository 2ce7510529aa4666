"""``RunResult``: what ``EvalRSRunner.evaluate`` returns, what it writes to results.json, and
the printed summary of a run (the tests with their intervals, stage timings, the scores)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from rich.table import Table

#: Version of the results file layout.
RESULTS_FORMAT = "evalrs-results/1"


@dataclass(frozen=True)
class RunResult:
    """The results of one run of a model through every fold.

    ``to_dict()`` is the content of the run's ``results.json``; ``to_frame()`` tabulates the
    tests; printing it with rich (``rich.print(result)``) shows the summary the runner prints.

    Attributes
    ----------
    run_id, run_hash : str
        The run directory's name, and the hash of the data, folds, harness version and tests
        (equal hashes: comparable scores).
    model : dict
        ``{"name", "class", "fingerprint"}``.
    harness_version : str
    seed, limit, k : int
        The seed used, the test users per fold scored (0: all) and the list length.
    dataset : dict
        ``{"source", "fingerprint", "fold_params", "num_folds"}``.
    tests : list of str
        The RecList's tests.
    train_kwargs : dict
        ``repr`` of each training keyword argument.
    aggregate : dict
        The leaderboard aggregation over the folds (``evaluation.challenge.aggregate``): per-test
        ``mean`` and ``std``, ``phase1_score``, ``phase2_score``, ``gated``, ``normalised``.
    confidence_intervals : dict or None
        The bootstrap intervals (None with ``n_boot=0``).
    rating_errors : dict or None
        Mean rating errors over the folds, for models that predict ratings.
    references : dict
        ``{"note"}`` and, when the phase-2 score was computed, ``{"name", "values"}``.
    eligible_for_upload : bool
    not_eligible_because : list of str
    environment : dict
        Python, platform and library versions.
    folds : list of dict
        Each fold's tests, details, counts and stage timings.
    runtime : dict
        ``{"seconds"}`` of the whole run.
    path : Path or None
        The ``results.json`` written.
    submission : dict or None
        With ``evaluate(upload=True)``: ``{"uploaded", "outcome", "path", ...}``.
    """

    run_id: str
    run_hash: str
    model: dict
    harness_version: str
    seed: int
    limit: int
    k: int
    dataset: dict
    tests: list[str]
    train_kwargs: dict
    aggregate: dict
    confidence_intervals: dict | None
    references: dict
    eligible_for_upload: bool
    not_eligible_because: list[str]
    environment: dict
    folds: list[dict]
    runtime: dict
    rating_errors: dict | None = None
    path: Path | None = None
    submission: dict | None = None

    @property
    def phase1_score(self) -> float | None:
        """The mean of the leaderboard tests (``aggregate["phase1_score"]``)."""
        return self.aggregate["phase1_score"]

    @property
    def leaderboard_score(self) -> float | None:
        """The phase-2 score against the references; None without references."""
        return self.aggregate["phase2_score"]

    def to_dict(self) -> dict:
        """Return the results as JSON-ready data.

        Returns
        -------
        dict
            Exactly what the run wrote to ``results.json`` (the top-level ``phase1_score``,
            ``phase2_score`` and ``leaderboard_score`` of the file repeat the aggregate's).
        """
        head = {"format": RESULTS_FORMAT, "run_id": self.run_id, "run_hash": self.run_hash,
                "model": self.model, "harness_version": self.harness_version,
                "seed": self.seed, "limit": self.limit, "k": self.k, "dataset": self.dataset,
                "tests": self.tests, "train_kwargs": self.train_kwargs,
                "aggregate": self.aggregate, "phase1_score": self.phase1_score,
                "phase2_score": self.leaderboard_score,
                "leaderboard_score": self.leaderboard_score,
                "confidence_intervals": self.confidence_intervals}
        if self.rating_errors is not None:
            head["rating_errors"] = self.rating_errors
        return {**head, "references": self.references,
                "eligible_for_upload": self.eligible_for_upload,
                "not_eligible_because": self.not_eligible_because,
                "environment": self.environment, "folds": self.folds, "runtime": self.runtime}

    def to_frame(self) -> pd.DataFrame:
        """Tabulate the tests, one row per test.

        Returns
        -------
        pandas.DataFrame
            Indexed by test name, with the columns ``mean``, ``std``, ``ci_low``, ``ci_high``
            (NaN without intervals), ``bias_dominated`` (the interval is unreliable) and
            ``fold_0`` ... ``fold_<n-1>`` (each fold's value; NaN where a fold has none).
        """
        ci = self.confidence_intervals or {}
        intervals = ci.get("tests", {})
        flagged = set(ci.get("bias_dominated", []))
        rows = {}
        for name, mean in self.aggregate["mean"].items():
            low, high = intervals.get(name) or (None, None)
            row = {"mean": mean, "std": self.aggregate["std"][name], "ci_low": low,
                   "ci_high": high, "bias_dominated": name in flagged}
            for f in self.folds:
                value = f["tests"].get(name)
                row[f"fold_{f['fold']}"] = value if isinstance(value, (int, float)) else None
            rows[name] = row
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "test"
        numeric = [c for c in frame.columns if c != "bias_dominated"]
        frame[numeric] = frame[numeric].astype("float64")
        return frame

    def __rich_console__(self, console, options):
        """Yield the run's summary: the tables of tests and timings, then the scores."""
        yield from summary(self, options.max_width)

    def _legacy(self) -> dict:
        """The dict ``evaluate`` returned before ``RunResult``: the file plus path and upload."""
        out = self.to_dict()
        out["results_path"] = None if self.path is None else str(self.path)
        if self.submission is not None:
            out["submission"] = self.submission
        return out

    def __getitem__(self, key: str) -> Any:
        """Deprecated mapping access: ``result["key"]`` as the old results dict had it."""
        _warn_mapping(key)
        return self._legacy()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated mapping access: ``result.get("key", default)``."""
        _warn_mapping(key)
        return self._legacy().get(key, default)

    def __contains__(self, key: str) -> bool:
        """Deprecated mapping access: ``"key" in result``."""
        _warn_mapping(key)
        return key in self._legacy()


def _warn_mapping(key: str) -> None:
    """Warn that mapping access to a ``RunResult`` is going away."""
    warnings.warn(f"result[{key!r}]: evaluate() returns a RunResult; use its attributes "
                  f"(result.{_attribute(key)}) or result.to_dict() (mapping access will be "
                  f"removed in the next release)", DeprecationWarning, stacklevel=3)


def _attribute(key: str) -> str:
    """The ``RunResult`` attribute that replaces the old dict key ``key``."""
    return {"results_path": "path", "phase2_score": "leaderboard_score",
            "format": "to_dict()['format']"}.get(key, key)


# --------------------------------------------------------------------------- the summary


def summary(result: RunResult, width: int) -> Iterator[Table | str]:
    """Yield the summary of ``result`` for a console ``width`` characters wide.

    The per-fold columns are shown only when they fit. Strings are rich markup.
    """
    yield tests_table(result, per_fold=width >= 100 + 9 * len(result.folds))
    ci = result.confidence_intervals or {}
    if ci.get("bias_dominated"):
        yield ("* resampling bias exceeds the spread (small groups): the interval is "
               "unreliable; see confidence_intervals.bias_dominated")
    yield timing_table(result.folds)
    p1 = ci.get("phase1_score")
    yield (f"Phase-1 score (mean of the nine tests): {_fmt(result.phase1_score)}"
           + (f"  95% CI [{p1[0]:.6f}, {p1[1]:.6f}]" if p1 else ""))
    yield f"References: {result.references['note']}"
    if not result.eligible_for_upload:
        yield "[yellow]Not eligible for upload:[/yellow] " + "; ".join(
            result.not_eligible_because)
    yield _score_line(result)
    yield f"Results: {result.path}"


def tests_table(result: RunResult, per_fold: bool) -> Table:
    """The table of tests: mean, std, 95% interval and, if ``per_fold``, each fold's value."""
    ci = result.confidence_intervals or {}
    intervals = ci.get("tests", {})
    flagged = set(ci.get("bias_dominated", []))
    table = Table(title=f"EvalRS results: {result.model['name']}")
    table.add_column("Test", style="cyan", no_wrap=True)
    table.add_column("Mean", justify="right", style="green")
    table.add_column("Std", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    folds = result.folds if per_fold else []
    for f in folds:
        table.add_column(f"Fold {f['fold']}", justify="right")
    for name in result.aggregate["mean"]:
        interval = intervals.get(name)
        mark = " *" if name in flagged else ""
        cells = [name, _fmt(result.aggregate["mean"][name]), _fmt(result.aggregate["std"][name]),
                 f"[{interval[0]:.4f}, {interval[1]:.4f}]{mark}" if interval else ""]
        cells += [f"{f['tests'][name]:.4f}" if _is_number(f["tests"].get(name)) else ""
                  for f in folds]
        table.add_row(*cells)
    return table


def timing_table(folds: list[dict]) -> Table:
    """The table of seconds per stage and peak memory, one row per fold."""
    stages = list(folds[0]["runtime"]) if folds else []
    timing = Table(title="Seconds per stage; peak memory of the fold")
    timing.add_column("Fold")
    for s in stages:
        timing.add_column(s, justify="right")
    timing.add_column("peak MiB", justify="right")
    for f in folds:
        rt = f["runtime"]
        peaks = [rt[s]["peak_rss_mib"] for s in stages if rt[s]["peak_rss_mib"] is not None]
        timing.add_row(str(f["fold"]), *(f"{rt[s]['seconds']:.2f}" for s in stages),
                       f"{max(peaks):.0f}" if peaks else "n/a")
    return timing


def _score_line(result: RunResult) -> str:
    """The leaderboard score line (rich markup), with its interval when there is one."""
    score = result.leaderboard_score
    if score is None:
        return "LEADERBOARD SCORE: n/a (no phase-2 references for this dataset)"
    p2 = (result.confidence_intervals or {}).get("phase2_score")
    gated = " (HIT_RATE below the threshold)" if result.aggregate["gated"] else ""
    return (f"[bold]LEADERBOARD SCORE: {score}[/bold]{gated}"
            + (f"  95% CI [{p2[0]:.6f}, {p2[1]:.6f}]" if p2 else ""))


def _is_number(value) -> bool:
    """Whether ``value`` is an int or float (a test's value rather than a summary object)."""
    return isinstance(value, (int, float))


def _fmt(value) -> str:
    """``value`` to 4 decimals, or "n/a" for None."""
    return "n/a" if value is None else f"{value:.4f}"
