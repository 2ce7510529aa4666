"""The leaderboard's HTTP API (FastAPI): submissions, the board, a submission, health, the page.

The organizers' token also reads a submission's stored body (``.../payload``) and records the
verdict of a reproduction (``POST .../reproduction``); for a team's token both answer 404, as
for a submission that does not exist.

Every answer is JSON except the page (``GET /``). A refusal is
``{"status": "rejected", "reason": "..."}`` (with ``detail`` when FastAPI itself refused the
request's parameters), never a traceback. The upload's body is read from the stream and
refused once it passes ``MAX_BODY_BYTES``, whatever ``Content-Length`` says or when it is
absent (a chunked upload). Writes need a team's token (``Authorization: Bearer``); a missing,
malformed, unknown or revoked token gets one and the same 401.
"""


import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, TypeAdapter
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from evaluation._version import __version__
from evaluation.errors import SubmissionRejected
from evaluation.server._board import Board
from evaluation.server._competition import Competition
from evaluation.server._db import make_engine, upgrade
from evaluation.server._reproduction import ReproductionReport
from evaluation.server._schema import MAX_BODY_BYTES, Submission
from evaluation.server._store import Caller, LimitReached, Receipt, Store, SubmissionView

log = logging.getLogger("evaluation.server")

#: The one answer to a request without a valid token: it does not say what was wrong with it.
UNAUTHORIZED = ("missing, malformed, unknown or revoked token: send the header "
                "'Authorization: Bearer <token>' with the token the organizers gave you")
#: Seconds a client is asked to wait when the database is busy or unavailable.
BUSY_RETRY_AFTER = 2


# ---------------------------------------------------------------------------- answers


class Rejected(BaseModel):
    """A refusal: why, in words; ``detail`` lists the parameter errors FastAPI found."""

    status: str = "rejected"
    reason: str
    detail: list | None = None


class ReceiptModel(BaseModel):
    """The answer to an accepted upload (201) or to a repeat of a stored one (200)."""

    status: str = Field(description='"accepted" (new) or "duplicate" (stored already)')
    submission_id: int
    phase: str
    phase1_score: float | None
    leaderboard_score: float | None = Field(description="recomputed by the server")
    interval: tuple[float, float] | None = Field(description="95 % bootstrap over folds")
    rank: int | None = Field(description="the team's place on the phase's board; null when "
                                         "the phase's scores are hidden")
    flagged: bool = Field(description="the uploaded score differs from the recomputed one")
    message: str


class Recorded(BaseModel):
    """The answer to a recorded reproduction verdict."""

    status: str = "recorded"
    submission_id: int
    verdict: str


class Health(BaseModel):
    """``{"status": "ok"}`` when the database answers."""

    status: str


# the board and a submission are answered as their dataclasses, converted by pydantic
_BOARD = TypeAdapter(Board)
_SUBMISSION = TypeAdapter(SubmissionView)


def board_json(board: Board) -> dict:
    """``board`` as the JSON the API answers."""
    return _BOARD.dump_python(board, mode="json")


def _receipt_json(receipt: Receipt) -> dict:
    return ReceiptModel(**{k: getattr(receipt, k) for k in ReceiptModel.model_fields}) \
        .model_dump(mode="json")


def _submission_json(view: SubmissionView) -> dict:
    return _SUBMISSION.dump_python(view, mode="json")


def rejected(status: int, reason: str, headers: dict | None = None,
             detail: list | None = None) -> JSONResponse:
    """A refusal as a JSON response: ``{"status": "rejected", "reason": ...}``."""
    body = {"status": "rejected", "reason": reason}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


class _Unauthorized(Exception):
    """No valid token (answered 401 with ``WWW-Authenticate: Bearer``)."""


