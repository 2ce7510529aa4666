"""Secrets removed from text that leaves the organizer's machine, however they are written.

The log's end is sent to the leaderboard and stored there. A participant's code that got hold
of the admin token or the private seed could write it plainly, split by spaces, in hex, in
base64 (at any alignment), URL-encoded or reversed; each of these forms is replaced by
``[REDACTED]``.
"""

from __future__ import annotations

import base64
import os
import re
import urllib.parse
from collections.abc import Iterable
from pathlib import Path

#: What replaces a secret.
REDACTED = "[REDACTED]"
#: Shorter forms are not looked for (they would match ordinary text).
_MIN_LENGTH = 4


def _base64_forms(data: bytes) -> list[str]:
    """The characters of ``data``'s base64 that do not depend on its neighbours, at each of
    the three alignments, in the standard and the URL-safe alphabets."""
    forms = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        start = -(-offset * 8 // 6)
        end = (offset + len(data)) * 8 // 6
        part = encoded[start:end]
        forms += [part, part.replace("+", "-").replace("/", "_")]
    return forms


def secret_forms(secret: str) -> list[str]:
    """The written forms of ``secret`` looked for."""
    data = secret.encode()
    forms = [secret, data.hex(), *_base64_forms(data), urllib.parse.quote(secret, safe=""),
             urllib.parse.quote_plus(secret), "".join(f"%{b:02x}" for b in data)]
    forms += [form[::-1] for form in list(forms)]
    return [f for f in dict.fromkeys(forms) if len(f) >= _MIN_LENGTH]


def scrub(text: str, secrets: Iterable[str | int | None]) -> str:
    """``text`` with every form of every secret replaced by ``REDACTED``.

    A form matches with any whitespace between its characters, and regardless of case (hex
    and percent-encoding are written in both).
    """
    patterns = []
    for secret in secrets:
        if secret is None or len(str(secret)) < _MIN_LENGTH:
            continue
        for form in secret_forms(str(secret)):
            patterns.append(r"\s*".join(re.escape(c) for c in form))
    if not patterns:
        return text
    # longest first: a form inside a longer one is replaced with it
    patterns.sort(key=len, reverse=True)
    return re.sub("|".join(patterns), REDACTED, text, flags=re.IGNORECASE)


def client_secrets(client: object, private_seed: int | None) -> tuple[str | int | None, ...]:
    """The secrets a reproduction scrubs: the client's admin token and the private seed.

    Raises
    ------
    TypeError
        When the client does not say what its secrets are (``secrets()``): a reproduction
        that cannot scrub the token does not run, rather than send it.
    """
    said = getattr(client, "secrets", None)
    if not callable(said):
        raise TypeError(f"{type(client).__name__} has no secrets(): the reproduction cannot "
                        f"scrub its token from the log it sends")
    token = next(iter(said()), None)
    return (token, private_seed)


def log_tail(path: str | os.PathLike, max_bytes: int) -> str:
    """The last ``max_bytes`` bytes of the file as text (at a character boundary)."""
    path = Path(path)
    if not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - max_bytes))
        data = f.read()
    text = data.decode("utf-8", errors="replace")
    # "replace" may have widened a cut character; trim back under the bound
    while len(text.encode("utf-8")) > max_bytes:
        text = text[1:]
    return text
