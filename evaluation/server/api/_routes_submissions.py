"""The submissions: upload a run (its predictions, or where the competition accepts them a
claim of scores only), list a team's own, read one back, and (organizers) read its stored body
and its predictions.

An upload names its phase in the URL (``/api/v1/phases/{phase}/submissions``) or the ``X-Phase``
header, or goes to the phase open now (``/api/v1/submissions`` without the header, as older
clients send it). Everything the request's headers decide (the token, the phase, the daily
limit) is decided before its body is read.

Another team's submission and a missing one get the same 404, and so does a team's token
asking for a stored body.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from evaluation.contract import PREDICTIONS_MEDIA_TYPE, cut
from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import (
    REFUSALS,
    ReceiptModel,
    Rejected,
    final_json,
    own_json,
    receipt_json,
    submission_json,
)
from evaluation.server.api._deps import (
    CallerDep,
    StoreDep,
    SubmissionId,
    carry_if_due,
    carry_when_due,
    read_body,
    run_write,
)
from evaluation.server.core import (
    MAX_DESCRIPTION,
    MAX_URL,
    FactSheet,
    Submission,
    read_fact_sheet,
    strict_json,
)
from evaluation.server.db import Caller, Database
from evaluation.server.store import (
    SubmissionView,
    check_before_body,
    mark_final,
    own_submissions,
    payload,
    predictions,
    submit,
    team_queue,
)
from evaluation.server.store import get_submission as submission_view

router = APIRouter()

try:
    _REQUEST_SCHEMA = Submission.model_json_schema(by_alias=True)
except Exception:  # the docs only; never stops the server
    _REQUEST_SCHEMA = {"type": "object"}


_UPLOAD_DOC: dict[str, Any] = dict(
    status_code=201, response_model=ReceiptModel,
    responses={200: {"model": ReceiptModel, "description": "a repeat of a stored run"},
               **REFUSALS},
    openapi_extra={"requestBody": {"required": True, "content": {
        PREDICTIONS_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
        "application/json": {"schema": _REQUEST_SCHEMA}}}},
)

#: The ``Idempotency-Key`` header: the run id (the upload client always sends it).
IdempotencyKey = Annotated[str | None, Header(
    alias="Idempotency-Key", description="the run id; at the daily limit a repeat of a "
                                         "stored run is answered from it alone")]
#: The ``X-Phase`` header: the phase the upload is for (default: the phase open now).
PhaseHeader = Annotated[str | None, Header(
    alias="X-Phase", description="the phase the upload is for (default: the one open now)")]


@router.post("/api/v1/submissions", **_UPLOAD_DOC,
             summary="Submit a run (its predictions, submission.predictions, scored by the "
                     "organizers; or a claim of scores only where the competition accepts "
                     "claims) to the phase of the X-Phase header, or to the phase open now")
async def post_submission(request: Request, caller: CallerDep, store: StoreDep,
                          idempotency_key: IdempotencyKey = None,
                          x_phase: PhaseHeader = None) -> JSONResponse:
    return await _upload(request, caller, store, idempotency_key, x_phase)


@router.post("/api/v1/phases/{phase}/submissions", **_UPLOAD_DOC,
             summary="Submit a run (its predictions, or a claim where the competition "
                     "accepts claims) to a phase")
async def post_phase_submission(phase: str, request: Request, caller: CallerDep,
                                store: StoreDep, idempotency_key: IdempotencyKey = None,
                                x_phase: PhaseHeader = None) -> JSONResponse:
    if x_phase is not None and x_phase != phase:
        raise SubmissionRejected(422, f"the X-Phase header {cut(x_phase)!r} names another "
                                      f"phase than the URL ({cut(phase)!r}); send one of them")
    return await _upload(request, caller, store, idempotency_key, phase)


async def _upload(request: Request, caller: Caller, store: Database,
                  idempotency_key: str | None, phase: str | None) -> JSONResponse:
    if caller.team_id is None:
        raise SubmissionRejected(403, "an organizer's token cannot submit; use a team's "
                                      "token")
    # everything the headers decide is decided before the body is read: the token (a
    # dependency), the phase, the daily limit (a repeat at the limit is known by its key);
    # a refused upload costs no reading and no parsing, however large its body
    await carry_when_due(store)
    await run_in_threadpool(check_before_body, store, caller.team_id, idempotency_key, phase)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    # a predictions upload is larger than a claim: the competition file bounds it
    limit = store.require_competition().max_upload_bytes \
        if media == PREDICTIONS_MEDIA_TYPE else None
    body = await (read_body(request) if limit is None else read_body(request, limit))
    receipt = await run_write(request, submit, store, caller.team_id, body, idempotency_key,
                              phase)
    return JSONResponse(receipt_json(receipt), status_code=receipt.http_status)


@router.get("/api/v1/submissions", responses={401: {"model": Rejected},
                                               403: {"model": Rejected}},
            summary="The team's own submissions, newest first, each with its jobs' states, "
                    "queue positions and estimated starts (a team's token; ?phase=P: that "
                    "phase's only)")
def list_submissions(caller: CallerDep, store: StoreDep,
                     phase: str | None = None) -> JSONResponse:
    if caller.team_id is None:
        raise SubmissionRejected(403, "an organizer's token has no submissions of its own; "
                                      "list a team's with its token, or read the board")
    carry_if_due(store)
    listing = own_submissions(store, caller.team_id, phase)  # an unknown phase: 404 here
    name = None if phase is None else store.require_competition().phase(phase).name
    return JSONResponse(own_json(listing, team_queue(store, caller.team_id, name)))


#: The largest body of a mark: a fact sheet (its description and link) and room for JSON.
MARK_BODY_BYTES = 16 * 1024

_FACT_SHEET_BODY: dict[str, Any] = {"requestBody": {"required": False, "content": {
    "application/json": {"schema": {
        "type": "object", "additionalProperties": False,
        "properties": {"fact_sheet": {
            "type": "object", "additionalProperties": False,
            "required": ["description", "code_url", "commit"],
            "properties": {"description": {"type": "string", "maxLength": MAX_DESCRIPTION},
                           "code_url": {"type": "string", "format": "uri",
                                        "maxLength": MAX_URL},
                           "commit": {"type": "string", "pattern": "^[0-9a-fA-F]{7,40}$"}}}}}}}}}


@router.put("/api/v1/submissions/{submission_id}/final", responses=REFUSALS,
            openapi_extra=_FACT_SHEET_BODY,
            summary="Mark one of the team's submissions as a final selection, with its fact "
                    "sheet where the phase takes one (a team's token)")
async def put_final(submission_id: SubmissionId, request: Request, caller: CallerDep,
                    store: StoreDep) -> JSONResponse:
    return await _mark(request, caller, store, submission_id, True)


@router.delete("/api/v1/submissions/{submission_id}/final", responses=REFUSALS,
               summary="Unmark a final selection of the team (a team's token)")
async def delete_final(submission_id: SubmissionId, request: Request, caller: CallerDep,
                       store: StoreDep) -> JSONResponse:
    return await _mark(request, caller, store, submission_id, False)


async def _mark(request: Request, caller: Caller, store: Database, submission_id: int,
                final: bool) -> JSONResponse:
    if caller.team_id is None:
        raise SubmissionRejected(403, "an organizer's token marks no final selections; use "
                                      "the team's token")
    # the fact sheet is checked whole before anything is written: a bad one changes nothing
    sheet = _fact_sheet(await read_body(request, MARK_BODY_BYTES))
    mark = await run_write(request, mark_final, store, caller.team_id, submission_id, final,
                           sheet)
    return JSONResponse(final_json(mark))


def _fact_sheet(body: bytes) -> FactSheet | None:
    """The fact sheet of a mark's body (``{"fact_sheet": {...}}``; an empty body: none)."""
    if not body.strip():
        return None
    data = strict_json(body, MARK_BODY_BYTES)
    if not isinstance(data, dict) or set(data) - {"fact_sheet"}:
        raise SubmissionRejected(422, 'the body of a mark is {"fact_sheet": {"description": '
                                      '..., "code_url": ..., "commit": ...}} or empty')
    value = data.get("fact_sheet")
    return None if value is None else read_fact_sheet(value)


