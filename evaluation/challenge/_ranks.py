"""Hit ranks: where each test user's target sits in their top-k list.

Every accuracy and slice test derives from one array: each test user's *hit rank*, the 1-based
position of the target in the user's list (0 when it is not there; ``-1`` padding never hits;
a target that appears twice counts at its first, best position). HIT_RATE and MRR are the
metric library's (``evaluation.metrics.hit_rate_from_ranks``, ``mrr_from_ranks``).
"""

from __future__ import annotations

import numpy as np


def hit_ranks(predictions, targets, k: int | None = None) -> np.ndarray:
    """1-based rank of each user's target in their top-``k`` predictions; 0 when absent.

    Memory is one (N, k) boolean array.

    Parameters
    ----------
    predictions : array-like
        (N, k) integer track ids, row ``i`` ranked best first, ``-1`` padding.
    targets : array-like
        (N,) target track ids.
    k : int, optional
        Look at the first ``k`` predictions only.

    Returns
    -------
    numpy.ndarray
        (N,) int32 ranks; a target listed twice counts at its first position.

    Raises
    ------
    ValueError
        When the shapes do not match.
    """
    preds = np.asarray(predictions)
    targets = np.asarray(targets)
    if preds.ndim != 2 or targets.ndim != 1 or len(preds) != len(targets):
        raise ValueError(
            f"hit_ranks: expected predictions of shape (N, k) and targets of shape (N,), "
            f"got {preds.shape} and {targets.shape}"
        )
    if k is not None:
        preds = preds[:, :k]
    if preds.shape[1] == 0:
        return np.zeros(len(targets), dtype=np.int32)
    equal = preds == targets[:, None]
    first = equal.argmax(axis=1)  # first True: a duplicated target counts at its best rank
    hit = equal[np.arange(len(targets)), first] & (targets != -1)
    return np.where(hit, first + 1, 0).astype(np.int32)
