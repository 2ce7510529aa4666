"""Whether the service can answer: ``GET /healthz`` runs a trivial query."""

from fastapi import APIRouter

from evaluation.server._answers import Health
from evaluation.server._deps import StoreDep

router = APIRouter()


@router.get("/healthz", response_model=Health, summary="Whether the database answers")
def healthz(store: StoreDep) -> dict:
    store.ping()
    return {"status": "ok"}
