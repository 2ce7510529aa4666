"""``RunResult``: what ``EvalRSRunner.evaluate`` returns and what it writes to results.json
(its printed summary is ``_summary``'s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from evaluation.contract import (
    AGGREGATE_KEY,
    COMPETITION_KEY,
    CONFIDENCE_INTERVALS_KEY,
    DATASET_KEY,
    ELIGIBLE_KEY,
    FOLDS_KEY,
    FORMAT_KEY,
    HARNESS_VERSION_KEY,
    K_KEY,
    LEADERBOARD_SCORE_KEY,
    LIMIT_KEY,
    MODEL_KEY,
    NOT_APPLICABLE_KEY,
    NOT_ELIGIBLE_BECAUSE_KEY,
    PHASE1_SCORE_KEY,
    PHASE2_SCORE_KEY,
    REFERENCES_KEY,
    RESULTS_FORMAT,
    RUN_HASH_KEY,
    RUN_ID_KEY,
    RUN_NAME_KEY,
    SEED_KEY,
    SETTINGS_KEY,
    TESTS_KEY,
)
from evaluation.runner._summary import summary


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
    name : str or None
        The run's own name (``evaluate(name=...)``, ``submission.py --name``); None when it
        was given none. It is not part of the run hash.
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
        The bootstrap intervals (None with ``n_boot=0``); a test that is not applicable has
        the interval None.
    not_applicable : dict of str to str
        The leaderboard tests the dataset cannot measure, each with the reason (empty when
        every test applies). Their values are None (null) in ``aggregate`` and in each fold's
        tests; the scores leave them out.
    rating_errors : dict or None
        Mean rating errors over the folds, for models that predict ratings.
    references : dict
        ``{"note"}`` and, when the phase-2 score was computed, ``{"name", "values"}``.
    eligible_for_upload : bool
    not_eligible_because : list of str
        Eligibility is relative to ``competition``.
    competition : dict or None
        The competition the run was made for: ``{"name", "source", "fingerprint",
        "fold_params", "harness_versions", "path"}`` (``fingerprint`` None: the official
        board, recognised by its source).
    settings : dict or None
        ``evaluate(settings=...)``: how the run was asked for (``submission.py`` records its
        model parameters, RecList, references and competition there).
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
    not_applicable: dict = field(default_factory=dict)
    competition: dict | None = None
    settings: dict | None = None
    path: Path | None = None
    submission: dict | None = None
    name: str | None = None

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
        head = {FORMAT_KEY: RESULTS_FORMAT, RUN_ID_KEY: self.run_id,
                RUN_HASH_KEY: self.run_hash,
                **({RUN_NAME_KEY: self.name} if self.name is not None else {}),
                MODEL_KEY: self.model,
                HARNESS_VERSION_KEY: self.harness_version, SEED_KEY: self.seed,
                LIMIT_KEY: self.limit, K_KEY: self.k, DATASET_KEY: self.dataset,
                TESTS_KEY: self.tests, "train_kwargs": self.train_kwargs,
                AGGREGATE_KEY: self.aggregate, NOT_APPLICABLE_KEY: self.not_applicable,
                PHASE1_SCORE_KEY: self.phase1_score,
                PHASE2_SCORE_KEY: self.leaderboard_score,
                LEADERBOARD_SCORE_KEY: self.leaderboard_score,
                CONFIDENCE_INTERVALS_KEY: self.confidence_intervals}
        if self.rating_errors is not None:
            head["rating_errors"] = self.rating_errors
        return {**head, REFERENCES_KEY: self.references,
                ELIGIBLE_KEY: self.eligible_for_upload,
                NOT_ELIGIBLE_BECAUSE_KEY: self.not_eligible_because,
                **({COMPETITION_KEY: self.competition} if self.competition is not None else {}),
                **({SETTINGS_KEY: self.settings} if self.settings is not None else {}),
                "environment": self.environment, FOLDS_KEY: self.folds, "runtime": self.runtime}

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
        """Yield the run's summary: the tests, how the score is made, then the scores."""
        yield from summary(self, options.max_width)
