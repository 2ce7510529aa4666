"""Values shown in the contract's messages: short, printable, never the raw bytes a participant's
machine sent."""

from __future__ import annotations

import json
import unicodedata
from typing import Any


def cut(value: Any, limit: int = 40) -> str:
    """``value`` as short printable text: a string as it is, anything else as JSON, every
    unprintable character shown as ``?`` and the text cut to ``limit`` characters (then
    ``...``)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


def escaped(text: Any, limit: int = 60) -> str:
    """``text`` with control characters written as escape sequences, cut to ``limit``
    characters (the last three then ``...``)."""
    text = "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c).startswith("C") else c for c in str(text))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown(value: Any, limit: int = 60) -> str:
    """An offending value as a message quotes it: a string in quotes, ``true``/``false``/
    ``null`` as JSON writes them, a number as Python does; escaped and cut to ``limit``."""
    if isinstance(value, (bool, type(None))):
        return escaped(json.dumps(value), limit)
    return escaped(repr(value), limit)


def has_control_characters(text: str) -> bool:
    """Whether ``text`` holds a control, format, surrogate or unassigned character (Unicode
    category C), which a page or a log line would not show as it is."""
    return any(unicodedata.category(c).startswith("C") for c in text)
