"""Exact conversion of ids and counts to int64: a value that does not fit is refused, never wrapped.

NumPy's ``astype(np.int64)`` wraps uint64 values from 2**63 up (``2**64 - 1`` becomes ``-1``,
the padding of a prediction list), turns floats from 2**63 up and NaN into ``-2**63`` and
truncates fractions. Every conversion of user-supplied ids or counts goes through
:func:`as_int64`, which converts exactly or calls the caller's ``fail`` with the rule broken
and the offending entries, so each caller words the error in its own terms (file and column,
argument, prediction rows).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# The rules, phrased to follow "N values are ...".
MISSING = "missing (NaN or None)"
INFINITE = "infinite"
FRACTION = "not whole numbers"
RANGE = "outside the int64 range [-2**63, 2**63 - 1]"
BOOLEAN = "booleans"
NOT_NUMBER = "not numbers"

Fail = Callable[[str, np.ndarray, np.ndarray], Exception]


def as_int64(values, fail: Fail) -> np.ndarray:
    """``values`` as an int64 array, value for value, or ``raise fail(rule, bad, values)``.

    ``rule`` is one of this module's rule phrases, ``bad`` a boolean mask of the offending
    entries and ``values`` the array they are in (``np.asarray(values)``, so ``values[bad]``
    shows what the caller gave). Accepted: integers of any width (uint64 only below
    2**63), whole floats below 2**63 in magnitude, and object arrays of such numbers, Python
    ints of any size included (checked exactly). Signed integers are converted without a scan;
    the other kinds cost a pass or two over the values.
    """
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u":
        if arr.dtype.itemsize == 8 and arr.size and int(arr.max()) > INT64_MAX:
            raise fail(RANGE, arr > np.uint64(INT64_MAX), arr)
        return arr.astype(np.int64, copy=False)
    if kind == "f":
        _check_floats(arr, fail)
        return arr.astype(np.int64)
    if kind == "O":
        return _objects(arr, fail)
    rule = BOOLEAN if kind == "b" else NOT_NUMBER
    raise fail(rule, np.ones(arr.shape, dtype=bool), arr)


def _check_floats(arr: np.ndarray, fail: Fail) -> None:
    nan = np.isnan(arr)
    if nan.any():
        raise fail(MISSING, nan, arr)
    _check_whole(arr, arr, fail)
    # 2**63 is a float exactly; -2**63 is the smallest int64 and still fits
    big = (arr >= 2.0**63) | (arr < -(2.0**63))
    if big.any():
        raise fail(RANGE, big, arr)


def _check_whole(floats: np.ndarray, arr: np.ndarray, fail: Fail) -> None:
    """Refuse infinite or fractional ``floats`` (the values of ``arr``, named as given)."""
    inf = np.isinf(floats)
    if inf.any():
        raise fail(INFINITE, inf, arr)
    frac = floats != np.round(floats)
    if frac.any():
        raise fail(FRACTION, frac, arr)


def _flags(arr: np.ndarray, test) -> np.ndarray:
    return np.frompyfunc(test, 1, 1)(arr).astype(bool) if arr.size else np.zeros(arr.shape, bool)


def _objects(arr: np.ndarray, fail: Fail) -> np.ndarray:
    """Object arrays: Python ints may exceed any fixed width, so the range check is exact."""
    missing = pd.isna(arr)
    if missing.any():
        raise fail(MISSING, missing, arr)
    boolean = _flags(arr, lambda v: isinstance(v, (bool, np.bool_)))
    if boolean.any():
        raise fail(BOOLEAN, boolean, arr)
    numeric = _flags(arr, lambda v: isinstance(v, (int, float, np.integer, np.floating)))
    if not numeric.all():
        raise fail(NOT_NUMBER, ~numeric, arr)
    # magnitude and fractions as floats; the exact range check follows
    _check_whole(arr.astype(np.float64), arr, fail)
    # Python compares ints and floats exactly: 2**63 - 1 fits, 2.0**63 does not
    outside = _flags(arr, lambda v: not INT64_MIN <= v <= INT64_MAX)
    if outside.any():
        raise fail(RANGE, outside, arr)
    return arr.astype(np.int64)
