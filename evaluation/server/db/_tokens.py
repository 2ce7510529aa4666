"""Bearer tokens: drawn from ``secrets``, stored only as SHA-256 hashes, compared in constant time.

A token carries 256 random bits, so a fast hash is enough: nobody can search that space, and a
slow password hash would only make every request slower. The database holds the hash alone; a
stolen copy of it lets nobody submit.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

#: Random bytes in a token (256 bits); ``token_urlsafe`` writes them as 43 characters.
TOKEN_BYTES = 32


def new_token() -> str:
    """Return a new random token: 256 bits from ``secrets``, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """Return the SHA-256 of ``token`` (UTF-8) as 64 lowercase hex digits, the form stored."""
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def matches(token: str, stored_hash: str) -> bool:
    """Whether ``token`` hashes to ``stored_hash``, compared in constant time.

    Parameters
    ----------
    token : str
        What the client sent.
    stored_hash : str
        A hash from the database (``hash_token`` of the real token).

    Returns
    -------
    bool
    """
    return hmac.compare_digest(hash_token(token).encode("ascii"),
                               str(stored_hash).encode("ascii", errors="replace"))
