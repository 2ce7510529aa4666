"""The organizers' record of a reproduction's verdict (a team's token gets 404)."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from evaluation.errors import SubmissionRejected
from evaluation.server._answers import REFUSALS, Recorded
from evaluation.server._deps import (
    CallerDep,
    StoreDep,
    SubmissionId,
    read_body,
    run_write,
)
from evaluation.server._reproduction import ReproductionReport
from evaluation.server._schema import MAX_REPORT_BYTES

router = APIRouter()

try:
    _REPORT_SCHEMA = ReproductionReport.model_json_schema()
except Exception:  # the docs only; never stops the server
    _REPORT_SCHEMA = {"type": "object"}


@router.post(
    "/api/v1/submissions/{submission_id}/reproduction", response_model=Recorded,
    responses={**REFUSALS},
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": _REPORT_SCHEMA}}}},
    summary="Record the verdict of a reproduction (organizers)",
)
async def post_reproduction(request: Request, submission_id: SubmissionId,
                            caller: CallerDep,
                            store: StoreDep) -> JSONResponse:
    if not caller.admin:
        raise SubmissionRejected(404, f"no submission {submission_id} whose reproduction "
                                      f"you may record (organizers only)")
    body = await read_body(request, MAX_REPORT_BYTES)
    answer = await run_write(request, store.record_reproduction, submission_id, body)
    return JSONResponse(Recorded(**answer).model_dump(mode="json"))