@router.get("/api/v1/submissions/{submission_id}", response_model=SubmissionView,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="One submission: the team's own, or any with an organizer's token")
def get_submission(submission_id: SubmissionId, caller: CallerDep,
                   store: StoreDep) -> JSONResponse:
    view = submission_view(store, submission_id, caller)
    if view is None:  # another team's and a missing one look the same
        raise SubmissionRejected(404, f"no submission {submission_id} of your team")
    return JSONResponse(submission_json(view))


@router.get("/api/v1/submissions/{submission_id}/payload",
            responses={200: {"content": {"application/json": {}},
                             "description": "the stored body (canonical JSON)"},
                       401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The body of a submission as stored (organizers)")
def get_payload(submission_id: SubmissionId, caller: CallerDep, store: StoreDep) -> Response:
    body = payload(store, submission_id, caller)
    if body is None:  # a team's token and a missing submission look the same
        raise SubmissionRejected(404, f"no submission {submission_id} whose body you may "
                                      f"read (organizers only)")
    return Response(body, media_type="application/json")


@router.get("/api/v1/submissions/{submission_id}/predictions",
            responses={200: {"content": {PREDICTIONS_MEDIA_TYPE: {}},
                             "description": "the uploaded predictions stream"},
                       401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The predictions a submission uploaded (organizers: a scoring job)")
def get_predictions(submission_id: SubmissionId, caller: CallerDep, store: StoreDep
                    ) -> Response:
    body = predictions(store, submission_id, caller)
    if body is None:  # a team's token, a missing submission and a claim look the same
        raise SubmissionRejected(404, f"no submission {submission_id} with predictions you "
                                      f"may read (organizers only)")
    return Response(body, media_type=PREDICTIONS_MEDIA_TYPE)
