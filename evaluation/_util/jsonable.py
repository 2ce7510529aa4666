"""Turn results (NumPy scalars and arrays, slice results, nested containers) into plain JSON."""

from __future__ import annotations

import math
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
