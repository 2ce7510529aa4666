"""``results.json``: its one reader, which checks a results mapping and gives a typed view.

The runner writes the file (``RunResult.to_dict()``), the leaderboard reads uploads of it and
the analysis reads finished runs back; all three go through :func:`read_results`. Keys the
reader does not name are kept (a participant's RecList adds tests of its own, and the file
grows with the harness): ``ResultsRecord.raw`` is the whole mapping.

Read for a leaderboard (``leaderboard=`` the range of each leaderboard test), a run must also
be eligible for upload, measure every test, and have every leaderboard test of every fold a
finite number within the test's range.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.contract._keys import (
    AGGREGATE_KEY,
    CONFIDENCE_INTERVALS_KEY,
    DATASET_KEY,
    ELIGIBLE_KEY,
    FINGERPRINT_KEY,
    FOLD_KEY,
    FOLD_PARAMS_KEY,
    FOLDS_KEY,
    FORMAT_KEY,
    HARNESS_VERSION_KEY,
    K_KEY,
    LEADERBOARD_SCORE_KEY,
    LIMIT_KEY,
    MODEL_KEY,
    NOT_APPLICABLE_KEY,
    NOT_ELIGIBLE_BECAUSE_KEY,
    NUM_FOLDS_KEY,
    PHASE1_SCORE_KEY,
    PHASE2_SCORE_KEY,
    REFERENCES_KEY,
    RESULTS_FORMAT,
    RUN_HASH_KEY,
    RUN_ID_KEY,
    SEED_KEY,
    SOURCE_KEY,
    TESTS_KEY,
)
from evaluation.contract._problems import BAD, Checker, Path, RecordRefused
from evaluation.contract._text import escaped

#: A run id: the run directory's name.
RUN_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
#: A lowercase hex sha256 (run hash, dataset and model fingerprints).
SHA256_PATTERN = r"^[0-9a-f]{64}$"
#: The most folds a run may have (the official protocol has 4).
MAX_FOLDS = 64
#: The most tests a run may list.
MAX_TESTS = 512
#: How far past a range end a test value may lie: a cosine computed in floating point may
#: exceed 1 by a few ulps.
RANGE_SLACK = 1e-9
#: How much of an ineligible run's reasons a refusal quotes.
_SHOWN_REASONS = 3


@dataclass(frozen=True)
class DatasetRecord:
    """The data and folds a run used (``results["dataset"]``)."""

    fingerprint: str
    fold_params: dict = field(hash=False)
    num_folds: int
    source: str | None = None


@dataclass(frozen=True)
class ModelRecord:
    """The model a run evaluated (``results["model"]``); its fingerprint's ``sha256`` is
    checked, the rest kept."""

    name: str
    class_name: str
    fingerprint: dict = field(hash=False)


@dataclass(frozen=True)
class FoldRecord:
    """One fold of a run: its number and every test's value (leaderboard tests and others)."""

    fold: int
    tests: dict = field(hash=False)


@dataclass(frozen=True)
class ResultsRecord:
    """A checked ``results.json``.

    Attributes
    ----------
    format, run_id, run_hash, harness_version : str
    dataset : DatasetRecord
    tests : tuple of str
        The RecList's tests.
    folds : tuple of FoldRecord
        Each fold once, as the file lists them.
    eligible_for_upload : bool
    not_eligible_because : tuple of str
    model : ModelRecord
    seed, limit, k : int or None
    aggregate, confidence_intervals, references : dict or None
    phase1_score, phase2_score, leaderboard_score : float or None
        The scores the file claims.
    not_applicable : dict of str to str
        The tests the data cannot measure, each with its reason.
    raw : dict
        The whole mapping read, unknown keys included (not to be changed).
    """

    format: str
    run_id: str
    run_hash: str
    harness_version: str
    dataset: DatasetRecord
    tests: tuple[str, ...]
    folds: tuple[FoldRecord, ...]
    eligible_for_upload: bool
    not_eligible_because: tuple[str, ...]
    model: ModelRecord
    seed: int | None = None
    limit: int | None = None
    k: int | None = None
    aggregate: dict | None = field(default=None, hash=False)
    confidence_intervals: dict | None = field(default=None, hash=False)
    references: dict | None = field(default=None, hash=False)
    phase1_score: float | None = None
    phase2_score: float | None = None
    leaderboard_score: float | None = None
    not_applicable: dict = field(default_factory=dict, hash=False)
    raw: dict = field(default_factory=dict, repr=False, hash=False, compare=False)

    def fold_tests(self, tests: tuple[str, ...] | list[str]) -> list[dict[str, float]]:
        """The values of ``tests`` in each fold, in fold order (fold 0 first)."""
        folds = sorted(self.folds, key=lambda f: f.fold)
        return [{t: float(f.tests[t]) for t in tests} for f in folds]


