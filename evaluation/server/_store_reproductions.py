"""The organizers' reproductions: a verdict per report, and the private scores it brings.

The latest verdict is the submission's (the board's badge); every report is kept in
``reproductions``. A report with ``private`` sets the submission's private scores, recomputed
from its private folds with the references of the submission's phase; they stay hidden until
the phase is revealed.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from evaluation.errors import SubmissionRejected
from evaluation.server._reproduction import ReproductionReport, check_reproduction
from evaluation.server._schema import _strict_json
from evaluation.server._scoring import Scores, recompute
from evaluation.server._store_session import Database
from evaluation.server._tables import ReproductionRow, SubmissionRow


def record_reproduction(db: Database, submission_id: int, body: bytes) -> dict:
    """Store the verdict of the organizers' reproduction of a submission.

    Parameters
    ----------
    db : Database
    submission_id : int
    body : bytes
        The report (see ``ReproductionReport``).

    Returns
    -------
    dict
        ``{"status": "recorded", "submission_id", "verdict"}`` (no score: the answer must not
        tell a private score before the reveal).

    Raises
    ------
    SubmissionRejected
        404 when there is no such submission; 413/422 for an invalid report; 422 when the
        submission's phase is no longer in the competition file (no references to score the
        private folds with).
    """
    report, scores = check_report(db, submission_id, body)
    with db.writing() as session:
        write_report(db, session, submission_id, report, scores)
    return {"status": "recorded", "submission_id": submission_id, "verdict": report.verdict}


def check_report(db: Database, submission_id: int, data: bytes | object
                 ) -> tuple[ReproductionReport, Scores | None]:
    """A report (a body, or one read from JSON already) checked against its submission, and
    the private scores it brings (None without private folds).

    Raises
    ------
    SubmissionRejected
        404 when there is no such submission; 422 for an invalid report or a phase that is
        no longer in the competition file (no references to score the private folds with).
    """
    with db.reading() as session:
        found = session.execute(select(SubmissionRow.num_folds, SubmissionRow.phase).where(
            SubmissionRow.id == submission_id)).one_or_none()
    if found is None:
        raise SubmissionRejected(404, f"no submission {submission_id}")
    num_folds, phase_name = found
    if isinstance(data, bytes):
        data = _strict_json(data)
    report = check_reproduction(data, num_folds)
    return report, _private_scores(db, submission_id, phase_name, report.private_tests())


def write_report(db: Database, session: Session, submission_id: int,
                 report: ReproductionReport, scores: Scores | None) -> None:
    """Store a checked report in ``session``'s transaction: its row, the submission's verdict
    and, with private folds, its private scores; 404 when the submission is gone."""
    row = session.get(SubmissionRow, submission_id)
    if row is None:  # deleted meanwhile (a baseline whose file changed)
        raise SubmissionRejected(404, f"no submission {submission_id}")
    session.add(ReproductionRow(
        submission_id=submission_id, verdict=report.verdict, private=report.private,
        fingerprint_matches=report.fingerprint_matches,
        harness_version=report.harness_version,
        table=[r.model_dump() for r in report.table], log_tail=report.log_tail,
        private_fold_tests=report.private_tests(), recorded_at=db.now()))
    row.reproduction = report.verdict
    if scores is not None:
        _set_private_scores(row, scores)


def _private_scores(db: Database, submission_id: int, phase_name: str,
                    private_tests: list[dict[str, float]] | None) -> Scores | None:
    """The scores of a report's private folds with the phase's references (None without
    private folds); 422 when the phase is no longer in the competition file."""
    if private_tests is None:
        return None
    phases = {p.name: p for p in db.require_competition().phases}
    if phase_name not in phases:
        raise SubmissionRejected(422, f"submission {submission_id} belongs to phase "
                                      f"{phase_name!r}, which the competition file no longer "
                                      f"has: its private folds cannot be scored")
    return recompute(private_tests, phases[phase_name].references)


def _set_private_scores(row: SubmissionRow, scores: Scores) -> None:
    row.private_phase1_score = scores.phase1_score
    row.private_leaderboard_score = scores.leaderboard_score
    row.private_interval_low, row.private_interval_high = scores.interval
    row.private_tests = dict(scores.tests)
