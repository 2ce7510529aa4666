"""The phases, for the organizers: carry an earlier phase's submissions into a phase (an
organizer's token; a team's token gets 404, as for a route it may not know).

The server carries into a phase by itself once it has opened (at its start, and before it
answers about a phase: ``carry_when_due``); ``POST /api/v1/phases/{phase}/carry`` does it at
once (e.g. after the earlier phase closed, before the new one opens, so that the carried
submissions' scoring jobs are done when it opens) and answers what was carried, or when it
was before (nothing is carried twice).
"""

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import REFUSALS, carry_json
from evaluation.server.api._deps import CallerDep, StoreDep, run_write
from evaluation.server.store import carry_phase

router = APIRouter()

#: A phase's name in a path (the competition file's names are 1 to 64 characters).
PhaseName = Annotated[str, Path(min_length=1, max_length=80, description="a phase's name")]


@router.post("/api/v1/phases/{phase}/carry", responses=REFUSALS,
             summary="Carry the submissions of the phase this one carries from into it, once "
                     "(organizers)")
async def post_carry(phase: PhaseName, request: Request, caller: CallerDep,
                     store: StoreDep) -> JSONResponse:
    if not caller.admin:
        raise SubmissionRejected(404, "no such resource for your token (carrying a phase's "
                                      "submissions is the organizers')")
    carry = await run_write(request, carry_phase, store, phase)
    return JSONResponse(carry_json(carry), status_code=201 if carry.new else 200)
