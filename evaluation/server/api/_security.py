"""What every answer of the leaderboard carries, and the requests refused before the app sees
them.

Every answer gets the security headers of ``SECURITY_HEADERS``: a Content-Security-Policy that
lets no script run and no page frame the board (``frame-ancestors 'none'``), ``nosniff``, no
referrer. A request with both ``Content-Length`` and ``Transfer-Encoding`` (two ways to say
where the body ends, which a proxy and the server may read differently: request smuggling) is
refused with 400 and the connection closed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The headers every answer carries.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy",
     b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
     b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


class SecurityHeaders:
    """ASGI middleware: the security headers on every answer; a request with both
    ``Content-Length`` and ``Transfer-Encoding`` refused (400, connection closed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = [name.lower() for name, _ in scope.get("headers", ())]
        if b"transfer-encoding" in names and b"content-length" in names \
                or names.count(b"content-length") > 1:
            await _refuse_framing(send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                message["headers"] = list(message.get("headers", ())) + [
                    (name, value) for name, value in SECURITY_HEADERS if name not in present]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse_framing(send: Send) -> None:
    body = json.dumps({"status": "rejected", "reason": (
        "the request has both Content-Length and Transfer-Encoding (or two Content-Length "
        "headers): send one of them")}).encode()
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
