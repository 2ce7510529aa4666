"""The rule of a team's name, which the leaderboard enforces when a team is added and the
reproduction worker relies on: the name is the team's folder in the organizers' checkouts
folder (``<checkouts>/<team>/``).

A name is 1 to ``MAX_TEAM_NAME`` printable characters of any script (plain spaces and the
zero-width joiners allowed inside), at most ``MAX_TEAM_NAME_BYTES`` bytes as UTF-8 (a file
name's limit on Linux and macOS), without a path separator (``/`` or ``\\``), not starting
with a dot (``.``, ``..`` and hidden folders) and neither starting nor ending with a space.
Names that differ only by case or by Unicode compatibility forms are one name (the leaderboard
refuses the second: their folders would be one on a case-insensitive disk); ``folded`` is how
they are compared.
"""

from __future__ import annotations

import unicodedata

#: Longest team name, in characters.
MAX_TEAM_NAME = 80
#: Longest team name, in bytes of UTF-8: the longest file name Linux and macOS take.
MAX_TEAM_NAME_BYTES = 255
#: Characters a team name may hold beyond Python's printable ones: the zero-width non-joiner
#: and joiner, which some scripts (Persian, Indic) and emoji sequences need.
NAME_EXTRA_CHARACTERS = frozenset("\u200c\u200d")
#: The characters that separate the parts of a path (POSIX, Windows).
PATH_SEPARATORS = frozenset("/\\")

#: The rule in words, as refusals quote it.
TEAM_NAME_RULE = (f"a team name is 1 to {MAX_TEAM_NAME} printable characters of any script "
                  f"(at most {MAX_TEAM_NAME_BYTES} bytes as UTF-8), without / or \\, not "
                  f"starting with a dot, with plain spaces inside only; it is the team's "
                  f"folder of the reproduction checkouts")


def team_name_problem(name: object) -> str | None:
    """What breaks the team-name rule in ``name`` (the rule quoted), or None when it keeps it.

    The rule (see the module): 1 to ``MAX_TEAM_NAME`` printable characters, at most
    ``MAX_TEAM_NAME_BYTES`` bytes as UTF-8, no ``/`` or ``\\``, no leading dot, no leading or
    trailing space.
    """
    if not isinstance(name, str) or not name:
        return f"a team name must have 1 to {MAX_TEAM_NAME} characters; got an empty name."
    if len(name) > MAX_TEAM_NAME:
        return (f"team name {name[:40]!r}... has {len(name)} characters; at most "
                f"{MAX_TEAM_NAME} are allowed: shorten it.")
    for i, ch in enumerate(name):
        if not (ch.isprintable() or ch in NAME_EXTRA_CHARACTERS):
            return (f"team name {name!r} has the non-printable character U+{ord(ch):04X} "
                    f"({unicodedata.name(ch, 'unnamed')}) at position {i + 1}; a team name "
                    f"holds printable characters (letters, digits, punctuation, symbols of any "
                    f"script) and plain spaces only.")
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_TEAM_NAME_BYTES:
        return (f"team name {name[:40]!r}... takes {size} bytes as UTF-8; at most "
                f"{MAX_TEAM_NAME_BYTES} are allowed (the longest folder name of a disk): "
                f"shorten it. The rule: {TEAM_NAME_RULE}.")
    if name != name.strip(" "):
        return (f"team name {name!r} starts or ends with a space; remove it (names that "
                f"differ only by spaces would look the same on the board).")
    separator = next((ch for ch in name if ch in PATH_SEPARATORS), None)
    if separator is not None:
        return (f"team name {name!r} holds {separator!r}, a path separator; replace it (e.g. "
                f"by '-'). The rule: {TEAM_NAME_RULE}.")
    if name.startswith("."):
        return (f"team name {name!r} starts with a dot ('.', '..' and hidden folders); start "
                f"it with another character. The rule: {TEAM_NAME_RULE}.")
    return None


def folded(name: str) -> str:
    """A team name as names are compared for duplicates: compatibility-normalised (NFKC),
    case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()
