"""Secrets scrubbed from text that leaves the organizer's machine, in every written form."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from evaluation.reproduce import scrub

TOKEN = "organizer-" + "Zq9+/x" * 7
SEED = 7312


def _forms(secret: str) -> dict[str, str]:
    data = secret.encode()
    return {
        "plain": secret,
        "split by whitespace": " ".join(secret[i:i + 3] for i in range(0, len(secret), 3)),
        "newlines": "\n".join(secret),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
        "base64": base64.b64encode(data).decode(),
        "base64 inside other bytes": base64.b64encode(b"xy" + data + b"z").decode(),
        "urlsafe base64": base64.urlsafe_b64encode(b"q" + data).decode(),
        "url-encoded": urllib.parse.quote(secret, safe=""),
        "url-encoded every byte": "".join(f"%{b:02X}" for b in data),
        "reversed": secret[::-1],
        "reversed hex": data.hex()[::-1],
    }


@pytest.mark.parametrize("secret", [TOKEN, str(SEED)], ids=["token", "seed"])
@pytest.mark.parametrize("form", list(_forms(TOKEN)))
def test_each_form_of_each_secret_is_scrubbed(secret, form):
    written = _forms(secret)[form]
    text = f"line before\nleak: <{written}> end\nline after"
    cleaned = scrub(text, [TOKEN, SEED])
    assert "line before" in cleaned and "line after" in cleaned and "[REDACTED]" in cleaned
    # no form of the secret is left: neither the written one nor the secret itself
    for other in _forms(secret).values():
        assert other not in cleaned
    compact = "".join(cleaned.split())
    assert secret not in compact and secret.encode().hex() not in compact.lower()


def test_text_without_secrets_is_unchanged_and_none_is_no_secret():
    text = "fold 0: HIT_RATE 0.1234 in 2.5 s"
    assert scrub(text, [TOKEN, SEED, None]) == text
    assert scrub(text, []) == text


def test_the_clients_token_is_among_the_secrets_scrubbed():
    from evaluation.reproduce import LeaderboardClient
    from evaluation.reproduce._scrub import client_secrets

    client = LeaderboardClient("http://127.0.0.1:9", TOKEN)
    assert client_secrets(client, SEED) == (TOKEN, SEED)
    assert TOKEN not in repr(client)
    with pytest.raises(TypeError, match="cannot scrub"):  # fail closed: no run that cannot scrub
        client_secrets(object(), None)
