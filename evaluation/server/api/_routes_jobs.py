"""The reproduction queue, for the organizers' workers and the organizers (an organizer's
token; a team's token gets 404, as for a route it may not know).

A worker claims a job (``POST /api/v1/jobs/claim``), extends its lease while it runs
(``.../heartbeat``) and finishes it with the verdict's report or a failure (``.../finish``);
the organizers list the queue (``GET /api/v1/jobs``) and queue a failed job again
(``.../retry``). Every write goes through ``run_write``: its waits are bounded, and a busy
database answers 503 with ``Retry-After``.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import REFUSALS, job_json, jobs_json, lease_json
from evaluation.server.api._deps import MAX_ROW_ID, CallerDep, StoreDep, read_body, run_write
from evaluation.server.db import Caller
from evaluation.server.store import (
    MAX_FINISH_BYTES,
    claim_job,
    finish_job,
    heartbeat_job,
    job_counts,
    list_jobs,
    retry_job,
)

router = APIRouter()

#: A job's id in a path: 1 to ``MAX_ROW_ID``.
JobId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="a reproduction job's id")]
#: The largest body of a claim or a heartbeat (a finish carries a report: the upload's limit).
SMALL_BODY_BYTES = 4096


def _organizer(caller: Caller) -> None:
    """Nothing for an organizer; the 404 of an unknown route for a team."""
    if not caller.admin:
        raise SubmissionRejected(404, "no such resource for your token (the reproduction "
                                      "queue is the organizers')")


@router.post("/api/v1/jobs/claim", responses=REFUSALS,
             summary="Claim the next reproduction job with a lease (organizers' workers)")
async def post_claim(request: Request, caller: CallerDep, store: StoreDep) -> JSONResponse:
    _organizer(caller)
    body = await read_body(request, SMALL_BODY_BYTES)
    lease = await run_write(request, claim_job, store, body)
    competition = store.competition
    return JSONResponse(lease_json(lease, None if competition is None
                                   else competition.repeated_items))


@router.post("/api/v1/jobs/{job_id}/heartbeat", responses=REFUSALS,
             summary="Extend the lease of a claimed job (organizers' workers)")
async def post_heartbeat(request: Request, job_id: JobId, caller: CallerDep,
                         store: StoreDep) -> JSONResponse:
    _organizer(caller)
    body = await read_body(request, SMALL_BODY_BYTES)
    return JSONResponse(lease_json(await run_write(request, heartbeat_job, store, job_id, body)))


@router.post("/api/v1/jobs/{job_id}/finish", responses=REFUSALS,
             summary="Finish a claimed job: the verdict's report, or a failure (organizers' "
                     "workers)")
async def post_finish(request: Request, job_id: JobId, caller: CallerDep,
                      store: StoreDep) -> JSONResponse:
    _organizer(caller)
    body = await read_body(request, MAX_FINISH_BYTES)
    return JSONResponse(job_json(await run_write(request, finish_job, store, job_id, body)))


@router.post("/api/v1/jobs/{job_id}/retry", responses=REFUSALS,
             summary="Queue a failed job again (organizers)")
async def post_retry(request: Request, job_id: JobId, caller: CallerDep,
                     store: StoreDep) -> JSONResponse:
    _organizer(caller)
    return JSONResponse(job_json(await run_write(request, retry_job, store, job_id)))


@router.get("/api/v1/jobs", responses=REFUSALS,
            summary="The reproduction queue: counts per phase and state, and the jobs "
                    "(organizers)")
def get_jobs(caller: CallerDep, store: StoreDep,
             phase: Annotated[str | None, Query(max_length=80)] = None,
             state: Annotated[str | None, Query(max_length=20)] = None) -> JSONResponse:
    _organizer(caller)
    return JSONResponse(jobs_json(job_counts(store), list_jobs(store, phase, state)))
