"""What the routes share: the store, the caller behind a request's token, a bounded body.

Writes need a team's token (``Authorization: Bearer``); a missing, malformed, unknown or
revoked token gets one and the same 401. The body is read from the stream and refused once it
passes its limit, whatever ``Content-Length`` says or when it is absent (a chunked upload).
"""

import asyncio
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Header, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from evaluation.errors import SubmissionRejected
from evaluation.server.core import MAX_BODY_BYTES
from evaluation.server.db import (
    WRITE_WAIT_S,
    Caller,
    Database,
    WriteBusy,
    authenticate,
    write_deadline,
)
from evaluation.server.store import carry_due, carry_opened

#: Seconds a request's body may take to arrive (the headers have ``HEADER_TIMEOUT_S``).
BODY_TIMEOUT_S = 30.0

#: Writes of one process that run (in the thread pool) at once; the others wait for a place,
#: without a thread, until their deadline. The database takes one writer at a time anyway, and
#: the thread pool stays free for the reads (the board, the page, ``/healthz``).
MAX_RUNNING_WRITES = 4

_T = TypeVar("_T")

#: The largest id a row can have on every database (PostgreSQL's ``integer``): a larger one
#: in a path is refused (422) before it reaches the database, whose driver would fail on it.
MAX_ROW_ID = 2**31 - 1

#: A submission's id in a path: 1 to ``MAX_ROW_ID``.
SubmissionId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="a submission's id")]

#: The one answer to a request without a valid token: it does not say what was wrong with it.
UNAUTHORIZED = ("missing, malformed, unknown or revoked token: send the header "
                "'Authorization: Bearer <token>' with the token the organizers gave you")


class Unauthorized(Exception):
    """No valid token (answered 401 with ``WWW-Authenticate: Bearer``)."""


async def get_store(request: Request) -> Database:
    """The app's store (``create_app`` puts it in ``app.state.store``)."""
    # async: no I/O here, so FastAPI does not send it to the thread pool
    return request.app.state.store


StoreDep = Annotated[Database, Depends(get_store)]

_bearer = HTTPBearer(auto_error=False, description="a team's or an organizer's token")


def optional_caller(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    store: StoreDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Caller | None:
    """The caller, None without an Authorization header; a bad header is a 401."""
    if authorization is None:
        return None
    caller = authenticate(store, credentials.credentials if credentials else None)
    if caller is None:
        raise Unauthorized()
    return caller


OptionalCallerDep = Annotated[Caller | None, Depends(optional_caller)]


async def caller_required(caller: OptionalCallerDep) -> Caller:
    """The caller; a request without an Authorization header is a 401."""
    # async: no I/O here, so FastAPI does not send it to the thread pool
    if caller is None:
        raise Unauthorized()
    return caller


CallerDep = Annotated[Caller, Depends(caller_required)]


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, read from the stream and refused once it passes ``limit`` bytes.

    ``Content-Length`` is a claim: a larger one is refused before reading, and a smaller
    (lying) one or none (chunked) does not stop the count. The whole body must arrive within
    the app's ``body_timeout`` (``BODY_TIMEOUT_S``): a client that drips it is cut off.

    Raises
    ------
    SubmissionRejected
        413 when the body exceeds ``limit``; 400 when ``Content-Length`` is not a number; 408
        when the body is not in by the deadline.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise SubmissionRejected(400, f"Content-Length {declared[:40]!r} is not a "
                                          f"number") from None
        if size > limit:
            raise SubmissionRejected(413, _too_large(f"{size} bytes", limit))
    seconds = getattr(request.app.state, "body_timeout", BODY_TIMEOUT_S)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise SubmissionRejected(413, _too_large(f"more than {limit} bytes", limit))
                chunks.append(chunk)
    except TimeoutError:
        raise SubmissionRejected(408, f"the body did not arrive within {seconds:g} s ({size} "
                                      f"bytes came); send it at once") from None
    return b"".join(chunks)


def _too_large(what: str, limit: int) -> str:
    return (f"the body has {what}; at most {limit} bytes ({limit // 1024} KiB) are accepted. "
            f"Send the submission.json the runner wrote, unchanged.")


async def run_write(request: Request, write: Callable[..., _T], *args: object) -> _T:
    """Run ``write(*args)`` in the thread pool, with a place among ``MAX_RUNNING_WRITES`` and
    a deadline (the app's ``write_wait`` seconds, ``WRITE_WAIT_S`` by default) for all its
    waits: for a place, the write queue and the database's locks.

    Raises
    ------
    WriteBusy
        When the deadline passes first (answered 503 with ``Retry-After``).
    """
    state = request.app.state
    seconds = getattr(state, "write_wait", WRITE_WAIT_S)
    gate = getattr(state, "write_gate", None)
    if gate is None:  # made in the server's event loop, on the first write
        gate = state.write_gate = asyncio.Semaphore(MAX_RUNNING_WRITES)
    with write_deadline(seconds):
        try:
            await asyncio.wait_for(gate.acquire(), seconds)
        except TimeoutError:
            raise WriteBusy(f"no place among the running writes within {seconds:g} s") from None
        try:
            return await run_in_threadpool(write, *args)
        finally:
            gate.release()


async def carry_when_due(store: Database) -> None:
    """Carry into the phases that have opened and carry from another, unless done (a read of
    the clock only, after the first time): before a route answers about a phase."""
    if carry_due(store):
        await run_in_threadpool(carry_opened, store)


def carry_if_due(store: Database) -> None:
    """``carry_when_due`` in a route that runs in the thread pool already."""
    if carry_due(store):
        carry_opened(store)
