"""One HTTP request and its answer, within bounds of time and size: one attempt, no retries.

A socket timeout only bounds each wait for the next bytes, so a server that sends one byte a
second could hold a client for ever; a watchdog thread therefore shuts the connection down
when the attempt's overall deadline passes, whatever the server is doing then. Redirects are
never followed (``http.client`` does not), and at most ``max_bytes`` of an answer are read.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

#: Bytes read from the socket at a time.
_CHUNK = 64 * 1024
#: The characters of a URL's path that are sent as they are (besides letters, digits, _.-~).
_SAFE = "/%:@!$&'()*+,;="


@dataclass(frozen=True)
class Limits:
    """How long and how much one client waits and reads.

    Parameters
    ----------
    connect : float
        Seconds to open the connection.
    read : float
        Seconds of silence from the server that end an attempt (a socket timeout).
    deadline : float
        Seconds for a whole request, every attempt and the pauses between them included
        (``HttpClient.send``; for ``exchange``, the one attempt's): a server that keeps
        sending slowly is cut off then, and no attempt starts after it.
    max_bytes : int
        Most bytes of an answer read; the rest is not read.
    retry_waits : tuple of float
        Pauses before the second, third... attempt; one attempt more than pauses in all.
    max_retry_after : float
        Most seconds of a server's ``Retry-After`` that are honoured.
    """

    connect: float = 10.0
    read: float = 60.0
    deadline: float = 60.0
    max_bytes: int = 64 * 1024
    retry_waits: tuple[float, ...] = (0.5, 1.0, 2.0)
    max_retry_after: float = 30.0


@dataclass(frozen=True)
class Response:
    """What one attempt received: the status, two headers, and the first bytes of the body."""

    status: int
    location: str | None
    retry_after: str | None
    data: bytes = field(repr=False)


class Unreachable(Exception):
    """No connection could be opened (``timed_out``: none within the connect timeout)."""

    def __init__(self, cause: BaseException, timed_out: bool) -> None:
        super().__init__(cause)
        self.cause, self.timed_out = cause, timed_out


class Broken(Exception):
    """The connection failed after it was opened, before a whole answer came."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(cause)
        self.cause = cause


class Silent(Exception):
    """The server sent nothing for the read timeout."""


class Overdue(Exception):
    """The attempt was not over by its deadline."""


def exchange(method: str, url: str, body: bytes | None, headers: dict[str, str],
             limits: Limits, read_bytes: int) -> Response:
    """Send one request to ``url`` and read the answer's status, headers and first bytes.

    Parameters
    ----------
    method, url : str
        The request; ``url`` is http(s) and already checked.
    body : bytes, optional
        The request's body.
    headers : dict of str
        Its headers (``Host`` and ``Content-Length`` are added, and what a proxy needs).
    limits : Limits
        The connect and read timeouts and the attempt's deadline.
    read_bytes : int
        Most bytes of the answer's body read.

    Returns
    -------
    Response
        The answer; a redirect is returned as it is, not followed.

    Raises
    ------
    Unreachable, Broken, Silent, Overdue
        When no connection opens, it breaks, the server is silent or the deadline passes.
    """
    started = time.monotonic()
    connection, target, extra = _route(url, limits.connect)
    try:
        _connect(connection)
        left = limits.deadline - (time.monotonic() - started)
        with _Watchdog(connection.sock, left) as watchdog:
            try:
                connection.sock.settimeout(limits.read)
                connection.request(method, target, body=body, headers={**headers, **extra})
                response = connection.getresponse()
                data = _read_some(response, read_bytes)
            except TimeoutError:
                raise (Overdue() if watchdog.fired else Silent()) from None
            except (OSError, http.client.HTTPException) as exc:
                raise (Overdue() if watchdog.fired else Broken(exc)) from None
        # an answer cut short by the watchdog may look whole (a body read until the close)
        if watchdog.fired:
            raise Overdue()
        return Response(status=response.status, location=response.getheader("Location"),
                        retry_after=response.getheader("Retry-After"), data=data)
    finally:
        connection.close()


def _route(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """An unopened connection for ``url``, the request target, and the headers a proxy needs.

    The proxy settings of the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) are
    followed: an https request goes through a tunnel (the proxy sees neither the token nor the
    body), an http one is sent to the proxy with its whole URL.
    """
    parts = _ascii(urlsplit(url))
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return _connection(scheme, host, parts.port, timeout), target, {}
    via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    auth = _proxy_authorization(via.username, via.password)
    connection = _connection(scheme, via.hostname or "", via.port, timeout)
    if scheme == "https":
        connection.set_tunnel(host, parts.port, headers=auth)
        return connection, target, {}
    return connection, urlunsplit(parts), auth


def _ascii(parts: SplitResult) -> SplitResult:
    """``parts`` as an ASCII URL, as a browser sends it: a host in IDNA, the other characters
    of path and query percent-encoded (escapes already there kept), no fragment."""
    host = parts.hostname or ""
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:  # no such name can be looked up
            raise Unreachable(exc, timed_out=False) from None
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return parts._replace(netloc=netloc, path=quote(parts.path, safe=_SAFE),
                          query=quote(parts.query, safe=_SAFE + "?"), fragment="")


def _connection(scheme: str, host: str, port: int | None,
                timeout: float) -> http.client.HTTPConnection:
    """An unopened connection to ``host`` (TLS with certificate checks for https)."""
    if scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout,
                                           context=ssl.create_default_context())
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _proxy_authorization(user: str | None, password: str | None) -> dict[str, str]:
    """The ``Proxy-Authorization`` header of a proxy URL's credentials ({} without any)."""
    if user is None:
        return {}
    pair = f"{unquote(user)}:{unquote(password or '')}".encode()
    return {"Proxy-Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def _connect(connection: http.client.HTTPConnection) -> None:
    """Open ``connection``; raises ``Unreachable`` when that fails."""
    try:
        connection.connect()
    except TimeoutError as exc:
        raise Unreachable(exc, timed_out=True) from None
    except OSError as exc:  # refused, unknown host, TLS handshake or certificate
        raise Unreachable(exc, timed_out=False) from None


def _read_some(response: http.client.HTTPResponse, limit: int) -> bytes:
    """At most ``limit`` bytes of ``response``'s body (decoded from chunks, if chunked)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = response.read(min(_CHUNK, limit - size))
        if not chunk:
            # read(amt) ends quietly where the connection closed; a body shorter than its
            # Content-Length is a broken answer, not a whole one
            if response.length:
                raise http.client.IncompleteRead(b"".join(chunks), response.length)
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class _Watchdog:
    """Shuts a socket down after ``seconds`` unless the ``with`` block ended first.

    A shut-down socket wakes a thread blocked reading or writing it, which then fails or sees
    the end of the stream; ``fired`` tells the two endings apart.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._over = False
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._lock:
            self._over = True
        self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.fired = True
            try:
                # the plain socket's shutdown: an SSLSocket's own would unwrap TLS under the
                # reading thread
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass
