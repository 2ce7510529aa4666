"""Text that is safe to show: control characters escaped, a secret replaced, a length bound.

Whatever a server, a library or a settings file says may hold terminal escape sequences, the
token that was sent, or megabytes of text; ``clean`` is applied to it before it is printed or
put in an exception. ``display_url`` shows an address without its credentials or query.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

#: Most characters of one shown value.
MAX_SHOWN = 300


def clean(text: str, token: str | None = None, limit: int = MAX_SHOWN) -> str:
    """Make ``text`` safe to print.

    Parameters
    ----------
    text : str
        What a server, a library or a file said.
    token : str, optional
        A secret to replace with ``<token>``.
    limit : int
        Most characters kept.

    Returns
    -------
    str
        ``text`` with the token replaced, control characters and backslashes escaped, and
        cut to ``limit`` characters (saying so).
    """
    text = str(text)
    if token:
        text = text.replace(token, "<token>")
    n = len(text)
    escaped = "".join(ch.encode("unicode_escape").decode("ascii")
                      if ch == "\\" or unicodedata.category(ch).startswith("C") else ch
                      for ch in text[:limit])
    return escaped + (f"... ({n} characters, cut)" if n > limit else "")


def display_url(url: str) -> str:
    """Make ``url`` safe to show.

    Returns
    -------
    str
        ``url`` without ``user:password@``, query or fragment, with control characters
        escaped ("<unparsable URL>" when it cannot be parsed).
    """
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        path = parts.path + ("?..." if parts.query else "")
        text = f"{parts.scheme}://{host}{path}" if parts.scheme or host else path
    except ValueError:
        text = "<unparsable URL>"
    return clean(text)
