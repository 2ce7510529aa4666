"""``EvalRSRecList`` as ``from evaluation.EvalRSRecList import EvalRSRecList`` gives it."""

from __future__ import annotations

from evaluation.challenge import EvalRSRecList


class LegacyEvalRSRecList(EvalRSRecList):
    """The harness's ``EvalRSRecList`` with the 2022 handling of a test returning NaN.

    A 2022 custom RecList subclasses this one (through the 2022 module path). Its added
    tests may return NaN or an infinity, as 2022 accepted: the value is kept as ``null``
    with a ``ScoringWarning`` instead of stopping the run.
    """

    nonfinite_results = "warn"