def read_results(data: Any, *, leaderboard: Mapping[str, tuple[float, float]] | None = None,
                 path: Path = ()) -> ResultsRecord:
    """Check a results mapping and return its typed view.

    Parameters
    ----------
    data : Any
        The parsed ``results.json`` (or a submission's ``results``).
    leaderboard : mapping of str to (float, float), optional
        The range of each leaderboard test. Given, the run is read as a leaderboard reads an
        upload: it must be eligible, measure every test, and have each of these tests in
        every fold, a finite number within its range.
    path : tuple, optional
        Where ``data`` sits in a larger document (``("results",)`` in a submission): the
        problems' paths start with it.

    Returns
    -------
    ResultsRecord

    Raises
    ------
    RecordRefused
        Listing every problem: the field, the rule and the offending value.
    """
    check = Checker()
    record = check_results(check, data, leaderboard=leaderboard, path=path)
    if check.problems or record is BAD:
        raise RecordRefused(check.problems)
    return record


def check_results(check: Checker, data: Any, *,
                  leaderboard: Mapping[str, tuple[float, float]] | None,
                  path: Path) -> Any:
    """The ``ResultsRecord`` of ``data``, or ``BAD`` with its problems recorded in ``check``."""
    if not isinstance(data, dict):
        return check.fail(path, "Input should be a valid dictionary", data)
    if leaderboard is not None and data.get(NOT_APPLICABLE_KEY):
        # a run whose dataset cannot measure some tests has no value for them: refused with
        # that reason rather than with a "not a number" per missing value
        na = data[NOT_APPLICABLE_KEY]
        tests = sorted(na) if isinstance(na, dict) else na
        return check.fail(path, f"the run's dataset cannot measure the test(s) "
                                f"{escaped(str(tests))} (not applicable): a leaderboard scores "
                                f"every test; run on the competition's data")
    values = {
        FORMAT_KEY: _format(check, data, path),
        RUN_ID_KEY: check.text(data, RUN_ID_KEY, path, pattern=RUN_ID_PATTERN),
        RUN_HASH_KEY: check.text(data, RUN_HASH_KEY, path, pattern=SHA256_PATTERN),
        HARNESS_VERSION_KEY: check.text(data, HARNESS_VERSION_KEY, path, min_length=1,
                                        max_length=64),
        DATASET_KEY: _dataset(check, data, path),
        TESTS_KEY: _tests(check, data, path),
    }
    values[FOLDS_KEY] = _folds(check, data, path, values[DATASET_KEY], leaderboard)
    values.update({
        NOT_ELIGIBLE_BECAUSE_KEY: _reasons(check, data, path),
        ELIGIBLE_KEY: check.boolean(data, ELIGIBLE_KEY, path),
    })
    if leaderboard is not None and values[ELIGIBLE_KEY] is False:
        _ineligible(check, path, values[NOT_ELIGIBLE_BECAUSE_KEY])
    values.update({
        MODEL_KEY: _model(check, data, path),
        SEED_KEY: check.integer(data, SEED_KEY, path, optional=True),
        LIMIT_KEY: check.integer(data, LIMIT_KEY, path, optional=True, ge=0),
        K_KEY: check.integer(data, K_KEY, path, optional=True, ge=1),
        AGGREGATE_KEY: check.mapping(data, AGGREGATE_KEY, path, optional=True),
        PHASE1_SCORE_KEY: check.number(data, PHASE1_SCORE_KEY, path, optional=True),
        PHASE2_SCORE_KEY: check.number(data, PHASE2_SCORE_KEY, path, optional=True),
        LEADERBOARD_SCORE_KEY: check.number(data, LEADERBOARD_SCORE_KEY, path, optional=True),
        CONFIDENCE_INTERVALS_KEY: check.mapping(data, CONFIDENCE_INTERVALS_KEY, path,
                                                optional=True),
        REFERENCES_KEY: check.mapping(data, REFERENCES_KEY, path, optional=True),
        NOT_APPLICABLE_KEY: check.mapping(data, NOT_APPLICABLE_KEY, path, optional=True),
    })
    if any(v is BAD for v in values.values()):
        return BAD
    return ResultsRecord(
        format=values[FORMAT_KEY], run_id=values[RUN_ID_KEY], run_hash=values[RUN_HASH_KEY],
        harness_version=values[HARNESS_VERSION_KEY], dataset=values[DATASET_KEY],
        tests=tuple(values[TESTS_KEY]), folds=values[FOLDS_KEY],
        eligible_for_upload=values[ELIGIBLE_KEY],
        not_eligible_because=tuple(values[NOT_ELIGIBLE_BECAUSE_KEY]), model=values[MODEL_KEY],
        seed=values[SEED_KEY], limit=values[LIMIT_KEY], k=values[K_KEY],
        aggregate=values[AGGREGATE_KEY], confidence_intervals=values[CONFIDENCE_INTERVALS_KEY],
        references=values[REFERENCES_KEY], phase1_score=values[PHASE1_SCORE_KEY],
        phase2_score=values[PHASE2_SCORE_KEY], leaderboard_score=values[LEADERBOARD_SCORE_KEY],
        not_applicable=dict(values[NOT_APPLICABLE_KEY] or {}), raw=data)


