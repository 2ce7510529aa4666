"""A scoring job's numbers, stored: they become the submission's row and its trusted values.

A worker scores a predictions upload with the organizers' data (see
``evaluation.reproduce``) and finishes its job with the numbers (``scored``). They replace
the claim's on the submission's row (scores, tests, the runner's interval), which becomes
``computed``: ranked and compared from then on; ``flagged`` says whether the claim differed.
The per-user values are stored as the submission's trusted ``user_values`` row (source
``SCORED``), the only kind besides a reproduction's and a baseline's that the board's
statistics read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from evaluation.contract import RESULTS_KEY, RUN_HASH_KEY
from evaluation.errors import SubmissionRejected
from evaluation.server.core import Scored, claimed_differs, parse_submission, read_scored
from evaluation.server.db import SubmissionRow, UserValuesRow
from evaluation.server.store._user_values import SCORED, blob_sha256, check_same_users

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


@dataclass(frozen=True)
class CheckedScoring:
    """A scoring job's numbers checked against the submission's phase, ready to store."""

    scored: Scored
    phase: str
    run_hash: str
    flagged: bool


def read_scoring(db: Database, submission_id: int, report: Any) -> CheckedScoring:
    """A scoring job's ``report`` (``FinishRequest.scored``) checked against its submission.

    Raises
    ------
    SubmissionRejected
        404 when there is no such submission; 422 for an invalid report, or a phase that is
        no longer in the competition file (no references to score with).
    """
    with db.reading() as session:
        found = session.execute(select(SubmissionRow.phase, SubmissionRow.payload).where(
            SubmissionRow.id == submission_id)).one_or_none()
    if found is None:
        raise SubmissionRejected(404, f"no submission {submission_id}")
    phase_name, payload = found
    phases = {p.name: p for p in db.require_competition().phases}
    if phase_name not in phases:
        raise SubmissionRejected(422, f"submission {submission_id} belongs to phase "
                                      f"{phase_name!r}, which the competition file no longer "
                                      f"has: it cannot be scored")
    scored = read_scored(report, phases[phase_name].references)
    claim = parse_submission(payload.encode("utf-8"))
    results = json.loads(payload)[RESULTS_KEY]
    return CheckedScoring(scored=scored, phase=phase_name, run_hash=results[RUN_HASH_KEY],
                          flagged=bool(claimed_differs(claim, scored.scores)))


def write_scoring(session: Session, submission_id: int, checked: CheckedScoring,
                  now: datetime, harness_version: str | None = None) -> None:
    """Store checked numbers in ``session``'s transaction: the row's scores, ``computed``,
    the ``harness_version`` that computed them, and the trusted values row; 404 when the
    submission is gone, 422 when its test users are not those of the phase's other trusted
    values of its run hash."""
    row = session.get(SubmissionRow, submission_id)
    if row is None:
        raise SubmissionRejected(404, f"no submission {submission_id}")
    scores, values = checked.scored.scores, checked.scored.values
    row.phase1_score, row.leaderboard_score = scores.phase1_score, scores.leaderboard_score
    row.interval_low, row.interval_high = scores.interval
    row.tests, row.num_folds = dict(scores.tests), scores.num_folds
    row.flagged, row.computed = checked.flagged, True
    row.harness_version = harness_version
    check_same_users(session.connection(), checked.phase, checked.run_hash,
                     values.users_sha256, what="the scoring job")
    session.add(UserValuesRow(
        submission_id=submission_id, source=SCORED, private=False, trusted=True,
        phase=checked.phase, run_hash=checked.run_hash, k=values.k, n_users=values.n_users,
        users_sha256=values.users_sha256, blob=values.blob,
        blob_sha256=blob_sha256(values.blob), costs=None, recorded_at=now))
