"""Uploading a submission to the leaderboard: checked settings, bounded retries, no redirects.

The settings (``EMAIL``, ``PARTICIPANT_ID``, ``UPLOAD_URL``, ``UPLOAD_TOKEN``) come from the
environment or from an ``upload.env`` file; the file is read only when an upload is asked for.
The token is checked before any request and never printed: messages give its length and the
position of a bad character, nothing else, and anything a server or a library says is scrubbed
of it before it is shown.

``post`` sends the submission once, and again after a pause when the connection fails or the
server answers 502, 503 or 504 (``RETRY_WAITS``). Every attempt of one submission carries the same
``Idempotency-Key``, so the server can recognise a repeat of a submission it already has. A
redirect is a failure: a submission is never re-posted to an address other than ``UPLOAD_URL``.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from evaluation._util import atomic as _atomic
from evaluation.contract import (
    ELIGIBLE_KEY,
    NOT_ELIGIBLE_BECAUSE_KEY,
    body_and_key,
    submission_payload,
)
from evaluation.errors import ConfigError, UploadError

#: (connect, read) timeouts in seconds.
TIMEOUT: tuple[float, float] = (10.0, 60.0)
#: Pauses before the second, third and fourth attempt; one attempt more than pauses in all.
RETRY_WAITS: tuple[float, ...] = (0.5, 1.0, 2.0)
#: Answers that say "try again later" (gateway errors); 500 means the server failed on this
#: submission and would fail again, so it is not retried.
RETRY_STATUSES = frozenset({502, 503, 504})
#: Most bytes of a server's answer that are read; longer answers are cut.
MAX_ANSWER_BYTES = 64 * 1024
#: Most characters of one value of the server's verdict that are printed.
MAX_SHOWN = 300
#: Keys of the server's JSON answer that are shown, in this order.
VERDICT_KEYS = ("status", "score", "leaderboard_score", "phase1_score", "rank", "detail",
                "error", "reason", "message")
SETTINGS = ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN")


@dataclass(frozen=True)
class UploadSettings:
    """The leaderboard settings; ``repr`` hides the token.

    Parameters
    ----------
    email, participant_id : str, optional
        Who submits; sent with the submission.
    url : str, optional
        The leaderboard's upload endpoint (``UPLOAD_URL``); None saves submissions locally.
    token : str, optional
        The bearer token (``UPLOAD_TOKEN``); never shown.
    """

    email: str | None = None
    participant_id: str | None = None
    url: str | None = None
    token: str | None = field(default=None, repr=False)


@dataclass
class Answer:
    """A submission the server accepted: HTTP status, the fields of its verdict, attempts."""

    status: int
    verdict: dict[str, str]
    attempts: int

    def describe(self) -> str:
        """Return the answer in one line: the HTTP status and the server's verdict."""
        shown = ", ".join(f"{k}: {v}" for k, v in self.verdict.items())
        return f"HTTP {self.status}" + (f"; server verdict: {shown}" if shown else "")


# ---------------------------------------------------------------------------- settings


def check_settings(settings: UploadSettings, url_name: str = "upload.url",
                   token_name: str = "upload.token") -> UploadSettings:
    """Check the URL and token of ``settings``; empty values mean "not set".

    Parameters
    ----------
    settings : UploadSettings
        The settings to check.
    url_name, token_name : str
        What the URL and the token are called in messages.

    Returns
    -------
    UploadSettings
        ``settings`` with empty strings replaced by None.

    Raises
    ------
    ConfigError
        When ``settings`` is not an ``UploadSettings``, or its URL or token is malformed.
    """
    if not isinstance(settings, UploadSettings):
        raise ConfigError(f"The 'upload' parameter of EvalRSRunner must be an UploadSettings "
                          f"(evaluation.runner.UploadSettings). Got a "
                          f"{type(settings).__name__} instead.")
    url = check_url(settings.url, url_name) if settings.url else None
    token = check_token(settings.token, token_name) if settings.token else None
    return replace(settings, url=url, token=token)


