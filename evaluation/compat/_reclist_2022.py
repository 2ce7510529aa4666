"""``EvalRSRecList`` as the 2022 path (``from evaluation.EvalRSRecList import EvalRSRecList``)
and the 2023 module ``EvalRSReclist`` give it."""

from __future__ import annotations

from evaluation.challenge import EvalRSRecList
from evaluation.compat._helpers import RecListHelpers2022


class EvalRSRecList2022(RecListHelpers2022, EvalRSRecList):
    """The harness's ``EvalRSRecList`` with the 2022 names and helpers (``_x_test``,
    ``product_data``, ``_dense_repr``, ``miss_rate_at_k_slice``,
    ``miss_rate_equality_difference``, ``mrr_at_k_slice``, ``cosine_sim``); a test a subclass
    adds may return NaN or an infinity, as 2022 accepted: the value is kept as ``null`` with a
    ``ScoringWarning``."""

    nonfinite_results = "warn"
