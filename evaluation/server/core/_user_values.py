"""The check of an upload's per-user values: they must add up to its per-fold tests.

An upload may carry, under ``user_values``, the per-user values of every fold (the blob of
:func:`evaluation.challenge.encode_user_values`, base64). The leaderboard reads them against
the run's own results (each fold's ``n_users`` and the run's ``k``), recomputes the nine tests
of each fold from them with the harness's own functions (``UserScores.tests``, with
``rr = 1 / rank``) and refuses the upload unless each agrees with the uploaded fold value:

* HIT_RATE, MRR and the MRED tests: equal up to floating-point summation,
  ``|uploaded - recomputed| <= 1e-9 * max(|uploaded|, |recomputed|) + 1e-12``;
* BEING_LESS_WRONG and LATENT_DIVERSITY, whose per-user values travel as float32: within the
  float32 rounding bound, ``|uploaded - recomputed| <= 2**-24 * mean(|v|) + 1e-12`` over the
  fold's values ``v`` that are not NaN (rounding each value to float32 moves it by at most
  ``2**-24`` of its magnitude, so their mean by at most that much of the mean magnitude).

A test with no user to measure is what the harness makes it (MRED 0.0; LATENT_DIVERSITY 0.0;
BEING_LESS_WRONG 1.0 without a miss, else 0.0) where the arrays give no number.

Every value is also checked against its test's range (:func:`check_ranges`): a forged cosine
at 1e6 is refused. An upload's values (a claim) are kept for the record and used for nothing
the board vouches for: only a scoring job's or a reproduction's values enter the statistics.
An upload without ``user_values`` (a client older than them) is accepted and stored as having
no per-user values.
The costs a run recorded per fold (read from each fold's ``runtime``) are kept either way, as
self-reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRED_TESTS,
    MRR,
    FoldUsers,
    decode_metric_values,
    decode_user_values,
    float32_bound,
    user_values_bytes,
)
from evaluation.contract import (
    COST_KEYS,
    FOLD_KEY,
    FOLDS_KEY,
    RANGE_SLACK,
    USER_VALUES_KEY,
    fold_cost,
)
from evaluation.errors import DataError, SubmissionRejected
from evaluation.server.core._schema import TEST_RANGES

#: HIT_RATE, MRR and MRED: the relative and absolute tolerance of summation.
REL_TOL = 1e-9
ABS_TOL = 1e-12
#: The tests whose per-user values travel as float32.
FLOAT32_TESTS = (BEING_LESS_WRONG, LATENT_DIVERSITY)


@dataclass(frozen=True)
class CheckedValues:
    """An upload's (or a reproduction's) per-user values, checked, ready to store.

    ``blob`` is None when none were sent; ``n_users`` and ``k`` are what it was read against;
    ``costs`` one ``{train_seconds, predict_seconds, peak_rss_mib}`` per fold, or None.
    """

    blob: bytes | None
    k: int | None
    n_users: list[int] | None
    users_sha256: list[str] | None
    costs: list[dict] | None
    folds: list[FoldUsers] | None = None


def fold_users(results: Mapping[str, Any]) -> list[int]:
    """Each fold's test users (``n_users``), fold 0 first, from a run's results.

    Raises
    ------
    SubmissionRejected
        422 when a fold lacks a positive integer ``n_users``.
    """
    folds = sorted(results[FOLDS_KEY], key=lambda f: f[FOLD_KEY])
    counts = [f.get("n_users") for f in folds]
    bad = [i for i, n in enumerate(counts)
           if isinstance(n, bool) or not isinstance(n, int) or n < 1]
    if bad:
        raise SubmissionRejected(
            422, f"results.folds (fold {bad[0]}): n_users {str(counts[bad[0]])[:20]!r} must be "
                 f"a positive integer to read the per-user values; upload the results the "
                 f"harness wrote")
    return counts


def read_uploaded(document: Mapping[str, Any], results: Mapping[str, Any],
                  fold_tests: Sequence[Mapping[str, float]]) -> CheckedValues:
    """An upload's per-user values and costs, checked against its per-fold tests.

    Parameters
    ----------
    document : mapping
        The upload (its optional ``user_values``).
    results : mapping
        Its results (each fold's ``n_users`` and ``cost``, the run's ``k``).
    fold_tests : sequence of mapping
        The uploaded leaderboard tests of each fold, fold 0 first.

    Returns
    -------
    CheckedValues
        ``blob`` None when the upload has no ``user_values``.

    Raises
    ------
    SubmissionRejected
        422 naming the fold and the rule: a blob that cannot be read (see
        :func:`evaluation.challenge.decode_user_values`), or whose values do not add up to a
        fold's uploaded test (the test, both values, the allowed difference and the fix).
    """
    costs = read_costs(results)
    text = document.get(USER_VALUES_KEY)
    if text is None:
        return CheckedValues(blob=None, k=None, n_users=None, users_sha256=None, costs=costs)
    values = read_blob(text, results, where=USER_VALUES_KEY)
    check_agreement(values.folds or [], fold_tests, what="uploaded")
    return CheckedValues(blob=values.blob, k=values.k, n_users=values.n_users,
                         users_sha256=values.users_sha256, costs=costs, folds=values.folds)


def read_blob(text: Any, results: Mapping[str, Any], *, where: str,
              declared: bool = False) -> CheckedValues:
    """A base64 blob of per-user values read against a run's folds (``n_users``, ``k``).

    ``declared``: the folds and users the blob declares (a trusted report's private folds,
    which the run's results do not describe), still within the blob format's bounds.

    Raises
    ------
    SubmissionRejected
        422 naming ``where`` and the problem.
    """
    counts = None if declared else fold_users(results)
    k = results.get("k")
    if isinstance(k, bool) or not isinstance(k, int):
        raise SubmissionRejected(422, f"{where}: per-user values need the run's k (results.k), "
                                      f"found {str(k)[:20]!r}")
    if not isinstance(text, str):
        raise SubmissionRejected(422, f"{where} must be base64 text (the blob the harness "
                                      f"writes), got a {type(text).__name__}")
    try:
        blob = user_values_bytes(text)
        folds = decode_user_values(blob, counts, k=k)
    except DataError as exc:
        raise SubmissionRejected(422, f"{where}: {exc}") from None
    check_ranges(folds, where=where)
    return CheckedValues(blob=blob, k=k, n_users=[len(f) for f in folds],
                         users_sha256=[f.users_sha256 for f in folds], costs=None, folds=folds)


def read_metric_blob(text: Any, results: Mapping[str, Any], *, where: str) -> CheckedValues:
    """A base64 blob of one metric's per-user values (a sampled-negative protocol's:
    :func:`evaluation.challenge.encode_metric_values`) read against a run's folds (their
    ``n_users``: such a protocol scores the official folds' test users).

    Raises
    ------
    SubmissionRejected
        422 naming ``where`` and the problem.
    """
    if not isinstance(text, str):
        raise SubmissionRejected(422, f"{where} must be base64 text (the blob the harness "
                                      f"writes), got a {type(text).__name__}")
    counts = fold_users(results)
    try:
        blob = user_values_bytes(text)
        values = decode_metric_values(blob, counts)
    except DataError as exc:
        raise SubmissionRejected(422, f"{where}: {exc}") from None
    return CheckedValues(blob=blob, k=None, n_users=values.n_users,
                         users_sha256=list(values.users_sha256), costs=None)


def check_ranges(folds: Sequence[FoldUsers], *, where: str) -> None:
    """Nothing when every user's value lies in its test's range; else 422 naming the fold,
    the test, the value and the range.

    A hit is 0 or 1 and a reciprocal rank in [0, 1] by the blob's format (a rank in
    ``1..k``); BEING_LESS_WRONG is a cosine, in [-1, 1], and LATENT_DIVERSITY in its test's
    range (``TEST_RANGES``), each within the contract's ``RANGE_SLACK`` for float32 rounding;
    NaN (a user left out) passes.
    """
    for number, fold in enumerate(folds):
        s = fold.scores
        checks = ((HIT_RATE, np.asarray(s.hit, dtype=np.float64), (0.0, 1.0)),
                  (MRR, np.asarray(s.rr, dtype=np.float64), (0.0, 1.0)),
                  (BEING_LESS_WRONG, np.asarray(s.blw, dtype=np.float64), (-1.0, 1.0)),
                  (LATENT_DIVERSITY, np.asarray(s.ld, dtype=np.float64),
                   TEST_RANGES[LATENT_DIVERSITY]))
        for test, values, (low, high) in checks:
            bad = (values < low - RANGE_SLACK) | (values > high + RANGE_SLACK)
            if bad.any():
                value = float(values[np.flatnonzero(bad)[0]])
                raise SubmissionRejected(
                    422, f"{where}, fold {number}: a user's {test} value {value!r} is outside "
                         f"the test's range [{low}, {high}]; per-user values are the "
                         f"harness's own: upload what it wrote, unedited")


def check_agreement(folds: Sequence[FoldUsers], fold_tests: Sequence[Mapping[str, float]],
                    *, what: str) -> None:
    """Nothing when every fold's tests recomputed from its per-user values agree with
    ``fold_tests`` (the rule of the module's description; a test a fold lacks is not
    compared); else SubmissionRejected (422) naming the first fold and test that do not, both
    values and the fix."""
    for number, (fold, tests) in enumerate(zip(folds, fold_tests)):
        recomputed = fold.scores.tests()
        for test in LEADERBOARD_TESTS:
            if tests.get(test) is None:  # a reproduction's table may lack a value
                continue
            claimed = float(tests[test])
            value = _as_harness(test, float(recomputed[test][0]), fold)
            allowed = _allowed(test, claimed, value, fold)
            if not abs(claimed - value) <= allowed:
                raise SubmissionRejected(
                    422, f"per-user values, fold {number}: they do not add up to the fold's "
                         f"{test}: {what} {claimed!r}, recomputed from the per-user values "
                         f"{value!r} (difference {abs(claimed - value):.3g}, allowed "
                         f"{allowed:.3g}); the arrays and the results come from one run: "
                         f"upload the submission.json the harness wrote, unedited")


def _allowed(test: str, claimed: float, value: float, fold: FoldUsers) -> float:
    """The difference allowed between a claimed test value and the recomputed one."""
    if test in FLOAT32_TESTS:
        values = fold.scores.blw if test == BEING_LESS_WRONG else fold.scores.ld
        return float32_bound(values) + ABS_TOL
    return REL_TOL * max(abs(claimed), abs(value)) + ABS_TOL


def _as_harness(test: str, value: float, fold: FoldUsers) -> float:
    """``value``, or where the arrays give no number (no user to measure) what the harness
    records then: MRED 0.0, LATENT_DIVERSITY 0.0, BEING_LESS_WRONG 1.0 without a miss."""
    if not math.isnan(value):
        return value
    if test == BEING_LESS_WRONG and not np.asarray(fold.scores.hit).all():
        return 0.0
    if test == BEING_LESS_WRONG:
        return 1.0
    if test == LATENT_DIVERSITY or test in MRED_TESTS:
        return 0.0
    return value


def read_costs(results: Mapping[str, Any]) -> list[dict] | None:
    """Each fold's self-reported costs (fold 0 first), read from its ``runtime``
    (:func:`evaluation.contract.fold_cost`; a value that is not a number in range is unknown,
    None); None when no fold records a runtime."""
    folds = sorted(results[FOLDS_KEY], key=lambda f: f[FOLD_KEY])
    costs = [fold_cost(f) for f in folds]
    if all(c is None for c in costs):
        return None
    return [c if c is not None else {k: None for k in COST_KEYS} for c in costs]
