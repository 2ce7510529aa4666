"""The leaderboard's HTTP client: checked settings, bounded retries and answers, no redirects.

One client holds one endpoint's URL and bearer token; the token is checked before any request
and never shown (``repr``, messages and exceptions replace it with ``<token>``). A request is
sent again, after a pause (``Limits.retry_waits``), when the connection fails or the server
answers 502, 503 or 504; a ``Retry-After`` of the server lengthens the pause, up to
``Limits.max_retry_after``. Every attempt carries the same ``Idempotency-Key``, so the server
can recognise a repeat of a request it already has. A redirect is a failure: nothing is sent to
an address other than the configured one (the token would go with it). A request has one
deadline (``Limits.deadline``) for all its attempts and pauses together, and at most
``Limits.max_bytes`` of an answer are read.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from evaluation._version import __version__
from evaluation.contract._endpoint import check_token, check_url
from evaluation.contract._exchange import (
    Broken,
    Limits,
    Overdue,
    Response,
    Silent,
    Unreachable,
    exchange,
)
from evaluation.contract._shown import MAX_SHOWN, clean, display_url
from evaluation.errors import ConfigError, UploadError

#: The limits of a client that is given none, looked up at each request.
LIMITS = Limits()
#: Answers that say "try again later" (gateway errors); 500 means the server failed on this
#: request and would fail again, so it is not retried.
RETRY_STATUSES = frozenset({502, 503, 504})
#: Keys of a JSON answer that are shown, in this order.
SHOWN_KEYS = ("status", "score", "leaderboard_score", "phase1_score", "rank", "detail",
              "error", "reason", "message")


@dataclass(frozen=True)
class Reply:
    """A final answer of the server (not a redirect, not a gateway error left to retry).

    ``body`` holds at most the client's ``max_bytes``, with the token replaced; ``cut`` says
    that the answer was longer.
    """

    status: int
    body: bytes = field(repr=False)
    cut: bool
    attempts: int

    @property
    def ok(self) -> bool:
        """Whether the status is a success (2xx)."""
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body as JSON (None when it is not JSON, or was cut)."""
        try:
            return None if self.cut else json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


