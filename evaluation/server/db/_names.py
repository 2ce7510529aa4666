"""The rules of a team's name and email, and how names are compared for duplicates."""

from __future__ import annotations

import unicodedata

from evaluation.errors import ConfigError
from evaluation.server.db._tables import MAX_EMAIL, MAX_TEAM_NAME

#: Characters a team name may hold beyond Python's printable ones: the zero-width non-joiner
#: and joiner, which some scripts (Persian, Indic) and emoji sequences need.
NAME_EXTRA_CHARACTERS = frozenset("\u200c\u200d")


def check_team_name(name: str) -> str:
    """Check a team name: 1 to ``MAX_TEAM_NAME`` printable characters of any script.

    Returns
    -------
    str
        ``name`` unchanged (names are stored as given).

    Raises
    ------
    ConfigError
        When it is empty, too long, starts or ends with a space, or holds a control, format
        or separator character (other than the ASCII space and the zero-width joiners).
    """
    if not isinstance(name, str) or not name:
        raise ConfigError("a team name must have 1 to 80 characters; got an empty name.")
    if len(name) > MAX_TEAM_NAME:
        raise ConfigError(f"team name {name[:40]!r}... has {len(name)} characters; at most "
                          f"{MAX_TEAM_NAME} are allowed: shorten it.")
    for i, ch in enumerate(name):
        if not (ch.isprintable() or ch in NAME_EXTRA_CHARACTERS):
            raise ConfigError(
                f"team name {name!r} has the non-printable character U+{ord(ch):04X} "
                f"({unicodedata.name(ch, 'unnamed')}) at position {i + 1}; a team name holds "
                f"printable characters (letters, digits, punctuation, symbols of any script) "
                f"and plain spaces only.")
    if name != name.strip(" "):
        raise ConfigError(f"team name {name!r} starts or ends with a space; remove it (names "
                          f"that differ only by spaces would look the same on the board).")
    return name


def check_email(email: str) -> str:
    """Check an email address: ``local@domain``, printable, no spaces, at most 320 characters.

    Raises
    ------
    ConfigError
        When it is not such an address.
    """
    ok = (isinstance(email, str) and 3 <= len(email) <= MAX_EMAIL and email.count("@") == 1
          and all(ch.isprintable() and not ch.isspace() for ch in email))
    if ok:
        local, _, domain = email.partition("@")
        ok = bool(local) and bool(domain) and not domain.startswith(".") and "." in domain
    if not ok:
        shown = email[:80] if isinstance(email, str) else email
        raise ConfigError(f"email {shown!r} is not an address like name@example.org (one @, a "
                          f"domain with a dot, no spaces, at most {MAX_EMAIL} characters).")
    return email


def folded(name: str) -> str:
    """A name as it is compared for duplicates: compatibility-normalised, case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()