def _format(check: Checker, data: dict, path: Path) -> Any:
    """The results layout, which must be this harness's."""
    value = check.text(data, FORMAT_KEY, path)
    if value is BAD or value == RESULTS_FORMAT:
        return value
    return check.fail(path + (FORMAT_KEY,), f"must be {RESULTS_FORMAT!r}, the results layout "
                                            f"this harness reads; use a run made by a harness "
                                            f"that writes it", value)


def _dataset(check: Checker, data: dict, path: Path) -> Any:
    """``results["dataset"]`` as a ``DatasetRecord``."""
    dataset = check.mapping(data, DATASET_KEY, path)
    if dataset is BAD:
        return BAD
    where = path + (DATASET_KEY,)
    parts = (check.text(dataset, FINGERPRINT_KEY, where, pattern=SHA256_PATTERN),
             check.mapping(dataset, FOLD_PARAMS_KEY, where),
             check.integer(dataset, NUM_FOLDS_KEY, where, ge=1, le=MAX_FOLDS),
             check.text(dataset, SOURCE_KEY, where, optional=True, min_length=1,
                        max_length=1024))
    if BAD in parts:
        return BAD
    fingerprint, fold_params, num_folds, source = parts
    return DatasetRecord(fingerprint=fingerprint, fold_params=fold_params, num_folds=num_folds,
                         source=source)


def _tests(check: Checker, data: dict, path: Path) -> Any:
    """The run's test names."""
    tests = check.items(data, TESTS_KEY, path, max_items=MAX_TESTS)
    if tests is BAD:
        return BAD
    where = path + (TESTS_KEY,)
    names = [check.text(dict(enumerate(tests)), i, where, min_length=1, max_length=128)
             for i in range(len(tests))]
    return BAD if BAD in names else names


def _reasons(check: Checker, data: dict, path: Path) -> Any:
    """Why the run is not eligible (a list of strings; none when absent)."""
    reasons = check.items(data, NOT_ELIGIBLE_BECAUSE_KEY, path, optional=True)
    if reasons is BAD or reasons is None:
        return reasons or []
    where = path + (NOT_ELIGIBLE_BECAUSE_KEY,)
    texts = [check.text(dict(enumerate(reasons)), i, where) for i in range(len(reasons))]
    return BAD if BAD in texts else texts


