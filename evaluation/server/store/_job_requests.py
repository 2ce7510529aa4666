"""The bodies the reproduction workers send: a claim, a heartbeat, a finish (strict JSON).

Each is read with the upload's strict JSON reader and checked here; an invalid one is refused
with 422 naming the field and the rule.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from evaluation.errors import SubmissionRejected
from evaluation.server.core import (
    MAX_BODY_BYTES,
    MAX_REPORT_BYTES,
    describe_invalid,
    strict_json,
)
from evaluation.server.db import MAX_REASON, MAX_WORKER_NAME

#: A lease's length when the claim does not ask for one, and its bounds (seconds).
DEFAULT_LEASE_S = 120.0
MIN_LEASE_S, MAX_LEASE_S = 1.0, 3600.0
#: The largest finish: a reproduction report and room for the lease and a note.
MAX_FINISH_BYTES = MAX_REPORT_BYTES + 64 * 1024

#: Whose reason made a job fail: the platform's (infrastructure, a lost lease, an
#: organizer-side timeout) or the team's (its upload).
PLATFORM, TEAM = "platform", "team"
FAILURE_CAUSES = (PLATFORM, TEAM)

_Model = TypeVar("_Model", bound=BaseModel)

Seconds = Annotated[float, Field(ge=MIN_LEASE_S, le=MAX_LEASE_S, allow_inf_nan=False)]
LeaseId = Annotated[str, Field(min_length=1, max_length=64)]


class ClaimRequest(BaseModel):
    """The body of a claim: who claims, for how long, and whether it can run the private
    folds (a worker without the private seed takes only the other jobs)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # printable ASCII: the name is shown in ``admin jobs`` and in refusals
    worker: Annotated[str, Field(min_length=1, max_length=MAX_WORKER_NAME,
                                 pattern=r"^[ -~]+$")] = "worker"
    lease_s: Seconds = DEFAULT_LEASE_S
    private: StrictBool = True
    # the kinds of job the worker runs: a worker of an older harness knows reproductions only
    # ("rescore": a scoring job of an organizers' rescore, which only a worker of this
    # harness runs)
    kinds: Annotated[list[Literal["reproduce", "score", "rescore"]],
                     Field(min_length=1, max_length=3)] = ["reproduce"]


class HeartbeatRequest(BaseModel):
    """The body of a heartbeat: the lease, and how long from now it should last."""

    model_config = ConfigDict(extra="forbid", strict=True)

    lease: LeaseId
    lease_s: Seconds = DEFAULT_LEASE_S


class FinishRequest(BaseModel):
    """The body of a finish: the lease, and one of a verdict's ``report`` (with an optional
    ``note`` for the team, e.g. why the private folds were not evaluated), a scoring job's
    ``scored`` numbers, a ``failure`` (``retry``: an infrastructure failure, tried again while
    attempts are left), or a ``release`` (the worker stopped: the job is queued again and the
    run not counted)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    lease: LeaseId
    report: dict | None = None
    scored: dict | None = None
    note: Annotated[str, Field(max_length=MAX_REASON)] | None = None
    failure: Annotated[str, Field(min_length=1, max_length=MAX_REASON)] | None = None
    retry: StrictBool = True
    release: Annotated[str, Field(min_length=1, max_length=MAX_REASON)] | None = None
    # whose reason a failure is: "platform" (infrastructure: the submission does not count
    # against its team's daily limit) or "team" (the upload itself); without it, a failure
    # that may be retried is the platform's and one that may not the team's
    cause: Literal["platform", "team"] | None = None
    # the harness version that computed ``scored`` (a worker older than it sends none)
    harness_version: Annotated[str, Field(min_length=1, max_length=64,
                                          pattern=r"^[ -~]+$")] | None = None

    def failure_cause(self) -> str:
        """Whose reason the ``failure`` is: ``cause``, else by ``retry``."""
        if self.cause is not None:
            return self.cause
        return PLATFORM if self.retry else TEAM

    def kind(self) -> Literal["report", "scored", "failure", "release"]:
        given = [k for k in ("report", "scored", "failure", "release")
                 if getattr(self, k) is not None]
        if len(given) != 1:
            raise SubmissionRejected(422, "invalid finish: give exactly one of report (the "
                                          "verdict), scored (a scoring job's numbers), failure "
                                          "(a reason) and release (a reason)"
                                          f"; got {', '.join(given) or 'none'}")
        return given[0]  # type: ignore[return-value]  # one of the three names above



def read_request(model: type[_Model], body: bytes, what: str,
                 limit: int = MAX_BODY_BYTES) -> _Model:
    """``body`` (at most ``limit`` bytes) read as ``model`` (an empty body: its defaults); 422
    naming the field and the rule."""
    data = strict_json(body, limit) if body.strip() else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SubmissionRejected(422, f"invalid {what}: {describe_invalid(exc)}") from None
