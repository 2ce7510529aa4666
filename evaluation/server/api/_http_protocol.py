"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn closes a keep-alive connection that stays idle after an answer, but waits forever for
the first request of a new connection and for headers that arrive a byte at a time; enough such
connections exhaust the server's sockets. ``HeaderDeadlineProtocol`` closes a connection whose
request headers are not complete ``HEADER_TIMEOUT_S`` seconds after it opened (or after the
last answer on it). The body has its own deadline (``read_body``).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a connection may take to send a request's headers.
HEADER_TIMEOUT_S = 10.0


class HeaderDeadlineProtocol(H11Protocol):
    """``H11Protocol`` that closes a connection whose request headers come too slowly."""

    header_timeout = HEADER_TIMEOUT_S
    _header_deadline: asyncio.TimerHandle | None = None

    # uvicorn annotates the base method with BaseTransport; it passes an asyncio.Transport
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # the headers of a request are in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._header_deadline = self.loop.call_later(self.header_timeout, self._late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _late(self) -> None:
        self._header_deadline = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()
