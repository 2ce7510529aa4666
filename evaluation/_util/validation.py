"""One set of parameter checks, with one message format.

Every check raises ``ConfigError`` with a message that names the parameter (and, when given,
the function or class it belongs to), the rule and the value received, as in::

    The 'k' parameter of score must be an int in the range [1, inf). Got 0 instead.

and returns the value converted to a plain Python type.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from evaluation.errors import ConfigError

_INTS = (int, np.integer)
_NUMBERS = (int, float, np.integer, np.floating)


def _subject(name: str, owner: str | None) -> str:
    return f"The {name!r} parameter" + (f" of {owner}" if owner else "")


def _fail(name: str, owner: str | None, rule: str, value: Any) -> ConfigError:
    return ConfigError(f"{_subject(name, owner)} must be {rule}. Got {shown(value)} instead.")


#: Longest repr a message shows of a value; beyond it, the value's type and size.
MAX_SHOWN_REPR = 60


def shown(value: Any) -> str:
    """``value`` as a message shows it: its repr when short, else its type and size.

    A DataFrame passed where a number belongs would otherwise fill the terminal with its
    content; what helps is what it is ("a DataFrame of shape (55000, 3)").
    """
    text = repr(value)
    if len(text) <= MAX_SHOWN_REPR and "\n" not in text:
        return text
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"{article} {kind} of shape {shape}"
    try:
        return f"{article} {kind} of length {len(value)}"
    except TypeError:
        return f"{article} {kind} ({text[:MAX_SHOWN_REPR - 3]}...)"


def check_int(name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None, owner: str | None = None) -> int:
    """Check that ``value`` is an integer (not a bool) in ``[minimum, maximum]``.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    value : Any
        What the user passed.
    minimum, maximum : int, optional
        Inclusive bounds; ``None`` leaves that side open.
    owner : str, optional
        The function or class the parameter belongs to, for the message.

    Returns
    -------
    int
        ``value`` as a Python ``int``.

    Raises
    ------
    ConfigError
        When ``value`` is not an integer or lies outside the bounds.
    """
    low = "-inf" if minimum is None else str(minimum)
    high = "inf)" if maximum is None else f"{maximum}]"
    ok = isinstance(value, _INTS) and not isinstance(value, (bool, np.bool_))
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        opening = "(" if minimum is None else "["
        raise _fail(name, owner, f"an int in the range {opening}{low}, {high}", value)
    return int(value)


def check_k(value: Any, *, name: str = "k", owner: str | None = None) -> int:
    """Check a list length: an integer >= 1.

    Returns
    -------
    int
        ``value`` as a Python ``int``.

    Raises
    ------
    ConfigError
        When ``value`` is not an integer >= 1.
    """
    return check_int(name, value, minimum=1, owner=owner)


def check_number(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf,
                 low_open: bool = False, high_open: bool = False,
                 owner: str | None = None) -> float:
    """Check that ``value`` is a finite real number (not a bool) between ``low`` and ``high``.

    Parameters
    ----------
    name, value, owner
        As for :func:`check_int`.
    low, high : float
        The bounds.
    low_open, high_open : bool
        Whether the bound itself is excluded.

    Returns
    -------
    float
        ``value`` as a Python ``float``.

    Raises
    ------
    ConfigError
        When ``value`` is not a number, is NaN, or lies outside the bounds.
    """
    ok = isinstance(value, _NUMBERS) and not isinstance(value, (bool, np.bool_))
    if ok:
        v = float(value)
        ok = not math.isnan(v)
        ok = ok and (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        interval = (("(" if low_open or low == -math.inf else "[") + f"{low}, {high}"
                    + (")" if high_open or high == math.inf else "]"))
        raise _fail(name, owner, f"a number in the range {interval}", value)
    return float(value)


def check_fraction(name: str, value: Any, *, owner: str | None = None) -> float:
    """Check a share: a number in ``(0, 1]``.

    Returns
    -------
    float
        ``value`` as a Python ``float``.

    Raises
    ------
    ConfigError
        When ``value`` is not a number in ``(0, 1]``.
    """
    return check_number(name, value, low=0.0, high=1.0, low_open=True, owner=owner)


def check_choice(name: str, value: Any, choices: Iterable[Any], *,
                 owner: str | None = None) -> Any:
    """Check that ``value`` is one of ``choices``.

    Returns
    -------
    Any
        ``value`` unchanged.

    Raises
    ------
    ConfigError
        When ``value`` is not among ``choices`` (the message lists them).
    """
    options = list(choices)
    try:
        found = value in options
    except TypeError:  # unhashable or incomparable values are simply not a choice
        found = False
    if not found:
        raise _fail(name, owner, f"one of {options!r}", value)
    return value


def check_seed(name: str, value: Any, *, owner: str | None = None) -> int:
    """Check a random seed: an integer in ``[0, 2**32 - 1]`` (what NumPy's legacy seeding takes).

    Returns
    -------
    int
        ``value`` as a Python ``int``.

    Raises
    ------
    ConfigError
        When ``value`` is not an integer in that range.
    """
    return check_int(name, value, minimum=0, maximum=2**32 - 1, owner=owner)
