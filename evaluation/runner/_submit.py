"""Uploading a submission to the leaderboard: its settings, its body, and the server's verdict.

The settings (``EMAIL``, ``PARTICIPANT_ID``, ``UPLOAD_URL``, ``UPLOAD_TOKEN``) come from the
environment or from an ``upload.env`` file; the file is read only when an upload is asked for.
The token is checked before any request and never printed: messages give its length and the
position of a bad character, nothing else.

``post`` sends the submission with the leaderboard's HTTP client (``evaluation.contract``):
retries after connection and gateway errors, one ``Idempotency-Key`` (the run id) for every
attempt, no redirects, bounded answers and waits, and the token scrubbed from what is shown.
"""

from __future__ import annotations

import io
import ipaddress
import os
import warnings
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
    FOLD_KEY,
    FOLDS_KEY,
    HARNESS_VERSION_KEY,
    K_KEY,
    LIMITS,
    NOT_ELIGIBLE_BECAUSE_KEY,
    PREDICTIONS_MEDIA_TYPE,
    RUN_HASH_KEY,
    USER_VALUES_KEY,
    HttpClient,
    Limits,
    Reply,
    body_and_key,
    check_token,
    check_url,
    display_url,
    encode_predictions,
    submission_payload,
)
from evaluation.errors import ConfigError, UploadError
from evaluation.runner._store import read_predictions
from evaluation.runner._user_values import run_user_values

#: What a refusal's message adds, by HTTP status.
HINTS = {401: " Check UPLOAD_TOKEN.", 403: " Check UPLOAD_TOKEN and PARTICIPANT_ID.",
         404: " Check UPLOAD_URL."}
