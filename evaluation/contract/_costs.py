"""What a fold of a run cost, read from its recorded stage timings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evaluation.contract._keys import (
    PEAK_RSS_MIB_KEY,
    PREDICT_SECONDS_KEY,
    PREDICT_STAGE,
    RUNTIME_KEY,
    SECONDS_KEY,
    TRAIN_SECONDS_KEY,
    TRAIN_STAGE,
)

#: The keys of a fold's cost.
COST_KEYS = (TRAIN_SECONDS_KEY, PREDICT_SECONDS_KEY, PEAK_RSS_MIB_KEY)
#: The largest cost read (seconds or MiB): about ten years, a third of a petabyte.
MAX_COST = 3.2e8


def fold_cost(fold: Mapping[str, Any]) -> dict[str, float | None] | None:
    """What a fold cost, from its ``runtime``: seconds to train and to predict, and the peak
    resident memory of the process during the fold (MiB: the largest of its stages' peaks).

    Parameters
    ----------
    fold : mapping
        One fold of a results file.

    Returns
    -------
    dict or None
        ``{"train_seconds", "predict_seconds", "peak_rss_mib"}``, each None where the runtime
        does not record it as a number in [0, ``MAX_COST``]; None when the fold has no
        runtime at all.
    """
    runtime = fold.get(RUNTIME_KEY)
    if not isinstance(runtime, Mapping):
        return None
    stages = [s for s in runtime.values() if isinstance(s, Mapping)]
    peaks = [p for p in (_number(s.get(PEAK_RSS_MIB_KEY)) for s in stages) if p is not None]
    return {TRAIN_SECONDS_KEY: _seconds(runtime, TRAIN_STAGE),
            PREDICT_SECONDS_KEY: _seconds(runtime, PREDICT_STAGE),
            PEAK_RSS_MIB_KEY: max(peaks) if peaks else None}


def _seconds(runtime: Mapping[str, Any], stage: str) -> float | None:
    entry = runtime.get(stage)
    return _number(entry.get(SECONDS_KEY)) if isinstance(entry, Mapping) else None


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number in [0, ``MAX_COST``], else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0 <= value <= MAX_COST else None
