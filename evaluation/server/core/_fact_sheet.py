"""A fact sheet: what a team says of a final selection's method, and where its code is.

A phase whose competition file says ``fact_sheet = "required"`` (or ``"optional"``) takes, at
final selection, a short description of the method and a link to the code: a URL and a
commit. Each part is checked here, before anything is stored: the description is plain text
(no control characters but line breaks, a Windows one kept as ``\n``; no bidirectional
overrides, no HTML tag; it is stored
as text and escaped wherever it is shown), at most ``MAX_DESCRIPTION`` characters; the URL is
``http`` or ``https`` with a host and no credentials, at most ``MAX_URL`` characters; the
commit a hexadecimal SHA of 7 to 40 digits (kept in lowercase). The checked sheet is a
``FactSheet`` of the board's data model.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from evaluation.contract import cut
from evaluation.errors import SubmissionRejected
from evaluation.server.core._board import FactSheet

#: The longest description of a method (characters), and the least.
MAX_DESCRIPTION = 2000
MIN_DESCRIPTION = 10
#: The longest link to the code.
MAX_URL = 500
#: The fields of a fact sheet, as the API and the competition's CSV name them.
FACT_SHEET_FIELDS = ("description", "code_url", "commit")
#: The schemes a link to the code may have.
URL_SCHEMES = ("http", "https")

_COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")
# the start of an HTML tag, comment or declaration: "<a", "</", "<!", "<?"
_TAG = re.compile(r"<[A-Za-z/!?]")
# the characters that reorder the text shown around them (a spoofed name or link)
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def read_fact_sheet(value: Any) -> FactSheet:
    """A fact sheet from ``value`` (``{"description", "code_url", "commit"}``), checked.

    Raises
    ------
    SubmissionRejected
        422 naming the field, the rule, the value (cut) and the fix, for a missing or unknown
        field, a description too long or too short, with control characters or HTML, a URL
        that is not http(s) or too long, or a commit that is not a hex SHA of 7 to 40 digits.
    """
    if not isinstance(value, dict):
        raise SubmissionRejected(422, "a fact sheet must be an object with description, "
                                      "code_url and commit")
    unknown = sorted(set(value) - set(FACT_SHEET_FIELDS))
    missing = [f for f in FACT_SHEET_FIELDS if value.get(f) is None]
    if unknown:
        raise SubmissionRejected(422, f"fact sheet: {cut(unknown[0])!r} is not one of its "
                                      f"fields ({', '.join(FACT_SHEET_FIELDS)})")
    if missing:
        raise SubmissionRejected(422, f"fact sheet: {missing[0]} is missing; a fact sheet "
                                      f"gives all of {', '.join(FACT_SHEET_FIELDS)} "
                                      f"(python -m evaluation final ID --description TEXT "
                                      f"--code-url URL --commit SHA)")
    return FactSheet(description=_description(value["description"]),
                     code_url=_url(value["code_url"]), commit=_commit(value["commit"]))


def _refused(field: str, rule: str, value: Any, fix: str) -> SubmissionRejected:
    shown = cut(repr(value), 60) if not isinstance(value, str) else repr(cut(value, 60))
    return SubmissionRejected(422, f"fact sheet: {field} {rule}, got {shown}; {fix}; nothing "
                                   f"was changed")


def _description(value: Any) -> str:
    if not isinstance(value, str):
        raise _refused("description", "must be text", value, "give the method in words")
    # a line break written on Windows is a line break
    text = value.replace("\r\n", "\n").strip()
    if not MIN_DESCRIPTION <= len(text) <= MAX_DESCRIPTION:
        raise SubmissionRejected(
            422, f"fact sheet: description must be {MIN_DESCRIPTION} to {MAX_DESCRIPTION} "
                 f"characters, got {len(text)}; say the method in a short paragraph (the code "
                 f"link tells the rest); nothing was changed")
    for at, char in enumerate(text):
        if char != "\n" and (unicodedata.category(char) == "Cc" or char in _BIDI):
            raise SubmissionRejected(
                422, f"fact sheet: description must be plain text without control "
                     f"characters, got U+{ord(char):04X} at character {at}; remove it (line "
                     f"breaks are allowed); nothing was changed")
    tag = _TAG.search(text)
    if tag is not None:
        raise SubmissionRejected(
            422, f"fact sheet: description must not contain HTML, got "
                 f"{text[tag.start():tag.start() + 12]!r} at character {tag.start()}; write "
                 f"plain text (it is shown as written, never as HTML; write 'a < b' with "
                 f"spaces); nothing was changed")
    return text


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refused("code_url", "must be the link to the code", value,
                       "give e.g. https://github.com/team/model")
    url = value.strip()
    if len(url) > MAX_URL:
        raise SubmissionRejected(422, f"fact sheet: code_url must be at most {MAX_URL} "
                                      f"characters, got {len(url)}; link the repository, not a "
                                      f"search; nothing was changed")
    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in url):
        raise _refused("code_url", "must have no spaces or control characters", url,
                       "give the link as the browser shows it")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in URL_SCHEMES:
        raise _refused("code_url", "must be an http or https link", url,
                       "give e.g. https://github.com/team/model")
    if not host:
        raise _refused("code_url", "must name a host", url,
                       "give e.g. https://github.com/team/model")
    if parts.username is not None or parts.password is not None:
        raise _refused("code_url", "must not carry a user name or password", url,
                       "give the public link, without credentials")
    return url


def _commit(value: Any) -> str:
    if not isinstance(value, str) or not _COMMIT.match(value.strip()):
        raise _refused("commit", "must be a commit's hexadecimal SHA of 7 to 40 digits", value,
                       "give e.g. the output of `git rev-parse HEAD` in the code's checkout")
    return value.strip().lower()
