"""Whether the service can answer (``GET /healthz``: the database answers a trivial query) and
whether it can take uploads (``GET /readyz``: the database can be written to)."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from evaluation.server.api._answers import BUSY_RETRY_AFTER, Health
from evaluation.server.api._deps import StoreDep
from evaluation.server.db import readiness

router = APIRouter()


@router.get("/healthz", response_model=Health, summary="Whether the database answers")
def healthz(store: StoreDep) -> dict:
    store.ping()
    return {"status": "ok"}


@router.get("/readyz", summary="Whether the database can take uploads",
            responses={503: {"description": "not ready: `problems` says why"}})
async def readyz(store: StoreDep) -> JSONResponse:
    problems = await run_in_threadpool(readiness, store)
    if problems:
        return JSONResponse({"status": "not ready", "problems": problems}, status_code=503,
                            headers={"Retry-After": str(BUSY_RETRY_AFTER)})
    return JSONResponse({"status": "ready", "problems": []})