def _ineligible(check: Checker, path: Path, reasons: Any) -> None:
    """Record that the run is not eligible, quoting its first reasons."""
    listed = reasons if isinstance(reasons, list) else []
    why = "; ".join(escaped(r) for r in listed[:_SHOWN_REASONS]) or "no reason given"
    check.fail(path + (ELIGIBLE_KEY,), f"the run is not eligible ({why}): only runs of the "
                                       f"official protocol can be submitted; run again without "
                                       f"those settings", False)


def _model(check: Checker, data: dict, path: Path) -> Any:
    """``results["model"]`` as a ``ModelRecord``."""
    model = check.mapping(data, MODEL_KEY, path)
    if model is BAD:
        return BAD
    where = path + (MODEL_KEY,)
    name = check.text(model, "name", where, min_length=1, max_length=1024)
    class_name = check.text(model, "class", where, min_length=1, max_length=1024)
    fingerprint = check.mapping(model, FINGERPRINT_KEY, where)
    digest = BAD if fingerprint is BAD else check.text(
        fingerprint, "sha256", where + (FINGERPRINT_KEY,), pattern=SHA256_PATTERN)
    if BAD in (name, class_name, digest):
        return BAD
    return ModelRecord(name=name, class_name=class_name, fingerprint=fingerprint)


def _folds(check: Checker, data: dict, path: Path, dataset: Any,
           leaderboard: Mapping[str, tuple[float, float]] | None) -> Any:
    """The folds, each once: ``0 .. num_folds - 1`` when the dataset part is valid."""
    folds = check.items(data, FOLDS_KEY, path, min_items=1, max_items=MAX_FOLDS)
    if folds is BAD:
        return BAD
    where = path + (FOLDS_KEY,)
    records = [_fold(check, f, where + (i,), leaderboard) for i, f in enumerate(folds)]
    if BAD in records:
        return BAD
    if dataset is BAD:  # itself invalid, and reported
        return tuple(records)
    problem = _fold_numbers_problem([r.fold for r in records], dataset.num_folds)
    return check.fail(where, problem) if problem else tuple(records)


def _fold(check: Checker, fold: Any, where: Path,
          leaderboard: Mapping[str, tuple[float, float]] | None) -> Any:
    """One fold as a ``FoldRecord``; the leaderboard tests checked when ``leaderboard`` is
    given, any other test kept as it is."""
    if not isinstance(fold, dict):
        return check.fail(where, "Input should be a valid dictionary", fold)
    number = check.integer(fold, FOLD_KEY, where, ge=0)
    tests = check.mapping(fold, TESTS_KEY, where)
    if tests is not BAD and leaderboard is not None:
        tests_at = where + (TESTS_KEY,)
        values = [_test_value(check, tests, name, tests_at, bounds)
                  for name, bounds in leaderboard.items()]
        tests = BAD if BAD in values else tests
    if BAD in (number, tests):
        return BAD
    return FoldRecord(fold=number, tests=tests)


def _test_value(check: Checker, tests: dict, name: str, where: Path,
                bounds: tuple[float, float]) -> Any:
    """A leaderboard test's value: a finite number within ``bounds`` (and ``RANGE_SLACK``)."""
    value = check.number(tests, name, where)
    if value is BAD:
        return BAD
    low, high = bounds
    if not low - RANGE_SLACK <= value <= high + RANGE_SLACK:
        return check.fail(where + (name,), f"must lie in [{low:g}, {high:g}], the range of "
                                           f"{name}", value)
    return value


def _fold_numbers_problem(numbers: list[int], n: int) -> str | None:
    """Why the fold numbers are not ``0 .. n - 1`` each once (None when they are)."""
    seen: set[int] = set()
    for number in numbers:
        if number >= n:
            return f"fold {number} is outside 0..{n - 1} (dataset.num_folds is {n})"
        if number in seen:
            return f"fold {number} appears twice; a run has each fold 0..{n - 1} once"
        seen.add(number)
    missing = sorted(set(range(n)) - seen)
    if missing:
        return (f"fold(s) {missing} missing; dataset.num_folds is {n} and every fold "
                f"0..{n - 1} must be present")
    return None