class HttpClient:
    """Requests to one leaderboard endpoint, with a bearer token that is never shown.

    Parameters
    ----------
    url : str
        The endpoint (or the server's base URL, to which request paths are appended).
    token : str, optional
        Sent as ``Authorization: Bearer``; printable ASCII without spaces.
    url_name, token_name : str
        What the URL and the token are called in messages (the setting to fix).
    limits : Limits, optional
        Timeouts, deadline, answer size and retry pauses (default: ``LIMITS``).
    log : callable
        Receives one line per retry.
    sleep : callable, optional
        Pauses between attempts (default: ``time.sleep``).

    Raises
    ------
    ConfigError
        When the URL or the token is malformed (before any request).
    """

    def __init__(self, url: str, token: str | None = None, *, url_name: str = "UPLOAD_URL",
                 token_name: str = "UPLOAD_TOKEN", limits: Limits | None = None,
                 log: Callable[[str], None] = print,
                 sleep: Callable[[float], None] | None = None) -> None:
        self.url = check_url(url, url_name)
        self._token = check_token(token, token_name) if token else None
        self.url_name = url_name
        self.limits = limits
        self.log = log
        self.sleep = sleep

    def __repr__(self) -> str:
        token = "<not shown>" if self._token else None
        return f"HttpClient({display_url(self.url)!r}, token={token})"

    def secrets(self) -> tuple[str, ...]:
        """What nothing shown may contain: the token (for callers that scrub text the client
        never saw, e.g. a log written by other code)."""
        return (self._token,) if self._token else ()

    def show(self, text: str, limit: int = MAX_SHOWN) -> str:
        """``text`` made safe to print: without the token, escaped, at most ``limit`` long."""
        return clean(text, self._token, limit)

    def _scrub(self, text: str) -> str:
        """``text`` with the token replaced by ``<token>``, nothing else changed."""
        return text.replace(self._token, "<token>") if self._token else text

    # ------------------------------------------------------------------------ requests

    def send(self, method: str, path: str = "", body: bytes | None = None, *,
             key: str | None = None, label: str | None = None,
             content_type: str = "application/json") -> Reply:
        """Send a request (JSON ``body``) until a final answer comes or the attempts run out.

        Parameters
        ----------
        method : str
            ``GET`` or ``POST``.
        path : str
            Appended to the client's URL.
        body : bytes, optional
            A JSON document (or a body of ``content_type``).
        key : str, optional
            The ``Idempotency-Key``, the same for every attempt.
        label : str, optional
            What the request is called in messages (default: the method and the URL).
        content_type : str
            The body's media type.

        Returns
        -------
        Reply
            The server's final answer: a success, or a refusal for the caller to explain.

        Raises
        ------
        ConfigError
            When ``key`` is not printable ASCII.
        UploadError
            When every attempt failed to connect, the server redirected, or it did not answer
            within the read timeout or the deadline (not retried: it may be acting on the
            request).
        """
        url = self.url + path
        label = label or f"{method} {display_url(url)}"
        limits = self.limits or LIMITS
        headers = self._headers(body is not None, key, content_type)
        attempts = len(limits.retry_waits) + 1
        # one deadline for the whole request: a server that answers slowly (or breaks the
        # connection late) on every attempt does not multiply the wait by the attempts
        ends = time.monotonic() + limits.deadline
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            left = ends - time.monotonic()
            if left <= 0:
                raise self._overdue(label, limits)
            try:
                response = exchange(method, url, body, headers,
                                    replace(limits, deadline=left,
                                            connect=min(limits.connect, left)),
                                    limits.max_bytes + 1 + len(self._token or ""))
            except (Unreachable, Broken) as exc:
                wait = None if last else self._wait(attempt, None, limits, ends)
                if wait is None:
                    raise self._failed(label, exc, attempt, limits, last) from None
                self._pause(label, self._problem(exc, limits), attempt, attempts, wait)
                continue
            except Silent:
                raise UploadError(f"{label}: no answer within {limits.read:g} s (read timeout); "
                                  f"the server may still act on the request") from None
            except Overdue:
                raise self._overdue(label, limits) from None
            reply = self._reply(response, attempt, limits)
            if 300 <= response.status < 400:
                raise self._redirected(label, response, reply)
            if response.status in RETRY_STATUSES and not last:
                wait = self._wait(attempt, response.retry_after, limits, ends)
                if wait is not None:
                    self._pause(label, f"HTTP {response.status}", attempt, attempts, wait)
                    continue
            return reply
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _headers(self, has_body: bool, key: str | None,
                 content_type: str = "application/json") -> dict[str, str]:
        """The headers of every attempt of one request."""
        headers = {"Accept": "application/json", "User-Agent": f"evalrs/{__version__}"}
        if has_body:
            headers["Content-Type"] = content_type
        if key is not None:
            if not (key and key.isascii() and key.isprintable()):
                raise ConfigError(f"the Idempotency-Key '{clean(key)}' must be printable ASCII "
                                  f"(a run id is letters, digits, _ . -).")
            headers["Idempotency-Key"] = key
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _reply(self, response: Response, attempt: int, limits: Limits) -> Reply:
        """``response`` as a reply: the token replaced before the body is cut to size."""
        data = response.data
        if self._token:
            data = data.replace(self._token.encode("ascii"), b"<token>")
        return Reply(status=response.status, body=data[:limits.max_bytes],
                     cut=len(data) > limits.max_bytes, attempts=attempt)

    @staticmethod
    def _wait(attempt: int, retry_after: str | None, limits: Limits,
              ends: float) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``: the pause of ``limits``, longer
        when the server's ``Retry-After`` asks (up to ``max_retry_after``); None when the
        request's deadline ``ends`` would pass before that attempt starts."""
        wait = limits.retry_waits[attempt - 1]
        asked = _retry_after(retry_after)
        if asked is not None:
            wait = max(wait, min(asked, limits.max_retry_after))
        return wait if time.monotonic() + wait < ends else None

    def _pause(self, label: str, problem: str, attempt: int, attempts: int,
               wait: float) -> None:
        """Say why and for how long, then wait ``wait`` s before attempt ``attempt + 1``."""
        self.log(f"{label}: {problem}; retrying in {wait:g} s (attempt {attempt + 1} of "
                 f"{attempts})")
        (self.sleep or _sleep)(wait)

    # ------------------------------------------------------------------------ messages

    def _problem(self, exc: Unreachable | Broken, limits: Limits) -> str:
        """Why an attempt failed, in a few words, without the token."""
        if isinstance(exc, Unreachable) and exc.timed_out:
            return f"no connection within {limits.connect:g} s (connect timeout)"
        cause = exc.cause
        text = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        what = "the server is unreachable" if isinstance(exc, Unreachable) else \
            "the connection broke"
        return f"{what} ({self.show(text)})"

    def _failed(self, label: str, exc: Unreachable | Broken, attempts: int, limits: Limits,
                last: bool = True) -> UploadError:
        """The error after attempt ``attempts`` failed to connect or lost the connection (the
        last one, or ``last`` False: no time was left for another before the deadline)."""
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        stop = "" if last else (f" (no time for another attempt within the deadline of "
                                f"{limits.deadline:g} s)")
        return UploadError(f"{label} failed{tries}{stop}: {self._problem(exc, limits)}. Check "
                           f"{self.url_name} and that the leaderboard is running.")

    @staticmethod
    def _overdue(label: str, limits: Limits) -> UploadError:
        """The error when the request's deadline passed (not retried: the server may be acting
        on the request)."""
        return UploadError(f"{label}: no whole answer within {limits.deadline:g} s (the "
                           f"deadline of the request, its retries included; the server "
                           f"answers too slowly); it may still act on the request")

    def _redirected(self, label: str, response: Response, reply: Reply) -> UploadError:
        """The error for a redirect, which is never followed."""
        where = (display_url(self._scrub(response.location)) if response.location
                 else "no Location")
        return UploadError(
            f"{label} refused: HTTP {response.status} redirect to {where}. A request is never "
            f"sent again to another address (the token would go with it); set "
            f"{self.url_name} to the endpoint itself (check http:// vs https:// and the "
            f"path).{self.said(reply)}")

    def verdict(self, reply: Reply, keys: Iterable[str] = SHOWN_KEYS) -> dict[str, str]:
        """The fields ``keys`` of a JSON object answer, made safe to print ({} otherwise)."""
        data = reply.json()
        if not isinstance(data, dict):
            return {}
        out = {}
        for key in keys:
            if data.get(key) is not None:
                value = data[key]
                text = value if isinstance(value, str) else json.dumps(
                    value, ensure_ascii=False, default=str)
                out[key] = self.show(text)
        return out

    def said(self, reply: Reply) -> str:
        """What the server said, as a sentence to append to a message ("" when nothing)."""
        verdict = self.verdict(reply)
        if verdict:
            return " Server verdict: " + ", ".join(f"{k}: {v}" for k, v in verdict.items()) + "."
        text = reply.body.decode("utf-8", errors="replace").strip()
        return f" Server said: {self.show(text)}" if text else ""

    def refusal(self, reply: Reply, label: str, hints: Mapping[int, str]) -> UploadError:
        """The error for a refusal ``reply``: its status, what the server said, and the hint
        of ``hints`` for its status."""
        tries = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
        return UploadError(f"{label} refused{tries}: HTTP {reply.status}.{self.said(reply)}"
                           f"{hints.get(reply.status, '')}")

    def document(self, reply: Reply, label: str) -> dict[str, Any]:
        """The JSON object of a successful ``reply``; raises ``UploadError`` when it is not
        one (or was longer than the client reads)."""
        if reply.cut:
            raise UploadError(f"{label}: the answer is larger than "
                              f"{(self.limits or LIMITS).max_bytes} bytes.")
        data = reply.json()
        if not isinstance(data, dict):
            text = reply.body.decode("utf-8", "replace")
            raise UploadError(f"{label}: the answer is not a JSON object: {self.show(text, 200)}")
        return data


def _retry_after(value: str | None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (None when absent or unreadable)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _sleep(seconds: float) -> None:
    """Pause ``seconds`` (a module function, so that tests can replace it); returns None."""
    time.sleep(seconds)
