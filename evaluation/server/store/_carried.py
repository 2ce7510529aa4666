"""The link of a carried submission to the upload it came from, whose predictions it scores.

A submission carried into a phase when it opened (see ``_carry``) names the submission it
was carried from; that one may itself have been carried, through as many phases as carry. Its
scoring job scores the predictions of the upload at the start of that chain: nothing is
uploaded (or stored) again.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from evaluation.server.db import SubmissionRow

#: The most links followed from a carried submission to the upload whose predictions it
#: scores (one per phase it was carried through).
MAX_CARRY_CHAIN = 64


def predictions_owner(session: Session, submission_id: int) -> int:
    """The submission whose uploaded predictions ``submission_id`` scores: itself, or for a
    carried one the upload it was carried from (through every phase it was carried)."""
    at = submission_id
    for _ in range(MAX_CARRY_CHAIN):
        origin = session.scalar(select(SubmissionRow.carried_from).where(SubmissionRow.id == at))
        if origin is None:
            return at
        at = origin
    return at
