"""An upload that its headers already condemn is refused before its body is read: a team over
its daily limit, a missing or bad token, a phase that is unknown, not open or revealed.

The body is a stream that counts what the app takes from it (the ASGI app is called in process
through httpx's ASGI transport, which hands the body over chunk by chunk only when the app
asks): a refused upload takes none of it, on SQLite and PostgreSQL. The same stream sent by a
team under its limit is read to its end, so the count can tell.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

import httpx

from evaluation.errors import UploadError
from evaluation.runner import post
from evaluation.server.api import create_app
from evaluation.server.db import add_team, reveal_phase, revoke_team
from tests.server._api import SUBMIT
from tests.server._helpers import NOON, Clock, encode, variant, with_phases

#: A large upload of nested lists, the costliest kind of JSON to parse.
LARGE = 1024 * 1024
CHUNK = 64 * 1024


class CountingBody:
    """A request body streamed in chunks, counting the bytes the app took."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.taken = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), CHUNK):
            chunk = self.data[start:start + CHUNK]
            self.taken += len(chunk)
            yield chunk


def nested_lists() -> CountingBody:
    return CountingBody(b"[" * (LARGE // 2) + b"]" * (LARGE // 2))


class Uploads:
    """The app of a competition whose phases take 2 uploads a day, on ``db_url``."""

    def __init__(self, db_url: str, competition) -> None:
        self.clock = Clock(NOON)
        self.app = create_app(with_phases(competition, daily_limit=2), db_url,
                              clock=self.clock)
        self.store = self.app.state.store

    def post(self, body: CountingBody, token: str | None, path: str = SUBMIT,
             **headers: str) -> httpx.Response:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"

        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                return await client.post(path, content=body, headers=headers)

        return asyncio.run(send())


@pytest.fixture(scope="module")
def uploads(module_migrated_db_url, competition):
    """One app on each backend for the module's tests that upload as teams of their own and
    never move the clock or reveal a phase."""
    served = Uploads(module_migrated_db_url, competition)
    yield served
    served.store.engine.dispose()


@pytest.fixture
def own_uploads(migrated_db_url, competition):
    """As ``uploads``, an app of the test's own: for a test that moves the clock and reveals
    the phase."""
    served = Uploads(migrated_db_url, competition)
    yield served
    served.store.engine.dispose()


def refused_unread(uploads: Uploads, status: int, token: str | None, path: str = SUBMIT,
                   **headers: str) -> str:
    """Send a large body; assert it was refused with ``status`` without a byte read; return
    the reason."""
    body = nested_lists()
    reply = uploads.post(body, token, path, **headers)
    assert reply.status_code == status, reply.text
    assert body.taken == 0, f"{body.taken} bytes of the body were read before the {status}"
    return reply.json()["reason"]


def test_a_team_over_its_limit_is_refused_before_its_body_is_read(uploads):
    _, token = add_team(uploads.store, "Busy", "b@example.org")
    # under the limit the same stream is read to its end (and refused as JSON): the count
    # tells a read body from an unread one
    body = nested_lists()
    assert uploads.post(body, token).status_code == 422 and body.taken == LARGE
    for i in range(2):
        stored = CountingBody(encode(variant(f"Used-{i}")))
        reply = uploads.post(stored, token, **{"Idempotency-Key": f"Used-{i}"})
        assert reply.status_code == 201, reply.text
    reason = refused_unread(uploads, 429, token)
    assert "daily limit reached" in reason and "Idempotency-Key" in reason
    refused_unread(uploads, 429, token, **{"Idempotency-Key": "New-1"})
    # a repeat of a stored run is known by its key alone, and answered
    repeat = CountingBody(encode(variant("Used-0")))
    reply = uploads.post(repeat, token, **{"Idempotency-Key": "Used-0"})
    assert reply.status_code == 200 and reply.json()["status"] == "duplicate"
    # the other phase's limit is its own: not open now, though
    refused_unread(uploads, 403, token, "/api/v1/phases/final/submissions")


def test_no_valid_token_is_refused_before_the_body_is_read(uploads):
    refused_unread(uploads, 401, None)
    refused_unread(uploads, 401, "not-a-token")
    _, token = add_team(uploads.store, "Revoked soon", "r@example.org")
    revoke_team(uploads.store, "Revoked soon")
    refused_unread(uploads, 401, token)


def test_a_phase_that_is_unknown_closed_or_revealed_is_refused_before_the_body(own_uploads):
    _, token = add_team(own_uploads.store, "Early", "e@example.org")
    assert "no phase 'nope'" in refused_unread(own_uploads, 404, token,
                                                   "/api/v1/phases/nope/submissions")
    assert "no phase 'nope'" in refused_unread(own_uploads, 404, token, **{"X-Phase": "nope"})
    reason = refused_unread(own_uploads, 403, token, **{"X-Phase": "final"})
    assert "phase 'final'" in reason and "2028-01-01T00:00:00Z" in reason
    assert "phase 'public' is open now" in reason
    own_uploads.clock.now = datetime(2025, 6, 1, tzinfo=timezone.utc)  # before every phase
    assert "no phase of" in refused_unread(own_uploads, 403, token)
    own_uploads.clock.now = NOON
    reveal_phase(own_uploads.store, "public", close_now=True)
    assert "was revealed on" in refused_unread(own_uploads, 403, token)


def test_the_phase_comes_from_the_url_or_the_header(uploads):
    _, token = add_team(uploads.store, "Named", "n@example.org")
    by_url = uploads.post(CountingBody(encode(variant("Url-1"))), token,
                          "/api/v1/phases/public/submissions")
    assert by_url.status_code == 201 and by_url.json()["phase"] == "public"
    by_header = uploads.post(CountingBody(encode(variant("Header-1"))), token,
                             **{"X-Phase": "public"})
    assert by_header.status_code == 201 and by_header.json()["phase"] == "public"
    reason = refused_unread(uploads, 422, token, "/api/v1/phases/public/submissions",
                            **{"X-Phase": "final"})
    assert "X-Phase" in reason


def test_the_upload_client_sends_to_a_phase_url(live):
    token = live.team("Client")
    base = str(live.client.base_url).rstrip("/")
    document = variant("Client-1")
    answer = post(f"{base}/api/v1/phases/public/submissions", document, token=token,
                  log=lambda line: None)
    assert answer.status == 201
    listing = live.get(SUBMIT, token).json()["submissions"]
    assert [s["phase"] for s in listing] == ["public"]
    with pytest.raises(UploadError, match="HTTP 403.*phase 'final'.*not open now"):
        post(f"{base}/api/v1/phases/final/submissions", variant("Client-2"), token=token,
             log=lambda line: None)
    # a repeat at the limit: the client's Idempotency-Key is enough
    live.clock.now = live.clock.now.replace(hour=23)
    for i in range(2, 6):
        assert live.post(encode(variant(f"Client-{i + 1}")), token).status_code == 201
    again = post(f"{base}/api/v1/submissions", document, token=token, log=lambda line: None)
    assert again.status == 200 and again.verdict["status"] == "duplicate"
