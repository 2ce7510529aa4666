"""The two settings of a leaderboard endpoint, checked before any request: its URL and token.

A token is checked without ever being shown: a message gives its length and the position of
the first bad character. A URL is shown without credentials or query.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

from evaluation.contract._shown import display_url
from evaluation.errors import ConfigError

#: Characters that end a line, for the message about a token pasted over two lines.
_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def check_token(token: str, what: str = "UPLOAD_TOKEN") -> str:
    """Check a bearer token: printable ASCII without spaces.

    Parameters
    ----------
    token : str
        The token.
    what : str
        What the token is called in the message.

    Returns
    -------
    str
        ``token`` unchanged.

    Raises
    ------
    ConfigError
        When it is not such a string; the message gives its length and the position of the
        first bad character, never the token.
    """
    if not isinstance(token, str):
        raise ConfigError(f"{what} must be a string, got a {type(token).__name__}.")
    for i, ch in enumerate(token):
        if "\x21" <= ch <= "\x7e":
            continue
        raise ConfigError(
            f"{what} (a {len(token)}-character value, not shown) has {_kind(ch)} at position "
            f"{i + 1}; a token is printable ASCII without spaces. Copy it again from the "
            f"organizers' message into upload.env as UPLOAD_TOKEN=<token>, on one line.")
    return token


def _kind(ch: str) -> str:
    """What a character that a token may not hold is, in words."""
    if ch in " \t":
        return "a space or tab"
    if ch in _LINE_BREAKS:
        return "a line break"
    if ord(ch) < 0x20 or ord(ch) == 0x7f:
        return "a control character"
    return "a non-ASCII space" if ch.isspace() else "a non-ASCII character"


def check_url(url: str, what: str = "UPLOAD_URL") -> str:
    """Check an endpoint URL: http(s), a host, no credentials, no spaces or control characters.

    Parameters
    ----------
    url : str
        The URL.
    what : str
        What the URL is called in the message.

    Returns
    -------
    str
        ``url`` unchanged.

    Raises
    ------
    ConfigError
        When it is not such a URL (the message shows it without credentials or query).
    """
    if not isinstance(url, str):
        raise ConfigError(f"{what} must be a string, got a {type(url).__name__}.")
    shown = display_url(url)
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in url):
        raise ConfigError(f"{what} {shown} contains spaces or control characters; give the "
                          f"endpoint's address on one line, without quotes around parts of it.")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{what} {shown} must start with https:// (or http://); got the "
                          f"scheme {parts.scheme!r}.")
    if "@" in parts.netloc:
        raise ConfigError(f"{what} {shown} (shown without them) contains credentials "
                          f"(user:password@); remove them from the URL and put the token in "
                          f"UPLOAD_TOKEN: it is sent as an Authorization header.")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1:
        raise ConfigError(f"{what} {shown} has no valid host[:port]; expected e.g. "
                          f"https://leaderboard.example.org/submit.")
    return url