def load_settings(env_file: str | os.PathLike | None,
                  environ: Mapping[str, str] | None = None, *,
                  required: bool = False) -> UploadSettings:
    """Read the upload settings: environment variables first, then ``env_file``.

    A variable that is set in the environment wins even when it is empty, as with
    python-dotenv's ``load_dotenv(override=False)``.

    Parameters
    ----------
    env_file : str, os.PathLike or None
        A dotenv file with ``EMAIL``, ``PARTICIPANT_ID``, ``UPLOAD_URL``, ``UPLOAD_TOKEN``.
    environ : mapping, optional
        The environment (default: ``os.environ``).
    required : bool
        Whether a missing ``env_file`` is an error (a file named on the command line) rather
        than "no file".

    Returns
    -------
    UploadSettings
        The settings; empty values are None.

    Raises
    ------
    ConfigError
        When a required file is missing, the file cannot be read or parsed, or the URL or
        token is malformed.
    """
    environ = os.environ if environ is None else environ
    path = Path(env_file) if env_file is not None else None
    if required and path is not None and not path.is_file():
        raise ConfigError(f"settings file {path} not found (or not a file); create it from "
                          f"upload.env.example, or leave out --env-file.")
    from_file = read_env_file(path) if path is not None and path.is_file() else {}
    values, origin = {}, {}
    for name in SETTINGS:
        if name in environ:
            values[name], origin[name] = environ[name], "the environment"
        else:
            values[name], origin[name] = from_file.get(name), str(path)
    url = values["UPLOAD_URL"] or None
    token = values["UPLOAD_TOKEN"] or None
    if url is not None:
        check_url(url, f"UPLOAD_URL (from {origin['UPLOAD_URL']})")
    if token is not None:
        check_token(token, f"UPLOAD_TOKEN (from {origin['UPLOAD_TOKEN']})")
    return UploadSettings(email=values["EMAIL"] or None,
                          participant_id=values["PARTICIPANT_ID"] or None, url=url, token=token)


