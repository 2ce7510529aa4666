"""Turn results (NumPy scalars and arrays, slice results, nested containers) into plain JSON,
and hash JSON data by its content."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any


def to_jsonable(value: Any, *, nonfinite_to_none: bool = True) -> Any:
    """``value`` as plain Python containers and scalars.

    Objects with a ``to_dict()`` (slice results) become that dict. NaN and infinities become
    ``None`` unless ``nonfinite_to_none=False`` (then a strict ``json.dumps`` can reject them).
    """
    if hasattr(value, "to_dict") and not hasattr(value, "columns"):
        value = value.to_dict()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, nonfinite_to_none=nonfinite_to_none)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, nonfinite_to_none=nonfinite_to_none) for v in value]
    if hasattr(value, "tolist"):  # NumPy arrays and scalars
        return to_jsonable(value.tolist(), nonfinite_to_none=nonfinite_to_none)
    if nonfinite_to_none and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_sha256(obj: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """Hex sha256 of ``obj`` as compact JSON with sorted keys: equal content, equal digest.

    ``default`` converts what JSON cannot hold (as in ``json.dumps``); without it such a value
    raises ``TypeError`` rather than being hashed by a description that may vary.
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=default)
    return hashlib.sha256(text.encode()).hexdigest()