SETTINGS = ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN")
#: The ``status`` of a leaderboard's receipt for a stored submission: new, or stored already.
RECEIPT_STATUSES = ("accepted", "duplicate")
#: The upload a run directory keeps: its predictions, with its submission as the claim.
PREDICTIONS_FILE = "submission.predictions"
#: The environment variable with an upload's deadline in seconds, its retries included
#: (default: ``LIMITS.deadline``, 60 s).
DEADLINE_ENV = "UPLOAD_DEADLINE"


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
    values: dict[str, str | None] = {}
    origin: dict[str, str] = {}
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

    What is uploaded is the run's predictions (``submission.predictions``: every fold's
    top-k lists, kept in the run directory, with the submission as the team's claim): the
    leaderboard scores them with the organizers' data. ``submission.json`` (the claim, with
    the run's per-user values) is saved beside it; a run of an older harness, which kept no
    predictions, uploads it instead, which only a competition that accepts claims takes.

    Returns
    -------
    dict
        ``{"uploaded", "outcome", "path", ...}`` with ``outcome`` one of "uploaded" (with the
        server's ``status`` and ``verdict``), "local" (no URL: saved only), "not_eligible" or
        "failed" (with the ``reason``).
    """
    payload = submission_payload(results, email=settings.email,
                                 participant_id=settings.participant_id)
    blob, why_not = run_user_values(results, run_dir)
    if blob is not None:
        payload[USER_VALUES_KEY] = blob
    else:
        console.print(f"the submission carries no per-user values ({why_not}): the leaderboard "
                      f"accepts it but leaves it out of the comparisons that pair teams user by "
                      f"user; run again with this harness to include them", style="yellow",
                      markup=False, soft_wrap=True)
    path = run_dir / "submission.json"
    _atomic.write_json(path, payload)
    body: bytes | None = None
    try:
        body = predictions_body(payload, results, run_dir)
    except ConfigError as exc:
        console.print(f"the submission carries no predictions ({exc}): only a competition "
                      f"that accepts claims (accept_claims = true) takes it", style="yellow",
                      markup=False, soft_wrap=True)
    else:  # beside submission.json, which `submit` is given to send it again
        _atomic.write_bytes(run_dir / PREDICTIONS_FILE, body)
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
    log = lambda m: console.print(m, markup=False, soft_wrap=True)  # noqa: E731
    try:
        answer = (post(settings.url, payload, token=settings.token, log=log) if body is None
                  else post_predictions(settings.url, body, str(payload.get("run_id")),
                                        token=settings.token, log=log))
    except UploadError as exc:
        msg = f"{str(exc).rstrip('.')}. The submission is saved at {path}"
        console.print(msg, style="red", markup=False, soft_wrap=True)
        return {"uploaded": False, "outcome": "failed", "path": str(path), "reason": msg}
    console.print(f"uploaded to {display_url(settings.url)}: {answer.describe()} (a copy is at "
                  f"{path})", markup=False, soft_wrap=True)
    return {"uploaded": True, "outcome": "uploaded", "path": str(path),
            "status": answer.status, "verdict": answer.verdict}


def predictions_body(payload: Mapping[str, Any], results: Mapping[str, Any],
                     run_dir: Path) -> bytes:
    """The predictions upload of a finished run: every fold's kept lists
    (``fold_<i>_predictions.npz``), with ``payload`` less its per-user values as the claim.

    Raises
    ------
    ConfigError
        When a fold's lists are missing (a run of an older harness) or unreadable.
    """
    folds = sorted(results.get(FOLDS_KEY) or [], key=lambda f: f.get(FOLD_KEY, 0))
    k = results.get(K_KEY)
    if not folds or not isinstance(k, int):
        raise ConfigError("the results have no folds or no k")
    lists = []
    for fold in folds:
        users, items = read_predictions(run_dir, int(fold[FOLD_KEY]))
        if items.shape[1] != k:
            raise ConfigError(f"fold {fold[FOLD_KEY]}'s kept lists have {items.shape[1]} "
                              f"columns, the run's k is {k}; run the model again")
        lists.append((users.astype("<i4").tobytes(), items.astype("<i4").tobytes()))
    claim = {key: value for key, value in payload.items() if key != USER_VALUES_KEY}
    return encode_predictions(claim, k=k, run_hash=str(payload.get(RUN_HASH_KEY)),
                              harness_version=str(results.get(HARNESS_VERSION_KEY)),
                              folds=lists)


# ---------------------------------------------------------------------------- the request


def post_predictions(url: str, body: bytes, run_id: str, *, token: str | None = None,
                     limits: Limits | None = None, log: Callable[[str], None] = print,
                     sleep: Callable[[float], None] | None = None) -> Answer:
    """POST a predictions upload (``body``, see ``evaluation.contract.encode_predictions``)
    to ``url``, as :func:`post` sends a JSON one: the same retries, ``Idempotency-Key`` (the
    run id) and receipt check.

    Raises
    ------
    ConfigError
        When the URL, token or run id is malformed.
    UploadError
        When the upload fails or the server refuses it; the message never holds the token.
    """
    client = HttpClient(url, token, limits=limits or upload_limits(), log=log, sleep=sleep)
    _, key = body_and_key({}, run_id)  # the run id, checked as a header value
    label = f"upload to {display_url(url)}"
    warning = plain_http_warning(url)
    if warning:
        log(warning)
    reply = client.send("POST", body=body, key=key, label=label,
                        content_type=PREDICTIONS_MEDIA_TYPE)
    if not reply.ok:
        raise client.refusal(reply, label, HINTS)
    if not is_receipt(reply.json()):
        raise UploadError(
            f"{label}: HTTP {reply.status}, but the answer is not the leaderboard's receipt, so "
            f"the submission may not be stored.{client.said(reply)} Check UPLOAD_URL.")
    return _answer(client, reply)



def post(url: str, payload: Mapping[str, Any], *, token: str | None = None,
         run_id: str | None = None, limits: Limits | None = None,
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
    limits : evaluation.contract.Limits, optional
        Timeouts, deadline (of the whole upload, retries included), answer size and pauses
        between attempts (default: ``upload_limits()``: ``evaluation.contract.LIMITS`` with
        the deadline of ``$UPLOAD_DEADLINE``, when set).
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
    client = HttpClient(url, token, limits=limits or upload_limits(), log=log, sleep=sleep)
    # a payload's run id is checked as text: an edited file may hold anything there
    key_id = str(payload.get("run_id")) if run_id is None else run_id
    body, key = body_and_key(payload, key_id)
    label = f"upload to {display_url(url)}"
    warning = plain_http_warning(url)
    if warning:
        log(warning)
    reply = client.send("POST", body=body, key=key, label=label)
    if not reply.ok:
        raise client.refusal(reply, label, HINTS)
    if not is_receipt(reply.json()):
        raise UploadError(
            f"{label}: HTTP {reply.status}, but the answer is not the leaderboard's receipt (a "
            f"JSON object with status 'accepted' or 'duplicate' and a submission_id), so the "
            f"submission may not be stored.{client.said(reply)} Check UPLOAD_URL: a login "
            f"page or a proxy may answer in the leaderboard's place.")
    return _answer(client, reply)


def upload_limits(environ: Mapping[str, str] | None = None) -> Limits | None:
    """``LIMITS`` with the deadline of the environment's ``UPLOAD_DEADLINE`` (seconds); None
    when it is not set (the client's default limits, ``LIMITS``).

    Raises
    ------
    ConfigError
        When ``UPLOAD_DEADLINE`` is not a number of seconds above 0.
    """
    text = (os.environ if environ is None else environ).get(DEADLINE_ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):  # also refuses nan
        raise ConfigError(f"{DEADLINE_ENV}={text[:40]!r} is not a number of seconds above 0; "
                          f"set it to e.g. 120 (or unset it: {LIMITS.deadline:g} s).")
    return replace(LIMITS, deadline=seconds)


def is_receipt(data: Any) -> bool:
    """Whether ``data`` is a leaderboard's receipt of a stored submission: a JSON object with
    ``status`` "accepted" or "duplicate" and an integer ``submission_id``."""
    return (isinstance(data, dict) and data.get("status") in RECEIPT_STATUSES
            and isinstance(data.get("submission_id"), int)
            and not isinstance(data.get("submission_id"), bool))


def plain_http_warning(url: str) -> str | None:
    """A warning when ``url`` is plain ``http://`` to a host other than this machine (the
    token and the submission would cross the network unencrypted); None otherwise."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http":
        return None
    host = (parts.hostname or "").lower()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost" or host.endswith(".localhost")
    if loopback:
        return None
    return (f"warning: UPLOAD_URL {display_url(url)} is plain http:// to {host}: the token and "
            f"the submission cross the network unencrypted; ask the organizers for the "
            f"https:// address")


def _answer(client: HttpClient, reply: Reply) -> Answer:
    """The accepted ``reply`` with the fields of the server's verdict, safe to print."""
    return Answer(status=reply.status, verdict=client.verdict(reply), attempts=reply.attempts)


#: The 2022 runner's arguments that now live in ``UploadSettings``.
_OLD_UPLOAD_ARGS = {"email": "email", "participant_id": "participant_id"}


def upload_settings(upload: UploadSettings | None, old: dict[str, Any]) -> UploadSettings:
    """The checked upload settings, from ``upload`` or the 2022 runner's keyword arguments."""
    given = {name: value for name, value in old.items() if value is not None}
    if not given:
        return check_settings(UploadSettings() if upload is None else upload)
    if upload is not None:
        raise ConfigError(f"EvalRSRunner got both upload=UploadSettings(...) and the old "
                          f"keyword arguments {sorted(given)}; pass upload= only.")
    fields = ", ".join(f"{_OLD_UPLOAD_ARGS[n]}=..." for n in given)
    warnings.warn(f"EvalRSRunner({', '.join(f'{n}=...' for n in given)}) is the 2022 spelling: "
                  f"pass upload=UploadSettings({fields}) (from evaluation.runner)",
                  DeprecationWarning, stacklevel=3)
    settings = UploadSettings(**{_OLD_UPLOAD_ARGS[n]: v for n, v in given.items()})
    return check_settings(settings)