# ---------------------------------------------------------------------------- the body


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, read from the stream and refused once it passes ``limit`` bytes.

    ``Content-Length`` is a claim: a larger one is refused before reading, and a smaller
    (lying) one or none (chunked) does not stop the count.

    Raises
    ------
    SubmissionRejected
        413 when the body exceeds ``limit``; 400 when ``Content-Length`` is not a number.
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
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise SubmissionRejected(413, _too_large(f"more than {limit} bytes", limit))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(what: str, limit: int) -> str:
    return (f"the body has {what}; at most {limit} bytes ({limit // 1024} KiB) are accepted. "
            f"Send the submission.json the runner wrote, unchanged.")


# ---------------------------------------------------------------------------- the app


def create_app(competition: Competition, db_url: str | Engine, *,
               clock: Callable[[], datetime] | None = None, prepare: bool = True) -> FastAPI:
    """The leaderboard app of ``competition`` on the database ``db_url``.

    Parameters
    ----------
    competition : Competition
        From ``load_competition``.
    db_url : str or sqlalchemy.engine.Engine
        The database (``sqlite:///leaderboard.db``, ``postgresql+psycopg://...``).
    clock : callable, optional
        Returns the current time, an aware datetime (default: the system clock, UTC); tests
        move it across days and phases.
    prepare : bool
        Migrate the schema (``upgrade``) and pin the baselines before returning (default).

    Returns
    -------
    fastapi.FastAPI

    Raises
    ------
    ConfigError
        When the database cannot be opened or migrated, or a baseline file is invalid.
    """
    engine = db_url if isinstance(db_url, Engine) else make_engine(db_url)
    store = Store(engine, competition, clock)
    if prepare:
        upgrade(engine)
        store.pin_baselines()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        engine.dispose()

    app = FastAPI(
        title=f"{competition.name} leaderboard", version=__version__, lifespan=lifespan,
        description="Submissions, the board of each phase, and the state of a submission. "
                    "Writes need a team's token: `Authorization: Bearer <token>`.",
    )
    app.state.store = store
    _add_error_handlers(app)
    _add_routes(app, store)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SubmissionRejected)
    async def _rejected(request: Request, exc: SubmissionRejected):
        headers = ({"Retry-After": str(exc.retry_after)} if isinstance(exc, LimitReached)
                   else None)
        return rejected(exc.status, exc.reason, headers)

    @app.exception_handler(_Unauthorized)
    async def _unauthorized(request: Request, exc: _Unauthorized):
        return rejected(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        return rejected(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        where = "; ".join(".".join(str(p) for p in e.get("loc", ())) + ": " + str(e.get("msg"))
                          for e in errors[:3])
        detail = jsonable_encoder([{k: e[k] for k in ("loc", "msg", "type") if k in e}
                                   for e in errors])
        return rejected(422, f"invalid request: {where}", detail=detail)

    @app.exception_handler(OperationalError)
    @app.exception_handler(PoolTimeout)
    async def _busy(request: Request, exc: Exception):
        # the database is locked past its timeout, or down: a client may try again later (the
        # upload client retries 503 with the same idempotency key)
        log.warning("database unavailable: %s", type(exc).__name__)
        return JSONResponse({"status": "unavailable", "reason": "the database is busy or "
                             "unavailable; try again in a moment"}, status_code=503,
                            headers={"Retry-After": str(BUSY_RETRY_AFTER)})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"status": "error", "reason": "internal error; the organizers "
                             "find it in the server's log"}, status_code=500)


