"""What the HTTP API answers: the JSON models of its answers and of a refusal.

A refusal is ``{"status": "rejected", "reason": "..."}`` (with ``detail`` when FastAPI itself
refused the request's parameters). The board and a submission are answered as their
dataclasses, converted by pydantic.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, TypeAdapter

from evaluation.server.core import Board, BoardRobustness, FactSheet, TeamStanding, guarantee
from evaluation.server.store import (
    Carry,
    FinalMark,
    JobView,
    Lease,
    OwnSubmission,
    QueueOverview,
    Receipt,
    RescoreTable,
    SubmissionView,
    TeamQueue,
)

#: Seconds a client is asked to wait when the database is busy or unavailable.
BUSY_RETRY_AFTER = 2


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


#: The refusals a write may get, as the OpenAPI ``responses`` of its route.
REFUSALS: dict[int | str, dict] = {code: {"model": Rejected}
                                   for code in (401, 403, 404, 409, 413, 422, 429)}

_BOARD = TypeAdapter(Board)
_TEAM = TypeAdapter(TeamStanding)
_ROBUSTNESS = TypeAdapter(BoardRobustness)
_SUBMISSION = TypeAdapter(SubmissionView)
_OWN = TypeAdapter(list[OwnSubmission])
_JOB = TypeAdapter(JobView)
_JOBS = TypeAdapter(list[JobView])
_OVERVIEW = TypeAdapter(QueueOverview)
_TEAM_QUEUE = TypeAdapter(TeamQueue)
_FACT_SHEET = TypeAdapter(FactSheet | None)
_RESCORE = TypeAdapter(RescoreTable)


def board_json(board: Board) -> dict:
    """``board`` as the JSON the API answers, with ``guarantee``: which rows the board's
    guarantee covers (each row's ``computed``)."""
    return {**_BOARD.dump_python(board, mode="json"), "guarantee": guarantee(board)}


def team_json(standing: TeamStanding) -> dict:
    """A team's standing as the JSON the API answers."""
    return _TEAM.dump_python(standing, mode="json")


def robustness_json(view: BoardRobustness) -> dict:
    """A board's robustness certificate as the JSON the API answers."""
    return _ROBUSTNESS.dump_python(view, mode="json")


def receipt_json(receipt: Receipt) -> dict:
    """``receipt`` as the JSON the API answers (``ReceiptModel``)."""
    return ReceiptModel(**{k: getattr(receipt, k) for k in ReceiptModel.model_fields}) \
        .model_dump(mode="json")


def submission_json(view: SubmissionView) -> dict:
    """``view`` as the JSON the API answers."""
    return _SUBMISSION.dump_python(view, mode="json")


def final_json(mark: FinalMark) -> dict:
    """The answer to a mark or an unmark of a final selection."""
    return {"status": "final" if mark.final else "not final", "changed": mark.changed,
            "submission_id": mark.submission_id, "phase": mark.phase,
            "selections": list(mark.selections), "allowed": mark.allowed,
            "fact_sheet": _FACT_SHEET.dump_python(mark.fact_sheet, mode="json"),
            "message": mark.message}


def own_json(listing: list[OwnSubmission], queue: TeamQueue | None = None) -> dict:
    """A team's submissions as the JSON the API answers: ``{"submissions": [...]}``; with
    ``queue``, each submission's ``queue`` (its jobs: state, position, estimated start) and
    the queue's length per kind (``queue_length``)."""
    items = _OWN.dump_python(listing, mode="json")
    if queue is None:
        return {"submissions": items}
    places = team_queue_json(queue)
    for item in items:
        item["queue"] = [p for p in places["jobs"]
                         if p["submission_id"] == item["submission_id"]]
    return {"submissions": items, "queue_length": places["queue_length"],
            "estimates": places["estimates"]}


def team_queue_json(queue: TeamQueue) -> dict:
    """A team's places in the queue: ``{"jobs", "queue_length", "estimates"}``."""
    data = _TEAM_QUEUE.dump_python(queue, mode="json")
    return {"jobs": data["places"], "queue_length": data["queued"],
            "estimates": data["estimates"]}


def queue_json(overview: QueueOverview) -> dict:
    """The organizers' view of the queue as the JSON the API answers."""
    return _OVERVIEW.dump_python(overview, mode="json")


def carry_json(carry: Carry) -> dict:
    """The answer to a carry: ``"carried"`` (now) or ``"carried before"`` (nothing done),
    the phases, the rule, when, the new submissions and those not carried, with why."""
    return {"status": "carried" if carry.new else "carried before", "phase": carry.phase,
            "source": carry.source, "rule": carry.rule,
            "carried_at": carry.carried_at.isoformat().replace("+00:00", "Z"),
            "carried": carry.carried, "submission_ids": list(carry.submission_ids),
            "skipped": [{"submission_id": sid, "reason": why} for sid, why in carry.skipped],
            "message": carry.message}


def lease_json(lease: Lease | None, repeated_items: str | None = None) -> dict:
    """The answer to a claim or a heartbeat: ``{"status": "claimed", "job", "lease",
    "lease_expires_at"}`` and, when given, the competition's ``repeated_items`` rule (a
    scoring job scores by it, not by the rule its stored run names), or
    ``{"status": "empty"}`` when no job is claimable."""
    if lease is None:
        return {"status": "empty"}
    answer = {"status": "claimed", "job": _JOB.dump_python(lease.job, mode="json"),
              "lease": lease.lease,
              "lease_expires_at": lease.expires_at.isoformat().replace("+00:00", "Z")}
    if lease.protocols:  # a reproduction's alternatives, which the worker runs too
        answer["robustness"] = list(lease.protocols)
    if repeated_items is not None:
        answer["repeated_items"] = repeated_items
    return answer


def job_json(job: JobView) -> dict:
    """One job as the JSON the API answers."""
    return {"status": job.state, "job": _JOB.dump_python(job, mode="json")}


def jobs_json(counts: dict[str, dict[str, int]], jobs: list[JobView]) -> dict:
    """The queue: ``{"counts": {phase: {state: n}}, "jobs": [...]}``."""
    return {"counts": counts, "jobs": _JOBS.dump_python(jobs, mode="json")}


def rescore_json(table: RescoreTable) -> dict:
    """A rescore and what it changes, as the JSON the API answers (``changed``: the ids of
    the submissions whose score or rank changes)."""
    return {**_RESCORE.dump_python(table, mode="json"),
            "changed": [line.submission_id for line in table.changed]}


def rejected(status: int, reason: str, headers: dict | None = None,
             detail: list | None = None) -> JSONResponse:
    """A refusal as a JSON response: ``{"status": "rejected", "reason": ...}``."""
    body: dict = {"status": "rejected", "reason": reason}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)
