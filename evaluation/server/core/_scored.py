"""A scoring job's report, turned into the board's numbers of a submission.

A scoring job (an organizer's worker) scores a submission's uploaded predictions with the
organizers' data and the harness's own fold scorer, and sends per fold the nine leaderboard
tests and every user's values (the blob of :func:`evaluation.challenge.encode_user_values`),
the leaderboard tests the data cannot measure, and the interval the participant's run shows:
the runner's user-level bootstrap (:func:`evaluation.challenge.bootstrap`) of the full-precision
values with the run's own ``n_boot``, seed and references. Here the report is checked (the
blob read against the declared folds, the tests against the values, as an upload's would be)
and the row's numbers made from it: the scores with the phase's references
(:func:`recompute`), and that interval when the run's references are the phase's; with other
references, the same bootstrap (same ``n_boot`` and seed) of the blob's values with the
phase's (its float32 values move the bounds by about 1e-7 at most).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from evaluation._util.jsonable import json_sha256
from evaluation.challenge import LEADERBOARD_TESTS, References, bootstrap
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core._scoring import Scores, recompute
from evaluation.server.core._user_values import CheckedValues, check_agreement, read_blob

#: The most replicates a report's interval may name, and the runner's default.
MAX_N_BOOT = 10_000
DEFAULT_N_BOOT = 500  # the runner's (evaluation.runner.DEFAULT_N_BOOT)


@dataclass(frozen=True)
class Scored:
    """A submission's numbers as a scoring job computed them: the scores (their interval the
    runner's) and the per-user values, checked."""

    scores: Scores
    values: CheckedValues


def read_scored(report: Any, references: References) -> Scored:
    """The numbers of a scoring job's ``report`` (see the module).

    Parameters
    ----------
    report : Any
        ``{"fold_tests": [{test: value}, ...], "user_values": base64 blob, "k": int,
        "not_applicable": {test: reason}, "interval": {"low", "high", "n_boot", "seed",
        "references"} or None}`` (``references``: the scoring parts of the references the
        interval was computed with; None: the run recorded none).
    references : References
        The phase's.

    Raises
    ------
    SubmissionRejected
        422 naming the part of the report that is not as described.
    """
    if not isinstance(report, Mapping):
        raise SubmissionRejected(422, "a scoring report must be an object")
    fold_tests = report.get("fold_tests")
    if not isinstance(fold_tests, list) or not all(isinstance(t, Mapping) for t in fold_tests):
        raise SubmissionRejected(422, "scored.fold_tests must be one object of tests per fold")
    skip = report.get("not_applicable") or {}
    if not isinstance(skip, Mapping) or not set(skip) <= set(LEADERBOARD_TESTS):
        raise SubmissionRejected(422, "scored.not_applicable must map leaderboard tests to "
                                      "reasons")
    values = read_blob(report.get("user_values"), {"k": report.get("k")},
                       where="scored.user_values", declared=True)
    folds = values.folds or []
    if len(folds) != len(fold_tests):
        raise SubmissionRejected(422, f"scored: {len(fold_tests)} folds of tests, "
                                      f"{len(folds)} of per-user values")
    check_agreement(folds, fold_tests, what="scored")
    scores = recompute(fold_tests, references)
    low, high, n_boot, seed, refs = _interval(report.get("interval"))
    if refs != scores.references_sha256:  # computed with other references (or none)
        try:
            found = bootstrap([f.scores for f in folds], references, n_boot=n_boot, seed=seed,
                              not_applicable=dict(skip)).get("phase2_score")
        except ConfigError as exc:
            raise SubmissionRejected(422, f"scored: {exc}") from None
        if found is None:
            raise SubmissionRejected(422, "scored: the values give no interval of the "
                                          "leaderboard score")
        low, high = float(found[0]), float(found[1])
    return Scored(scores=replace(scores, interval=(low, high)), values=values)


def _interval(value: Any) -> tuple[float, float, int, int, str]:
    """A report's interval: (low, high, n_boot, seed, the content hash of its references);
    without one, the runner's default replicates and seed 0, and no references."""
    if value is None:
        return math.nan, math.nan, DEFAULT_N_BOOT, 0, ""
    data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    low: Any = data.get("low")
    high: Any = data.get("high")
    n_boot: Any = data.get("n_boot")
    seed: Any = data.get("seed")
    refs: Any = data.get("references")
    if not (_number(low) and _number(high) and low <= high and _int_in(n_boot, 2, MAX_N_BOOT)
            and _int_in(seed, 0, 2**63 - 1) and isinstance(refs, Mapping)):
        raise SubmissionRejected(422, "scored.interval must give low <= high (numbers), n_boot "
                                      f"(2 to {MAX_N_BOOT}), seed (>= 0) and the references "
                                      "(an object)")
    return float(low), float(high), int(n_boot), int(seed), json_sha256(dict(refs))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
