"""The organizers' record of a reproduction's verdict (a team's token gets 404)."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import REFUSALS, Recorded
from evaluation.server.api._deps import CallerDep, StoreDep, SubmissionId, read_body, run_write
from evaluation.server.core import MAX_REPORT_BYTES, ReproductionReport
from evaluation.server.store import record_reproduction

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
    answer = await run_write(request, record_reproduction, store, submission_id, body)
    return JSONResponse(Recorded(**answer).model_dump(mode="json"))
