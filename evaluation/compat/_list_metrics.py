"""The list-wise metrics of reclist 0.x's ``reclist.metrics.standard_metrics`` that reclist 2
dropped: hit rate and MRR over Python lists of predictions and targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["hit_rate_at_k_list", "hit_rate_at_k_nep", "mrr_at_k_list", "mrr_at_k_nep_list"]


def hit_rate_at_k_list(y_preds: Sequence[Sequence[Any]], y_test: Sequence[Sequence[Any]],
                       k: int = 3) -> float:
    """Share of cases whose first ``k`` predictions hold at least one of their targets.

    ``y_preds`` and ``y_test`` are lists of lists, paired by position; the share is over
    ``len(y_test)``.
    """
    hits = sum(1 for preds, targets in zip(y_preds, y_test)
               if not set(preds[:k]).isdisjoint(targets))
    return hits / len(y_test)


def hit_rate_at_k_nep(y_preds: Sequence[Sequence[Any]], y_test: Sequence[Any],
                      k: int = 3) -> float:
    """:func:`hit_rate_at_k_list` with one target per case (``y_test`` a flat list)."""
    return hit_rate_at_k_list(y_preds, [[target] for target in y_test], k=k)


def mrr_at_k_list(y_preds: Sequence[Sequence[Any]], y_test: Sequence[Sequence[Any]],
                  k: int = 3) -> float:
    """Mean over cases of 1/rank of the first of the first ``k`` predictions that is a
    target (0 when none is)."""
    reciprocal = []
    for preds, targets in zip(y_preds, y_test):
        rank = next((r for r, p in enumerate(preds[:k], start=1) if p in targets), None)
        reciprocal.append(0 if rank is None else 1 / rank)
    assert len(reciprocal) == len(y_preds), "y_test has fewer cases than y_preds"
    return float(np.mean(reciprocal))


def mrr_at_k_nep_list(y_preds: Sequence[Sequence[Any]], y_test: Sequence[Any],
                      k: int = 3) -> float:
    """:func:`mrr_at_k_list` with one target per case (``y_test`` a flat list)."""
    return mrr_at_k_list(y_preds, [[target] for target in y_test], k=k)
