"""Re-scoring a phase after a harness fix (an organizer's token; a team's token gets 404, as for
a route it may not know).

``POST /api/v1/phases/{phase}/rescore`` queues a rescore (409 while one of the phase is open);
``GET`` shows the latest one and what it changes (old and new scores, ranks and tiers, nothing
on the board changed yet); ``.../rescore/apply`` switches the board to its numbers once every job
ended; ``.../rescore/cancel`` gives it up; ``.../rescore/drop-old`` drops the replaced numbers
from the board's CSV. Every write goes through ``run_write``.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import REFUSALS, rescore_json
from evaluation.server.api._deps import CallerDep, StoreDep, run_write
from evaluation.server.db import Caller
from evaluation.server.standings import with_tiers
from evaluation.server.store import (
    apply_rescore,
    cancel_rescore,
    drop_old,
    rescore_table,
    start_rescore,
)

router = APIRouter()

#: A phase's name in a path.
PhaseName = Annotated[str, Path(min_length=1, max_length=80, description="a phase's name")]


def _organizer(caller: Caller) -> None:
    """Nothing for an organizer; the 404 of an unknown route for a team."""
    if not caller.admin:
        raise SubmissionRejected(404, "no such resource for your token (rescores are the "
                                      "organizers')")


@router.post("/api/v1/phases/{phase}/rescore", responses=REFUSALS, status_code=201,
             summary="Score every scored submission of a phase again under this harness "
                     "version; the numbers wait until applied (organizers)")
async def post_rescore(request: Request, phase: PhaseName, caller: CallerDep,
                       store: StoreDep) -> JSONResponse:
    _organizer(caller)
    table = await run_write(request, start_rescore, store, phase)
    return JSONResponse(rescore_json(table), status_code=201)


@router.get("/api/v1/phases/{phase}/rescore", responses=REFUSALS,
            summary="The latest rescore of a phase and what it changes (organizers)")
def get_rescore(phase: PhaseName, caller: CallerDep, store: StoreDep) -> JSONResponse:
    _organizer(caller)
    return JSONResponse(rescore_json(with_tiers(store, rescore_table(store, phase))))


@router.post("/api/v1/phases/{phase}/rescore/apply", responses=REFUSALS,
             summary="Switch a phase's board to its rescore's numbers (organizers)")
async def post_apply(request: Request, phase: PhaseName, caller: CallerDep,
                     store: StoreDep) -> JSONResponse:
    _organizer(caller)
    return JSONResponse(rescore_json(await run_write(request, apply_rescore, store, phase)))


@router.post("/api/v1/phases/{phase}/rescore/cancel", responses=REFUSALS,
             summary="Give up a phase's open rescore (organizers)")
async def post_cancel(request: Request, phase: PhaseName, caller: CallerDep,
                      store: StoreDep) -> JSONResponse:
    _organizer(caller)
    return JSONResponse(rescore_json(await run_write(request, cancel_rescore, store, phase)))


@router.post("/api/v1/phases/{phase}/rescore/drop-old", responses=REFUSALS,
             summary="Drop the numbers a phase's applied rescores replaced (organizers)")
async def post_drop_old(request: Request, phase: PhaseName, caller: CallerDep,
                        store: StoreDep) -> JSONResponse:
    _organizer(caller)
    dropped = await run_write(request, drop_old, store, phase)
    return JSONResponse({"status": "dropped", "phase": phase, "submissions": dropped})
