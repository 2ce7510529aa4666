"""The comparison of a reproduced run with the uploaded one: test by test, fold by fold.

A value is *equal* when it differs from the uploaded one by at most ``EQUAL_TOLERANCE`` (what a
deterministic model gives on another machine: the same floating-point sums, perhaps in another
order); otherwise it is *within* when it lies inside the uploaded 95 % interval of that test
(``results.confidence_intervals.tests[test]``), which is how far a model with legitimate
randomness (threads, GPU kernels) may land from its upload. A submission is reproduced when
every leaderboard test of every fold is equal or within, and its model fingerprint (the digest
of its code and of its parameters before training) is the uploaded one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.participant import fingerprint_differences

#: The largest absolute difference that counts as equal.
EQUAL_TOLERANCE = 1e-9
#: The verdicts sent to the leaderboard.
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"


@dataclass(frozen=True)
class Row:
    """One test on one fold.

    Attributes
    ----------
    test : str
    fold : int
    uploaded, reproduced : float or None
        None when the value is missing (or not a finite number) on that side.
    difference : float or None
        ``reproduced - uploaded``.
    status : str
        "equal", "within" (inside the uploaded 95 % interval), "outside" or "missing".
    """

    test: str
    fold: int
    uploaded: float | None
    reproduced: float | None
    difference: float | None
    status: str

    @property
    def within(self) -> bool:
        """Whether the row counts as reproduced (equal or within the interval)."""
        return self.status in ("equal", "within")

    def as_json(self) -> dict[str, Any]:
        """The row as the leaderboard's reproduction endpoint takes it."""
        return {"test": self.test, "fold": self.fold, "uploaded": self.uploaded,
                "reproduced": self.reproduced, "difference": self.difference,
                "within": self.within}


@dataclass(frozen=True)
class Comparison:
    """The rows, the fingerprint check and the verdict.

    Attributes
    ----------
    rows : list of Row
    fingerprint_matches : bool
    reasons : list of str
        Why the submission is not reproduced (empty when it is).
    """

    rows: list[Row]
    fingerprint_matches: bool
    reasons: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """"reproduced" when there is no reason against it, else "not reproduced"."""
        return NOT_REPRODUCED if self.reasons else REPRODUCED


def classify(uploaded: Any, reproduced: Any, interval: Any) -> tuple[str, float | None]:
    """The status of one value and its difference (see ``Row.status``).

    ``interval`` is the uploaded ``[low, high]``; a missing or malformed interval makes a value
    that is not equal "outside" (there is nothing it could be within).
    """
    a, b = _number(uploaded), _number(reproduced)
    if a is None or b is None:
        return "missing", None
    difference = b - a
    if abs(difference) <= EQUAL_TOLERANCE:
        return "equal", difference
    bounds = _interval(interval)
    if bounds is not None and bounds[0] <= b <= bounds[1]:
        return "within", difference
    return "outside", difference


def compare_folds(uploaded: Mapping, reproduced: Mapping, tests: Sequence[str]) -> list[Row]:
    """A row per fold of the upload and test of ``tests``, in fold then test order.

    ``uploaded`` and ``reproduced`` are results.json dictionaries (``folds[f].tests``); the
    intervals come from the uploaded ``confidence_intervals.tests``.
    """
    intervals = (uploaded.get("confidence_intervals") or {}).get("tests") or {}
    mine = {f.get("fold"): f.get("tests") or {} for f in reproduced.get("folds") or []
            if isinstance(f, Mapping)}
    rows = []
    for fold in uploaded.get("folds") or []:
        number = fold.get("fold")
        theirs = fold.get("tests") or {}
        ours = mine.get(number, {})
        for test in tests:
            status, difference = classify(theirs.get(test), ours.get(test), intervals.get(test))
            rows.append(Row(test=test, fold=number, uploaded=_number(theirs.get(test)),
                            reproduced=_number(ours.get(test)), difference=difference,
                            status=status))
    return rows


def compare(uploaded: Mapping, reproduced: Mapping, tests: Sequence[str]) -> Comparison:
    """Compare two results.json dictionaries on ``tests`` (the leaderboard tests).

    The fingerprints are compared first; a mismatch makes the verdict "not reproduced"
    whatever the numbers.
    """
    fp_reasons = fingerprint_differences(_fingerprint(uploaded), _fingerprint(reproduced))
    rows = compare_folds(uploaded, reproduced, tests)
    reasons = list(fp_reasons)
    if not rows:
        reasons.append("the upload has no per-fold test values to compare")
    bad = [r for r in rows if not r.within]
    if bad:
        shown = ", ".join(f"{r.test} on fold {r.fold} ({r.status})" for r in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        reasons.append(f"{len(bad)} of {len(rows)} values neither equal (to {EQUAL_TOLERANCE:g}) "
                       f"nor within the uploaded 95 % interval: {shown}{more}")
    return Comparison(rows=rows, fingerprint_matches=not fp_reasons, reasons=reasons)


def _fingerprint(results: Mapping) -> Any:
    model = results.get("model")
    return model.get("fingerprint") if isinstance(model, Mapping) else None


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _interval(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        return None
    low, high = _number(value[0]), _number(value[1])
    return None if low is None or high is None else (low, high)