def read_env_file(path: str | os.PathLike) -> dict[str, str | None]:
    """The ``KEY=VALUE`` pairs of a dotenv file; an unreadable or unparsable line is an error.

    python-dotenv itself only logs a warning for a line it cannot parse and skips it, which
    would upload without a token that is on that line. No message shows a line's content: it
    may hold the token.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the settings file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start - (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data[:exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{path} is not UTF-8 text: line {line}, byte {column} of the line (byte "
            f"{start + 1} of the file) is not valid UTF-8. Save the file as UTF-8 (the line is "
            f"not shown: it may hold the token).") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raw = binding.original.string
            # a binding's text starts with the blank lines before it
            line = binding.original.line + raw[:len(raw) - len(raw.lstrip())].count("\n")
            raise ConfigError(
                f"{path} line {line} cannot be parsed (the line is not shown: it may hold the "
                f"token). Each line must be KEY=VALUE, a comment starting with #, or empty; "
                f"quote a value that contains spaces, quotes or #, and close every quote.")
    return dict(dotenv_values(stream=io.StringIO(text), interpolate=True))


def check_token(token: str, what: str = "UPLOAD_TOKEN") -> str:
    """Check an upload token: printable ASCII without spaces.

    Parameters
    ----------
    token : str
        The token.
    what : str
        What the token is called in the message.

    Returns
    -------
    str
        ``token`` unchanged.

    Raises
    ------
    ConfigError
        When it is not such a string; the message gives its length and the position of the
        first bad character, never the token.
    """
    if not isinstance(token, str):
        raise ConfigError(f"{what} must be a string, got a {type(token).__name__}.")
    for i, ch in enumerate(token):
        if "\x21" <= ch <= "\x7e":
            continue
        if ch in " \t":
            kind = "a space or tab"
        elif ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029":
            kind = "a line break"
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            kind = "a control character"
        elif ch.isspace():
            kind = "a non-ASCII space"
        else:
            kind = "a non-ASCII character"
        raise ConfigError(
            f"{what} (a {len(token)}-character value, not shown) has {kind} at position "
            f"{i + 1}; a token is printable ASCII without spaces. Copy it again from the "
            f"organizers' message into upload.env as UPLOAD_TOKEN=<token>, on one line.")
    return token


def check_url(url: str, what: str = "UPLOAD_URL") -> str:
    """Check an upload URL: http(s), a host, no credentials, no spaces or control characters.

    Parameters
    ----------
    url : str
        The URL.
    what : str
        What the URL is called in the message.

    Returns
    -------
    str
        ``url`` unchanged.

    Raises
    ------
    ConfigError
        When it is not such a URL (the message shows it without credentials or query).
    """
    if not isinstance(url, str):
        raise ConfigError(f"{what} must be a string, got a {type(url).__name__}.")
    shown = display_url(url)
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in url):
        raise ConfigError(f"{what} {shown} contains spaces or control characters; give the "
                          f"endpoint's address on one line, without quotes around parts of it.")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{what} {shown} must start with https:// (or http://); got the "
                          f"scheme {parts.scheme!r}.")
    if "@" in parts.netloc:
        raise ConfigError(f"{what} {shown} (shown without them) contains credentials "
                          f"(user:password@); remove them from the URL and put the token in "
                          f"UPLOAD_TOKEN: it is sent as an Authorization header.")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1:
        raise ConfigError(f"{what} {shown} has no valid host[:port]; expected e.g. "
                          f"https://leaderboard.example.org/submit.")
    return url


def display_url(url: str) -> str:
    """Make ``url`` safe to show.

    Returns
    -------
    str
        ``url`` without ``user:password@``, query or fragment, with control characters
        escaped ("<unparsable URL>" when it cannot be parsed).
    """
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        path = parts.path + ("?..." if parts.query else "")
        text = f"{parts.scheme}://{host}{path}" if parts.scheme or host else path
    except ValueError:
        text = "<unparsable URL>"
    return clean(text)


# ---------------------------------------------------------------------------- a run's submission


def submit_run(results: Mapping[str, Any], run_dir: Path, settings: UploadSettings,
               console) -> dict:
    """Save a run's ``submission.json``; upload it when the run is eligible and a URL is set.

    Parameters
    ----------
    results : mapping
        The run's results (the content of its ``results.json``).
    run_dir : Path
        The run directory; ``submission.json`` is saved there.
    settings : UploadSettings
        Who submits, and where to.
    console : rich.console.Console
        Where the outcome is printed.

    Returns
    -------
    dict
        ``{"uploaded", "outcome", "path", ...}`` with ``outcome`` one of "uploaded" (with the
        server's ``status`` and ``verdict``), "local" (no URL: saved only), "not_eligible" or
        "failed" (with the ``reason``).
    """
    payload = submission_payload(results, email=settings.email,
                                 participant_id=settings.participant_id)
    path = run_dir / "submission.json"
    _atomic.write_json(path, payload)
    # soft_wrap: the messages' paths and URLs stay on one line, to be copied
    if not results[ELIGIBLE_KEY]:
        msg = ("not uploaded: the run is not eligible ("
               + "; ".join(results[NOT_ELIGIBLE_BECAUSE_KEY]) + f"); saved to {path}")
        console.print(msg, style="yellow", markup=False, soft_wrap=True)
        return {"uploaded": False, "outcome": "not_eligible", "path": str(path), "reason": msg}
    if not settings.url:
        msg = (f"no upload endpoint configured (UPLOAD_URL in upload.env): the submission "
               f"was saved locally to {path}")
        console.print(msg, style="yellow", markup=False, soft_wrap=True)
        return {"uploaded": False, "outcome": "local", "path": str(path), "reason": msg}
    try:
        answer = post(settings.url, payload, token=settings.token,
                      log=lambda m: console.print(m, markup=False, soft_wrap=True))
    except UploadError as exc:
        msg = f"{str(exc).rstrip('.')}. The submission is saved at {path}"
        console.print(msg, style="red", markup=False, soft_wrap=True)
        return {"uploaded": False, "outcome": "failed", "path": str(path), "reason": msg}
    console.print(f"uploaded to {display_url(settings.url)}: {answer.describe()} (a copy is at "
                  f"{path})", markup=False, soft_wrap=True)
    return {"uploaded": True, "outcome": "uploaded", "path": str(path),
            "status": answer.status, "verdict": answer.verdict}


# ---------------------------------------------------------------------------- the request


def post(url: str, payload: Mapping[str, Any], *, token: str | None = None,
         run_id: str | None = None, timeout: tuple[float, float] | None = None,
         retry_waits: tuple[float, ...] | None = None,
         log: Callable[[str], None] = print,
         sleep: Callable[[float], None] | None = None) -> Answer:
    """POST ``payload`` as JSON to ``url``, retrying after connection and gateway errors.

    Parameters
    ----------
    url : str
        The endpoint; redirects are failures.
    payload : mapping
        The submission (strict JSON: no NaN or infinity).
    token : str, optional
        Sent in an ``Authorization: Bearer`` header.
    run_id : str, optional
        The ``Idempotency-Key`` (default: ``payload["run_id"]``).
    timeout, retry_waits : tuple of float, optional
        (connect, read) timeouts and the pauses between attempts (default: ``TIMEOUT`` and
        ``RETRY_WAITS``, looked up at each call).
    log : callable
        Receives one line per retry.
    sleep : callable, optional
        Pauses between attempts (default: ``time.sleep``).

    Returns
    -------
    Answer
        The accepted answer: HTTP status, the server's verdict and the attempts made.

    Raises
    ------
    ConfigError
        When the URL, token or run id is malformed.
    DataError
        When ``payload`` is not strict JSON.
    UploadError
        When the upload fails or the server refuses it; the message never holds the token.
    """
    import requests  # slow to import, and only an upload needs it

    check_url(url)
    if token:
        check_token(token)
    timeout = TIMEOUT if timeout is None else timeout
    waits = RETRY_WAITS if retry_waits is None else retry_waits
    sleep = _sleep if sleep is None else sleep
    body, key = body_and_key(payload, payload.get("run_id") if run_id is None else run_id)
    shown_url = display_url(url)
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "Idempotency-Key": key}
    attempts = len(waits) + 1
    with requests.Session() as session:
        for attempt in range(1, attempts + 1):
            try:
                # stream=True: read at most MAX_ANSWER_BYTES of whatever the server sends
                response = session.post(url, data=body, headers=headers, timeout=timeout,
                                        auth=_Bearer(token) if token else None,
                                        allow_redirects=False, stream=True)
                try:
                    status = response.status_code
                    location = response.headers.get("Location")
                    raw = _read_some(response)
                finally:
                    response.close()
            except requests.ReadTimeout:
                # The server has the submission and may still be working on it: sending it again
                # at once would only pile up; a later resend carries the same idempotency key.
                raise UploadError(f"upload to {shown_url}: no answer within {timeout[1]:g} s "
                                  f"(read timeout); the server may still record the "
                                  f"submission") from None
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                problem = _reason(exc, token, timeout)
                if attempt < attempts:
                    log(f"upload to {shown_url}: {problem}; retrying in {waits[attempt - 1]:g} s "
                        f"(attempt {attempt + 1} of {attempts})")
                    sleep(waits[attempt - 1])
                    continue
                raise UploadError(f"upload to {shown_url} failed after {attempts} attempts: "
                                  f"{problem}") from None
            except requests.RequestException as exc:
                raise UploadError(f"upload to {shown_url} failed: "
                                  f"{_reason(exc, token, timeout)}") from None
            verdict = _verdict(raw, token)
            if 200 <= status < 300:
                return Answer(status=status, verdict=verdict, attempts=attempt)
            said = _said(verdict, raw, token)
            if 300 <= status < 400:
                where = clean(display_url(location), token) if location else "no Location"
                raise UploadError(
                    f"upload to {shown_url} refused: HTTP {status} redirect to {where}. A "
                    f"submission is never re-posted to another address; set UPLOAD_URL to the "
                    f"endpoint itself (check http:// vs https:// and the path).{said}")
            if status in RETRY_STATUSES and attempt < attempts:
                log(f"upload to {shown_url}: HTTP {status}; retrying in "
                    f"{waits[attempt - 1]:g} s (attempt {attempt + 1} of {attempts})")
                sleep(waits[attempt - 1])
                continue
            hint = {401: " Check UPLOAD_TOKEN.", 403: " Check UPLOAD_TOKEN and PARTICIPANT_ID.",
                    404: " Check UPLOAD_URL."}.get(status, "")
            tries = f" after {attempt} attempts" if attempt > 1 else ""
            raise UploadError(f"upload to {shown_url} refused{tries}: HTTP {status}.{said}{hint}")
    raise AssertionError("unreachable")  # the loop returns or raises


def _sleep(seconds: float) -> None:
    """Pause ``seconds`` (a module function, so that tests can replace it); returns None."""
    time.sleep(seconds)


def _read_some(response) -> bytes:
    """At most ``MAX_ANSWER_BYTES`` of the answer (iter_content maps urllib3's errors)."""
    chunks, size = [], 0
    for chunk in response.iter_content(8192):
        chunks.append(chunk)
        size += len(chunk)
        if size >= MAX_ANSWER_BYTES:
            break
    return b"".join(chunks)[:MAX_ANSWER_BYTES]


class _Bearer:
    """``Authorization: Bearer`` as requests auth, so that a ~/.netrc entry cannot replace it."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request):
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return "_Bearer(<token not shown>)"


# ---------------------------------------------------------------------------- what is shown


def clean(text: str, token: str | None = None, limit: int = MAX_SHOWN) -> str:
    """Make ``text`` safe to print.

    Parameters
    ----------
    text : str
        What a server, a library or a file said.
    token : str, optional
        A secret to replace with ``<token>``.
    limit : int
        Most characters kept.

    Returns
    -------
    str
        ``text`` with the token replaced, control characters and backslashes escaped, and
        cut to ``limit`` characters (saying so).
    """
    text = str(text)
    if token:
        text = text.replace(token, "<token>")
    n = len(text)
    escaped = "".join(ch.encode("unicode_escape").decode("ascii")
                      if ch == "\\" or unicodedata.category(ch).startswith("C") else ch
                      for ch in text[:limit])
    return escaped + (f"... ({n} characters, cut)" if n > limit else "")


def _verdict(raw: bytes, token: str | None) -> dict[str, str]:
    """The known fields of a JSON object answer, cleaned for printing."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for key in VERDICT_KEYS:
        if key in data and data[key] is not None:
            value = data[key]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                   default=str)
            out[key] = clean(text, token)
    return out


def _said(verdict: dict[str, str], raw: bytes, token: str | None) -> str:
    """What the server said, as a sentence to append to a message ("" when nothing)."""
    if verdict:
        return " Server verdict: " + ", ".join(f"{k}: {v}" for k, v in verdict.items()) + "."
    text = raw.decode("utf-8", errors="replace").strip()
    return f" Server said: {clean(text, token)}" if text else ""


def _reason(exc: BaseException, token: str | None, timeout: tuple[float, float]) -> str:
    """A short reason for a requests exception: the innermost cause, scrubbed of the token."""
    import requests  # slow to import; loaded already when an upload failed

    if isinstance(exc, requests.ConnectTimeout):
        return f"no connection within {timeout[0]:g} s (connect timeout)"
    inner, seen = exc, set()
    while id(inner) not in seen:
        seen.add(id(inner))
        nested = getattr(inner, "reason", None)
        if not isinstance(nested, BaseException):
            nested = next((a for a in reversed(getattr(inner, "args", ()))
                           if isinstance(a, BaseException)), None)
        if nested is None:
            break
        inner = nested
    text = str(inner)
    # urllib3 prefixes its messages with the repr of the connection object
    text = re.sub(r"^<[^>]*>:\s*", "", text)
    return clean(f"{type(inner).__name__}: {text}" if text else type(inner).__name__, token)
