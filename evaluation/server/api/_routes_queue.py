"""The workers' queue as people see it: ``GET /api/v1/queue`` and the organizers' page
``GET /queue``.

An organizer's token gets the overview (counts per phase and state, the oldest waiting job,
the workers with their last heartbeat and current jobs, the failed jobs and why, the stuck
ones); a team's token gets its own jobs with their places and estimated starts, and the
queue's length per kind, never another team's jobs. The page is the organizers' (a team's
token gets 404, as for the jobs' routes).
"""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from evaluation.errors import SubmissionRejected
from evaluation.server.api._answers import REFUSALS, Rejected, queue_json, team_queue_json
from evaluation.server.api._deps import CallerDep, StoreDep
from evaluation.server.page import render_queue
from evaluation.server.store import queue_overview, team_queue

router = APIRouter()


@router.get("/api/v1/queue", responses=REFUSALS,
            summary="The workers' queue: the organizers' overview, or a team's own jobs with "
                    "their positions and estimated starts")
def get_queue(caller: CallerDep, store: StoreDep) -> JSONResponse:
    if caller.admin:
        return JSONResponse(queue_json(queue_overview(store)))
    return JSONResponse(team_queue_json(team_queue(store, caller.team_id)))


@router.get("/queue", response_class=HTMLResponse,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The workers' queue as a page (organizers)")
def queue_page(caller: CallerDep, store: StoreDep) -> Response:
    if not caller.admin:
        raise SubmissionRejected(404, "no such page for your token (the queue's page is the "
                                      "organizers'; `submissions` shows your own jobs)")
    return HTMLResponse(render_queue(queue_overview(store)))
