"""Checking a JSON document field by field, every problem collected with where it is.

A refusal names the field (``results.folds[2].tests.HIT_RATE``), the rule and the offending
value, cut short; a document with many problems is refused with the first few and a count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.contract._text import escaped, shown

#: How many problems a refusal lists.
SHOWN_PROBLEMS = 3
#: Path parts: a key, or the index of a list item.
Path = tuple[str | int, ...]


class _Absent:
    """The value of a problem that has none to show (a missing field, a whole object)."""

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE: Any = _Absent()


@dataclass(frozen=True)
class Problem:
    """One broken rule of a document.

    Attributes
    ----------
    path : tuple of str and int
        Where: keys and list indices from the document's top.
    rule : str
        What the value must be (or what is wrong), as a sentence fragment.
    value : Any
        The offending value (``NO_VALUE`` when there is none to show).
    """

    path: Path
    rule: str
    value: Any = NO_VALUE

    def __str__(self) -> str:
        """``path: rule (got value)``; objects and lists are not quoted."""
        where = dotted(self.path)
        quoted = self.value is NO_VALUE or isinstance(self.value, (dict, list))
        got = "" if quoted else f" (got {shown(self.value)})"
        return f"{where}: {self.rule}{got}" if where else f"{self.rule}{got}"


class RecordRefused(ValueError):
    """A results mapping or submission payload that breaks the contract's rules.

    Attributes
    ----------
    problems : tuple of Problem
        Every problem found, in document order.
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(self.describe())

    def describe(self, limit: int = SHOWN_PROBLEMS) -> str:
        """The first ``limit`` problems joined by "; ", and how many more there are."""
        parts = [str(p) for p in self.problems[:limit]]
        more = len(self.problems) - limit
        return "; ".join(parts) + (f"; and {more} more problem(s)" if more > 0 else "")


def dotted(path: Path) -> str:
    """``("results", "folds", 2, "tests")`` as ``results.folds[2].tests``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + escaped(part, 80)
    return out


#: Sentinel returned for a field whose value broke a rule (already recorded).
BAD: Any = object()


class Checker:
    """Collects the problems of one document; each ``take_*`` returns the value or ``BAD``."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: Path, rule: str, value: Any = NO_VALUE) -> Any:
        """Record a problem; returns ``BAD``."""
        self.problems.append(Problem(path, rule, value))
        return BAD

    def present(self, obj: Mapping, key: str | int, path: Path, optional: bool) -> Any:
        """``obj[key]``; ``BAD`` (recorded) when it is missing and required, None when it is
        missing or null and optional."""
        if key not in obj:
            return None if optional else self.fail(path + (key,), "required field missing")
        return obj[key]

    def text(self, obj: Mapping, key: str | int, path: Path, *, optional: bool = False,
             min_length: int = 0, max_length: int | None = None,
             pattern: str | None = None) -> Any:
        """A string field, with its length and pattern checked."""
        value = self.present(obj, key, path, optional)
        if value is BAD or (value is None and optional):
            return value
        where = path + (key,)
        if not isinstance(value, str):
            return self.fail(where, "Input should be a valid string", value)
        if pattern is not None and not re.fullmatch(pattern, value):
            return self.fail(where, f"String should match pattern '{pattern}'", value)
        if len(value) < min_length:
            return self.fail(where, f"String should have at least {min_length} "
                                    f"character{'s' if min_length != 1 else ''}", value)
        if max_length is not None and len(value) > max_length:
            return self.fail(where, f"String should have at most {max_length} characters",
                             value)
        return value

    def integer(self, obj: Mapping, key: str, path: Path, *, optional: bool = False,
                ge: int | None = None, le: int | None = None) -> Any:
        """An integer field (a bool, a float or a string is none), within its bounds."""
        value = self.present(obj, key, path, optional)
        if value is BAD or (value is None and optional):
            return value
        return self.integer_value(value, path + (key,), ge=ge, le=le)

    def integer_value(self, value: Any, where: Path, *, ge: int | None = None,
                      le: int | None = None) -> Any:
        """``value`` if it is an integer within the bounds; else ``BAD`` (recorded)."""
        if not isinstance(value, int) or isinstance(value, bool):
            return self.fail(where, "Input should be a valid integer", value)
        if ge is not None and value < ge:
            return self.fail(where, f"Input should be greater than or equal to {ge}", value)
        if le is not None and value > le:
            return self.fail(where, f"Input should be less than or equal to {le}", value)
        return value

    def number(self, obj: Mapping, key: str, path: Path, *, optional: bool = False) -> Any:
        """A finite number field (an int or a float; a bool or a string is none)."""
        value = self.present(obj, key, path, optional)
        if value is BAD or (value is None and optional):
            return value
        return self.number_value(value, path + (key,))

    def number_value(self, value: Any, where: Path) -> Any:
        """``value`` as a float if it is a finite number; else ``BAD`` (recorded)."""
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return self.fail(where, "Input should be a valid number", value)
        if isinstance(value, float) and not math.isfinite(value):
            return self.fail(where, "Input should be a finite number", value)
        return value

    def boolean(self, obj: Mapping, key: str, path: Path) -> Any:
        """A true/false field."""
        value = self.present(obj, key, path, False)
        if value is BAD or isinstance(value, bool):
            return value
        return self.fail(path + (key,), "Input should be a valid boolean", value)

    def mapping(self, obj: Mapping, key: str, path: Path, *, optional: bool = False) -> Any:
        """An object field."""
        value = self.present(obj, key, path, optional)
        if value is BAD or (value is None and optional) or isinstance(value, dict):
            return value
        return self.fail(path + (key,), "Input should be a valid dictionary", value)

    def items(self, obj: Mapping, key: str, path: Path, *, optional: bool = False,
              min_items: int = 0, max_items: int | None = None) -> Any:
        """A list field, with its length checked."""
        value = self.present(obj, key, path, optional)
        if value is BAD or (value is None and optional):
            return value
        where = path + (key,)
        if not isinstance(value, list):
            return self.fail(where, "Input should be a valid list", value)
        if len(value) < min_items:
            return self.fail(where, f"List should have at least {min_items} "
                                    f"item{'s' if min_items != 1 else ''}, not {len(value)}",
                             value)
        if max_items is not None and len(value) > max_items:
            return self.fail(where, f"List should have at most {max_items} items, not "
                                    f"{len(value)}", value)
        return value
