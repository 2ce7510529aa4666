"""How the API answers what went wrong: every refusal and error as JSON, never a traceback.

A refusal (``SubmissionRejected``, a bad token, a route or method that does not exist, bad
parameters) is ``{"status": "rejected", "reason": ...}`` with its status; a busy or
unavailable database is 503 with ``Retry-After``; anything else is a 500 whose details go to
the server's log only.
"""

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import BUSY_RETRY_AFTER, rejected
from evaluation.server.api._deps import UNAUTHORIZED, Unauthorized
from evaluation.server.db import WriteBusy
from evaluation.server.store import LimitReached

log = logging.getLogger("evaluation.server")



async def _rejected(request: Request, exc: SubmissionRejected) -> JSONResponse:
    headers = ({"Retry-After": str(exc.retry_after)} if isinstance(exc, LimitReached)
               else None)
    return rejected(exc.status, exc.reason, headers)


async def _unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
    return rejected(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    return rejected(exc.status_code, str(exc.detail), getattr(exc, "headers", None))


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    where = "; ".join(".".join(str(p) for p in e.get("loc", ())) + ": " + str(e.get("msg"))
                      for e in errors[:3])
    detail = jsonable_encoder([{k: e[k] for k in ("loc", "msg", "type") if k in e}
                               for e in errors])
    return rejected(422, f"invalid request: {where}", detail=detail)


#: What a database error's message says, and what the client is told (the organizers find
#: the rest in the log, and ``/readyz`` says it too).
_UNAVAILABLE = (("readonly", "the database is read-only; the organizers have been told"),
                ("read-only", "the database is read-only; the organizers have been told"),
                ("disk is full", "the database's disk is full; the organizers have been told"),
                ("no space", "the database's disk is full; the organizers have been told"))


async def _busy(request: Request, exc: Exception) -> JSONResponse:
    # the database is locked past the write's deadline, or cannot be written, or is down: a
    # client may try again later (the upload client retries 503 with the same idempotency key)
    message = str(getattr(exc, "orig", None) or exc)
    reason = next((said for key, said in _UNAVAILABLE if key in message.lower()), None)
    if reason is None:
        log.warning("database busy or unavailable: %s: %s", type(exc).__name__, message[:200])
        reason = "the database is busy or unavailable; try again in a moment"
    else:
        log.error("the database cannot take writes (GET /readyz says why): %s", message[:200])
    return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503,
                        headers={"Retry-After": str(BUSY_RETRY_AFTER)})


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return JSONResponse({"status": "error", "reason": "internal error; the organizers "
                         "find it in the server's log"}, status_code=500)


def add_error_handlers(app: FastAPI) -> None:
    """Answer every refusal and error of ``app`` as JSON (see the module's docstring)."""
    handlers = ((SubmissionRejected, _rejected), (Unauthorized, _unauthorized),
                (StarletteHTTPException, _http), (RequestValidationError, _invalid),
                (OperationalError, _busy), (PoolTimeout, _busy), (WriteBusy, _busy),
                (Exception, _unexpected))
    for exception, handler in handlers:
        app.exception_handler(exception)(handler)
