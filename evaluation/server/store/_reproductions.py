"""The organizers' reproductions: a verdict per report, and the private scores it brings.

The latest verdict is the submission's (the board's badge); every report is kept in
``reproductions``. A report with ``private`` sets the submission's private scores, recomputed
from its private folds with the references of the submission's phase; they stay hidden until
the phase is revealed.

The per-user values a report sends (computed by the organizers from the model's predictions)
are checked like an upload's: read against the submission's folds (its ``n_users`` and
``k``), adding up to the report's reproduced fold values (the private ones to its private
fold tests), with the test users of the upload and of the phase's other submissions of the
same run hash. They are stored as trusted rows of ``user_values``, with the costs measured in
the sandbox; the board reads them in place of the upload's, which stay for the record.

A report's results under the competition's declared alternative protocols (each protocol it
names must be declared) are stored in ``robustness_results``: a scored one's per-user values
read against the folds its blob declares (within the blob format's bounds and each test's
range; a sampled-negative protocol's, one metric per user, against the submission's own folds),
a failed one with its reason, each with its cost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from evaluation.contract import RESULTS_KEY, RUN_HASH_KEY
from evaluation.errors import SubmissionRejected
from evaluation.server.core import (
    MAX_REPORT_BYTES,
    AlternativeReport,
    CheckedValues,
    ReproductionReport,
    Scores,
    check_agreement,
    check_reproduction,
    read_blob,
    read_metric_blob,
    recompute,
    strict_json,
)
from evaluation.server.db import (
    ReproductionRow,
    RobustnessResultRow,
    SubmissionRow,
    UserValuesRow,
)
from evaluation.server.store._user_values import REPRODUCTION, UPLOAD, blob_sha256, check_same_users

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


@dataclass(frozen=True)
class CheckedReport:
    """A report checked against its submission, with what it brings: the private scores
    (None without private folds) and the trusted per-user values of the public and the
    private folds (None where it sent none)."""

    report: ReproductionReport
    scores: Scores | None
    phase: str
    run_hash: str
    public: CheckedValues | None
    private: CheckedValues | None
    alternatives: tuple[tuple[AlternativeReport, CheckedValues | None], ...] = ()


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
    checked = check_report(db, submission_id, body)
    with db.writing() as session:
        write_report(db, session, submission_id, checked)
    return {"status": "recorded", "submission_id": submission_id,
            "verdict": checked.report.verdict}


def check_report(db: Database, submission_id: int, data: bytes | object) -> CheckedReport:
    """A report (a body, or one read from JSON already) checked against its submission.

    Raises
    ------
    SubmissionRejected
        404 when there is no such submission; 413/422 for an invalid report, per-user values
        that do not add up or pair other users, or a phase that is no longer in the
        competition file (no references to score the private folds with).
    """
    with db.reading() as session:
        found = session.execute(select(SubmissionRow.num_folds, SubmissionRow.phase,
                                       SubmissionRow.payload).where(
            SubmissionRow.id == submission_id)).one_or_none()
        uploaded = session.execute(select(UserValuesRow.users_sha256).where(
            UserValuesRow.submission_id == submission_id, UserValuesRow.source == UPLOAD)
        ).scalars().first()
    if found is None:
        raise SubmissionRejected(404, f"no submission {submission_id}")
    num_folds, phase_name, payload = found
    if isinstance(data, bytes):
        data = strict_json(data, MAX_REPORT_BYTES)
    report = check_reproduction(data, num_folds)
    scores = _private_scores(db, submission_id, phase_name, report.private_tests())
    results = json.loads(payload)[RESULTS_KEY]
    public, private = _trusted_values(report, results, uploaded)
    return CheckedReport(report, scores, phase_name, results[RUN_HASH_KEY], public, private,
                         _alternatives(db, report, results))


def _alternatives(db: Database, report: ReproductionReport, results: dict
                  ) -> tuple[tuple[AlternativeReport, CheckedValues | None], ...]:
    """Each alternative's result with its per-user values read (None for a failed one).

    Raises
    ------
    SubmissionRejected
        422 for a protocol the competition does not declare, or a blob that cannot be read
        (or holds a value outside its test's range).
    """
    kinds = {p.name: p.kind for p in db.require_competition().robustness}
    declared = list(kinds)
    out = []
    for i, alternative in enumerate(report.alternatives or ()):
        if alternative.protocol not in declared:
            raise SubmissionRejected(
                422, f"invalid reproduction report: alternatives[{i}] names protocol "
                     f"{alternative.protocol[:64]!r}, which the competition does not declare "
                     f"(its protocols: {declared}); run the worker against this competition")
        values = None
        where = f"alternatives[{i}].user_values"
        if alternative.user_values is not None and kinds[alternative.protocol] == "sampled":
            values = read_metric_blob(alternative.user_values, results, where=where)
        elif alternative.user_values is not None:
            values = replace(read_blob(alternative.user_values, results, where=where,
                                       declared=True), folds=None)
        out.append((alternative, values))
    return tuple(out)


def write_report(db: Database, session: Session, submission_id: int,
                 checked: CheckedReport) -> None:
    """Store a checked report in ``session``'s transaction: its row, the submission's verdict,
    with private folds its private scores, and its trusted per-user values; 404 when the
    submission is gone, 422 when its test users are not the phase's."""
    report = checked.report
    row = session.get(SubmissionRow, submission_id)
    if row is None:  # deleted meanwhile (a baseline whose file changed)
        raise SubmissionRejected(404, f"no submission {submission_id}")
    now = db.now()
    session.add(ReproductionRow(
        submission_id=submission_id, verdict=report.verdict, private=report.private,
        fingerprint_matches=report.fingerprint_matches,
        harness_version=report.harness_version,
        table=[r.model_dump() for r in report.table], log_tail=report.log_tail,
        private_fold_tests=report.private_tests(), recorded_at=now))
    row.reproduction = report.verdict
    if checked.scores is not None:
        _set_private_scores(row, checked.scores)
    conn = session.connection()
    for values, is_private in ((checked.public, False), (checked.private, True)):
        if values is None:
            continue
        check_same_users(conn, checked.phase, checked.run_hash, values.users_sha256,
                         private=is_private, what="the reproduction")
        session.add(_row(submission_id, checked.phase, checked.run_hash, values, is_private,
                         now))
    for alternative, read in checked.alternatives:
        session.add(RobustnessResultRow(
            submission_id=submission_id, phase=checked.phase, protocol=alternative.protocol,
            status=alternative.status, reason=alternative.reason,
            k=None if read is None else read.k, n_users=None if read is None else read.n_users,
            users_sha256=None if read is None else read.users_sha256,
            blob=None if read is None else read.blob,
            blob_sha256=None if read is None else blob_sha256(read.blob),
            cost=alternative.cost.model_dump(), recorded_at=now))


def _trusted_values(report: ReproductionReport, results: dict, uploaded: list | None
                    ) -> tuple[CheckedValues | None, CheckedValues | None]:
    """The report's per-user values of the public and the private folds (with the public
    costs), checked; None where it sent none.

    Raises
    ------
    SubmissionRejected
        422 when a blob cannot be read against the submission's folds, does not add up to the
        report's own values, or pairs other test users than the upload's.
    """
    costs = [c.model_dump() for c in report.costs] if report.costs is not None else None
    public = None
    if report.user_values is not None:
        read = read_blob(report.user_values, results, where="user_values")
        folds = read.folds or []
        tests = report.reproduced_tests()
        check_agreement(folds, [tests.get(f, {}) for f in range(len(folds))], what="reproduced")
        if uploaded is not None and list(uploaded) != read.users_sha256:
            raise SubmissionRejected(
                422, "user_values: the reproduction's test users are not the upload's (their "
                     "hashes differ); reproduce on the submission's own folds")
        public = replace(read, costs=costs, folds=None)
    elif costs is not None:
        public = CheckedValues(blob=None, k=None, n_users=None, users_sha256=None, costs=costs)
    private = None
    if report.private_user_values is not None:
        private = read_blob(report.private_user_values, results, where="private_user_values",
                            declared=True)
        check_agreement(private.folds or [], report.private_tests() or [], what="reproduced")
    return public, private


def _row(submission_id: int, phase: str, run_hash: str, values: CheckedValues, private: bool,
         now: datetime) -> UserValuesRow:
    """A reproduction's trusted ``user_values`` row."""
    fields: dict[str, Any] = dict(
        submission_id=submission_id, source=REPRODUCTION, private=private, trusted=True,
        phase=phase, run_hash=run_hash, k=values.k, n_users=values.n_users,
        users_sha256=values.users_sha256, blob=values.blob,
        blob_sha256=blob_sha256(values.blob), costs=values.costs, recorded_at=now)
    return UserValuesRow(**fields)


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