def _add_routes(app: FastAPI, store: Store) -> None:
    bearer = HTTPBearer(auto_error=False, description="a team's or an organizer's token")

    def optional_caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    ) -> Caller | None:
        """The caller, None without an Authorization header; a bad header is a 401."""
        if authorization is None:
            return None
        caller = store.authenticate(credentials.credentials if credentials else None)
        if caller is None:
            raise _Unauthorized()
        return caller

    async def caller_required(caller: Annotated[Caller | None, Depends(optional_caller)]
                              ) -> Caller:
        # async: no I/O here, so FastAPI does not send it to the thread pool
        if caller is None:
            raise _Unauthorized()
        return caller

    errors = {code: {"model": Rejected} for code in (401, 403, 404, 409, 413, 422, 429)}
    try:
        request_schema = Submission.model_json_schema(by_alias=True)
    except Exception:  # the docs only; never stops the server
        request_schema = {"type": "object"}

    @app.post(
        "/api/v1/submissions", status_code=201, response_model=ReceiptModel,
        responses={200: {"model": ReceiptModel, "description": "a repeat of a stored run"},
                   **errors},
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": request_schema}}}},
        summary="Submit a run (the submission.json that the runner writes)",
    )
    async def post_submission(
        request: Request,
        caller: Annotated[Caller, Depends(caller_required)],
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    ):
        if caller.team_id is None:
            raise SubmissionRejected(403, "an organizer's token cannot submit; use a team's "
                                          "token")
        body = await read_body(request)
        receipt = await run_in_threadpool(store.submit, caller.team_id, body, idempotency_key)
        return JSONResponse(_receipt_json(receipt), status_code=receipt.http_status)

    @app.get("/api/v1/leaderboard", response_model=Board,
             responses={401: {"model": Rejected}, 404: {"model": Rejected}},
             summary="The board of a phase (default: the current one)")
    def get_leaderboard(caller: Annotated[Caller | None, Depends(optional_caller)],
                        phase: str | None = None):
        board = store.board(phase, admin=caller is not None and caller.admin)
        return JSONResponse(board_json(board))

    @app.get("/api/v1/submissions/{submission_id}", response_model=SubmissionView,
             responses={401: {"model": Rejected}, 404: {"model": Rejected}},
             summary="One submission: the team's own, or any with an organizer's token")
    def get_submission(submission_id: int,
                       caller: Annotated[Caller, Depends(caller_required)]):
        view = store.get_submission(submission_id, caller)
        if view is None:  # another team's and a missing one look the same
            raise SubmissionRejected(404, f"no submission {submission_id} of your team")
        return JSONResponse(_submission_json(view))

    @app.get("/api/v1/submissions/{submission_id}/payload",
             responses={200: {"content": {"application/json": {}},
                              "description": "the stored body (canonical JSON)"},
                        401: {"model": Rejected}, 404: {"model": Rejected}},
             summary="The body of a submission as stored (organizers)")
    def get_payload(submission_id: int, caller: Annotated[Caller, Depends(caller_required)]):
        payload = store.payload(submission_id, caller)
        if payload is None:  # a team's token and a missing submission look the same
            raise SubmissionRejected(404, f"no submission {submission_id} whose body you may "
                                          f"read (organizers only)")
        return Response(payload, media_type="application/json")

    try:
        report_schema = ReproductionReport.model_json_schema()
    except Exception:  # the docs only; never stops the server
        report_schema = {"type": "object"}

    @app.post(
        "/api/v1/submissions/{submission_id}/reproduction", response_model=Recorded,
        responses={**errors},
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": report_schema}}}},
        summary="Record the verdict of a reproduction (organizers)",
    )
    async def post_reproduction(request: Request, submission_id: int,
                                caller: Annotated[Caller, Depends(caller_required)]):
        if not caller.admin:
            raise SubmissionRejected(404, f"no submission {submission_id} whose reproduction "
                                          f"you may record (organizers only)")
        body = await read_body(request)
        answer = await run_in_threadpool(store.record_reproduction, submission_id, body)
        return JSONResponse(Recorded(**answer).model_dump(mode="json"))

    @app.get("/healthz", response_model=Health, summary="Whether the database answers")
    def healthz():
        store.ping()
        return {"status": "ok"}

    @app.get("/", response_class=HTMLResponse, summary="The board as a page",
             responses={404: {"model": Rejected}, 503: {"model": Rejected}})
    def page(phase: str | None = None):
        try:
            from evaluation.server._page import render_board
        except ImportError:
            return rejected(503, "page not available")
        return HTMLResponse(render_board(store.board(phase)))
